package tools

import (
	"strings"
	"unicode"
)

// Class is how the gateway treats a call: a read-class call runs at once;
// a write-class call is judged by the governance gate first.
type Class string

const (
	ClassRead  Class = "read"
	ClassWrite Class = "write"
)

// ActionClass classifies a call of the tool name whose annotations (nil:
// none) the tool declared. The gateway and RequiresWriteHITL use it both,
// so an agent's answer cannot drift from the gateway's:
//
//  1. annotations first: readOnlyHint true is read; destructiveHint true,
//     or readOnlyHint false, is write;
//  2. then the platform's own tools: memory, knowledge, agents, http and
//     hitl are read-class (the agent's own memory and collections are
//     platform state it may change and change back; a called agent
//     governs its own writes; http.fetch only reads), notify is
//     write-class (a message sent cannot be unsent), files is read-class
//     except files.delete;
//  3. then the verb the tool's last name segment starts with (a
//     connector's operation, an upstream's tool): get, list, search,
//     query, read, fetch and their kin are read;
//  4. anything else is write: a tool the rules cannot place may write, and
//     an ungated write is what the gate exists to stop.
//
// A tenant's policy may still move a call either way.
func ActionClass(name string, a *Annotations) Class {
	if a != nil {
		switch {
		case a.Destructive != nil && *a.Destructive:
			return ClassWrite
		case a.ReadOnly != nil && *a.ReadOnly:
			return ClassRead
		case a.ReadOnly != nil && !*a.ReadOnly:
			return ClassWrite
		}
	}
	switch Server(name) {
	case ServerMemory, ServerKnowledge, ServerAgents, ServerHTTP, ServerHITL:
		return ClassRead
	case ServerNotify:
		return ClassWrite
	case ServerFiles:
		if lastSegment(name) == "delete" {
			return ClassWrite
		}
		return ClassRead
	}
	if readVerbs[firstWord(lastSegment(name))] {
		return ClassRead
	}
	return ClassWrite
}

// RequiresWriteHITL reports whether a call of the tool name is
// write-class by the platform's rules, without annotations: whether the
// gateway is likely to hold it for a person (-32042). It makes no network
// call; a tool's own readOnlyHint, or a tenant's policy, may still let
// the call through.
func RequiresWriteHITL(name string) bool { return ActionClass(name, nil) == ClassWrite }

// readVerbs start the names of tools that only read.
var readVerbs = map[string]bool{
	"get": true, "list": true, "search": true, "query": true, "read": true, "fetch": true, "find": true,
	"lookup": true, "describe": true, "show": true, "view": true, "status": true, "check": true,
	"count": true, "open": true, "browse": true, "poll": true, "retrieve": true, "download": true,
	"preview": true, "inspect": true, "explain": true, "summarize": true, "validate": true, "resolve": true,
}

func lastSegment(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// firstWord is the lower-cased first word of a snake_case, kebab-case or
// camelCase name: "search_nodes", "search-nodes" and "searchNodes" all
// give "search".
func firstWord(s string) string {
	end := len(s)
	for i, r := range s {
		if r == '_' || r == '-' || i > 0 && unicode.IsUpper(r) {
			end = i
			break
		}
	}
	return strings.ToLower(s[:end])
}
