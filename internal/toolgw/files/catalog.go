package files

import (
	"encoding/json"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/tools"
)

// catalog describes the four tools. Their annotations agree with
// tools.ActionClass: read, list and write are read-class (an agent's own
// storage, which it may change and change back; write sets no
// readOnlyHint so the platform's rule decides), delete is write-class
// (destructiveHint).
func catalog() []toolgw.Tool {
	yes, no := true, false
	return []toolgw.Tool{
		{
			Tool: tools.Tool{
				Name:  ToolWrite,
				Title: "Write a file",
				Description: "Create or replace a file in the agent's own area (scope \"agent\", the default) or the tenant's shared area " +
					"(scope \"tenant\"). Content is text, or base64 with encoding \"base64\". With if_version the write happens only " +
					"if the file is at that version (0: only if it does not exist). Returns the file's new version.",
				InputSchema:  json.RawMessage(writeInput),
				OutputSchema: json.RawMessage(writeOutput),
				Annotations:  &tools.Annotations{Destructive: &no, OpenWorld: &no},
			},
			Scopes: []string{ScopeWriteAgent},
		},
		{
			Tool: tools.Tool{
				Name:  ToolRead,
				Title: "Read a file",
				Description: "Read a file of the agent's own area or the tenant's shared area. Text and JSON files come back as text, " +
					"anything else as base64 (see encoding).",
				InputSchema:  json.RawMessage(readInput),
				OutputSchema: json.RawMessage(readOutput),
				Annotations:  &tools.Annotations{ReadOnly: &yes, Idempotent: &yes, OpenWorld: &no},
			},
			Scopes: []string{ScopeReadAgent},
		},
		{
			Tool: tools.Tool{
				Name:  ToolList,
				Title: "List files",
				Description: "List the files of an area whose path starts with prefix, in path order, a page at a time: pass " +
					"next_cursor back as cursor for the next page (\"\" when there is none).",
				InputSchema:  json.RawMessage(listInput),
				OutputSchema: json.RawMessage(listOutput),
				Annotations:  &tools.Annotations{ReadOnly: &yes, Idempotent: &yes, OpenWorld: &no},
			},
			Scopes: []string{ScopeReadAgent},
		},
		{
			Tool: tools.Tool{
				Name:         ToolDelete,
				Title:        "Delete a file",
				Description:  "Delete a file, if it is at if_version when that is given, and free its bytes in the tenant's quota.",
				InputSchema:  json.RawMessage(deleteInput),
				OutputSchema: json.RawMessage(deleteOutput),
				Annotations:  &tools.Annotations{Destructive: &yes, Idempotent: &yes, OpenWorld: &no},
			},
			Scopes: []string{ScopeWriteAgent},
		},
	}
}

// The tools' JSON Schemas (2020-12). maxLength counts characters where
// the provider counts bytes: the schema is a first check, the provider
// the exact one.
const (
	pathSchema  = `{"type": "string", "minLength": 1, "maxLength": 512, "description": "A relative path: segments of printable characters joined by \"/\", no \".\" or \"..\" segment, at most 512 bytes."}`
	scopeSchema = `{"type": "string", "enum": ["agent", "tenant"], "default": "agent", "description": "The area: the calling agent's own, or the tenant's shared one."}`

	writeInput = `{
	"type": "object",
	"properties": {
		"path": ` + pathSchema + `,
		"content": {"type": "string", "description": "The file's content: text, or base64 when encoding is \"base64\"."},
		"encoding": {"type": "string", "enum": ["text", "base64"], "default": "text"},
		"content_type": {"type": "string", "maxLength": 255, "description": "A media type; by default text/plain for text, sniffed for base64."},
		"scope": ` + scopeSchema + `,
		"if_version": {"type": "integer", "minimum": 0, "description": "Write only if the file is at this version; 0: only if it does not exist."}
	},
	"required": ["path", "content"],
	"additionalProperties": false
}`
	writeOutput = `{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"version": {"type": "integer"},
		"size": {"type": "integer"},
		"sha256": {"type": "string"}
	},
	"required": ["path", "version", "size", "sha256"]
}`

	readInput = `{
	"type": "object",
	"properties": {
		"path": ` + pathSchema + `,
		"scope": ` + scopeSchema + `
	},
	"required": ["path"],
	"additionalProperties": false
}`
	readOutput = `{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"content": {"type": "string"},
		"encoding": {"type": "string", "enum": ["text", "base64"]},
		"content_type": {"type": "string"},
		"version": {"type": "integer"},
		"size": {"type": "integer"},
		"sha256": {"type": "string"}
	},
	"required": ["path", "content", "encoding", "content_type", "version", "size", "sha256"]
}`

	listInput = `{
	"type": "object",
	"properties": {
		"prefix": {"type": "string", "maxLength": 512, "description": "List only the paths that start with this."},
		"scope": ` + scopeSchema + `,
		"cursor": {"type": "string", "maxLength": 1024, "description": "The next_cursor of the page before."},
		"limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100}
	},
	"additionalProperties": false
}`
	listOutput = `{
	"type": "object",
	"properties": {
		"files": {
			"type": "array",
			"items": {
				"type": "object",
				"properties": {
					"path": {"type": "string"},
					"size": {"type": "integer"},
					"version": {"type": "integer"},
					"content_type": {"type": "string"},
					"updated_at": {"type": "string", "format": "date-time"}
				},
				"required": ["path", "size", "version", "content_type", "updated_at"]
			}
		},
		"next_cursor": {"type": "string"}
	},
	"required": ["files", "next_cursor"]
}`

	deleteInput = `{
	"type": "object",
	"properties": {
		"path": ` + pathSchema + `,
		"scope": ` + scopeSchema + `,
		"if_version": {"type": "integer", "minimum": 1, "description": "Delete only if the file is at this version."}
	},
	"required": ["path"],
	"additionalProperties": false
}`
	deleteOutput = `{
	"type": "object",
	"properties": {"deleted": {"type": "boolean"}},
	"required": ["deleted"]
}`
)
