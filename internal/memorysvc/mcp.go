package memorysvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/strictjson"
)

// Path is where the service is mounted: the memory guide's MemoryClient posts
// its calls to POST /api/v1/mcp.
const Path = "/api/v1/mcp"

// Tool names. The six of the NovaOS memory guide, and the two status polls.
const (
	ToolWrite          = "novaos.memory.write"
	ToolQuery          = "novaos.memory.query"
	ToolUpdate         = "novaos.memory.update"
	ToolForget         = "novaos.memory.forget"
	ToolHint           = "novaos.memory.hint"
	ToolAssemble       = "novaos.memory.assemble"
	ToolHintStatus     = "novaos.memory.hint_status"
	ToolProposalStatus = "novaos.memory.proposal_status"
)

// DefaultMaxBodyBytes bounds one MCP request: a 32 KiB memory with its
// metadata, JSON-escaped, fits many times over.
const DefaultMaxBodyBytes = 1 << 20

// HintStatusRequest and ProposalStatusRequest are the arguments of the
// status polls.
type HintStatusRequest struct {
	HintID string `json:"hint_id"`
}

// ProposalStatusRequest is the argument of novaos.memory.proposal_status.
type ProposalStatusRequest struct {
	ProposalID string `json:"proposal_id"`
}

// HandlerOptions configure Handler; nil means defaults.
type HandlerOptions struct {
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes);
	// a larger one gets 413.
	MaxBodyBytes int64
	// Version is reported to MCP clients as the server's version.
	Version string
}

// Handler serves the service as an MCP server over Streamable HTTP at
// Path: stateless (no session to keep, so any replica answers any call)
// and answering with plain JSON. caller gives the identity of a request,
// which the platform's token middleware has verified in front of it; a
// request without one is refused with 401.
//
// Before the MCP SDK sees a body it is bounded and checked in one pass: a
// repeated key anywhere is refused (-32600), since encoding/json would
// read the last one and another reader the first, and so is a JSON-RPC
// batch (-32600, whatever protocol revision the request names): one POST
// is one call. The same pass checks a tool call's arguments against the
// tool's exact field names (a case variant is an unknown field), so the
// tool decodes them without reading them again; every tool error is an
// isError result whose text is {"error": memory.Error}: the memory guide's
// HTTP status, a stable code and the field and rule broken.
//
// A body that is a JSON object without a top-level "jsonrpc" member is the
// direct door's request instead (see the package doc), answered by the
// same operations with HTTP statuses and problem+json.
func (s *Service) Handler(caller func(*http.Request) (*Caller, bool), o *HandlerOptions) http.Handler {
	if o == nil {
		o = &HandlerOptions{}
	}
	limit := o.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	srv, t := s.mcpServer(o.Version)
	// One pass over the body refuses a repeated key anywhere and checks a
	// tool call's arguments against the tool's exact field names, so the
	// tool need not read them again.
	body := &strictjson.Options{Fields: &strictjson.Fields{Open: true, Names: map[string]*strictjson.Fields{
		"params": {Open: true, Union: &strictjson.Union{Tag: "name", Body: "arguments", Variants: t.fields}},
	}}}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	// The SDK carries a verified identity to tool handlers as its
	// TokenInfo; the token was checked in front, so this only hands the
	// Caller over, and says whether the arguments were checked.
	withCaller := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		c, ok := caller(r)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		extra := map[string]any{callerKey: c}
		if checked, _ := r.Context().Value(argsCheckedKey{}).(bool); checked {
			extra[argsCheckedExtra] = true
		}
		return &auth.TokenInfo{UserID: c.Tenant + "/" + c.Agent, Extra: extra}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(sdk)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeRPCError(w, http.StatusMethodNotAllowed, -32600, "the memory service takes POST only")
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				if doorShaped(data) {
					writeDoorError(w, r, &memory.Error{Status: http.StatusRequestEntityTooLarge, Code: memory.CodeInvalid,
						Message: fmt.Sprintf("request body over %d bytes", limit)})
					return
				}
				writeRPCError(w, http.StatusRequestEntityTooLarge, -32600, fmt.Sprintf("request body over %d bytes", limit))
				return
			}
			writeRPCError(w, http.StatusBadRequest, -32700, "request body could not be read")
			return
		}
		if isDoor(data) {
			serveDoor(w, r, data, caller, t)
			return
		}
		err = strictjson.Check(data, body)
		checked := err == nil
		if se, ok := errors.AsType[*strictjson.Error](err); ok && se.Problem == strictjson.Unknown {
			// A field the tool does not have is the tool's to refuse,
			// with its own error; the rest of the body must still hold
			// no repeated key.
			err = strictjson.Check(data, nil)
		}
		if err != nil {
			code, msg := -32700, err.Error()
			if se, ok := errors.AsType[*strictjson.Error](err); ok && se.Problem == strictjson.Duplicate {
				code, msg = -32600, fmt.Sprintf("duplicate key %s at %s", strconv.Quote(se.Key), se.Path)
			}
			writeRPCError(w, http.StatusBadRequest, code, msg)
			return
		}
		if isBatch(data) {
			writeRPCError(w, http.StatusBadRequest, -32600,
				"JSON-RPC batches are not supported: send one request per POST")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
		if checked {
			r = r.WithContext(context.WithValue(r.Context(), argsCheckedKey{}, true))
		}
		// A client that asks for anything (or says nothing) gets JSON; the
		// SDK insists the Accept header names both of its media types.
		if acc := r.Header.Get("Accept"); acc == "" || acc == "*/*" {
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
		withCaller.ServeHTTP(w, r)
	})
}

// isBatch reports whether body is a JSON-RPC batch (a JSON array). MCP
// dropped batches in revision 2025-06-18, and the SDK still runs them for a
// request that names an older revision or none, so one POST could carry
// thousands of calls past every limit that counts requests (body size,
// in-flight bytes, connections, latency budgets). No MCP client this
// service knows sends batches; every revision is refused them.
func isBatch(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && b[0] == '['
}

const callerKey = "novaos.caller"

// argsCheckedKey marks a request whose tool arguments Handler checked
// against the tool's field names; argsCheckedExtra carries the mark to
// the tool in its TokenInfo.
type argsCheckedKey struct{}

const argsCheckedExtra = "novaos.args_checked"

func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}

// MCPServer returns the MCP server with the memory tools, for serving
// over another transport; Handler serves it over HTTP.
func (s *Service) MCPServer(version string) *mcp.Server {
	srv, _ := s.mcpServer(version)
	return srv
}

// toolSet is what the tools of one server share.
type toolSet struct {
	// tools are the server's tools in the order they were added, and
	// calls their handlers by name, for callers that reach the tools in
	// process (Tools, CallTool).
	tools []*mcp.Tool
	calls map[string]func(context.Context, *Caller, json.RawMessage) *mcp.CallToolResult
	// ops are the same operations by their direct-door names
	// (memory.write, …), answering a result or an Error.
	ops map[string]func(context.Context, *Caller, json.RawMessage) (json.RawMessage, *memory.Error)
	// fields are the member names each tool's arguments may have.
	fields map[string]*strictjson.Fields
	// checks counts the tools' own passes over their arguments.
	checks *atomic.Int64
	tel    *telemetry
}

// mcpServer is MCPServer, with its tools' field names.
func (s *Service) mcpServer(version string) (*mcp.Server, *toolSet) {
	if version == "" {
		version = "dev"
	}
	set := &toolSet{fields: make(map[string]*strictjson.Fields), checks: &s.argChecks, tel: s.tel,
		calls: map[string]func(context.Context, *Caller, json.RawMessage) *mcp.CallToolResult{},
		ops:   map[string]func(context.Context, *Caller, json.RawMessage) (json.RawMessage, *memory.Error){}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "novaos-memory", Title: "NovaOS memory", Version: version}, &mcp.ServerOptions{
		Instructions: "Tenant-isolated agent memory, as the NovaOS memory guide describes it. Identity comes from the bearer token; no argument names a tenant, agent or user.",
	})
	addTool(srv, set, ToolWrite, "Write a memory",
		"Store a memory. run and task scope: stored at once, read-your-write, TTL 5 minutes unless ttl_seconds says otherwise. agent scope: answered with a prop_ proposal (durable false) that the write gate screens for personal data and credentials and then commits under a new id or rejects. user scope is written by consolidation only (submit a hint); tenant scope by administrators only.",
		false, s.Write)
	addTool(srv, set, ToolQuery, "Query memories",
		"Search one scope. agent, user and tenant memories are ranked by keyword and vector retrieval with a 0..1 score; run and task memories are returned newest first with a null score. partial is true only when a store failed.",
		true, s.Query)
	addTool(srv, set, ToolUpdate, "Update a memory",
		"Change an agent-scope memory in place, if version is still its version (409 otherwise). Another agent's memory is 403, no such memory 404, another scope 422. New content is screened like a write (422 on a hit). tags, confidence and custom replace the stored values.",
		false, s.Update)
	addTool(srv, set, ToolForget, "Forget a memory",
		"Delete one memory by id, with a reason of 1 to 500 characters kept in the audit trail; no such memory is 404. A prop_ id is refused.",
		false, s.Forget)
	addTool(srv, set, ToolHint, "Submit a consolidation hint",
		"Enqueue an observation about the user for consolidation into user memory. accepted means durably enqueued, not that a fact will result.",
		false, s.Hint)
	addTool(srv, set, ToolAssemble, "Assemble context",
		"Gather the user's and the agent's memories ranked against query, the live conversation and the run's data, under one latency budget; a source that misses it is dropped and partial is true.",
		true, s.Assemble)
	addTool(srv, set, ToolHintStatus, "Hint status",
		"The outcome of a hint this agent submitted: pending, consolidated, dead_lettered or expired (kept 24 hours).",
		true, func(ctx context.Context, c *Caller, r *HintStatusRequest) (memory.HintStatus, error) {
			return s.HintStatus(ctx, c, r.HintID)
		})
	addTool(srv, set, ToolProposalStatus, "Proposal status",
		"The write gate's decision on an agent-scope proposal: pending, committed (with the memory id) or rejected (with the reason).",
		true, func(ctx context.Context, c *Caller, r *ProposalStatusRequest) (memory.ProposalStatus, error) {
			return s.ProposalStatus(ctx, c, r.ProposalID)
		})
	return srv, set
}

// schemaOpts says how the wire types look in JSON where reflection cannot
// tell: times are RFC 3339 strings, and the one raw JSON field, an
// assemble's run_data, is an object or null.
var schemaOpts = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
	reflect.TypeFor[json.RawMessage](): {Types: []string{"null", "object"}},
}}

// objectSchemas rewrites s so that every schema in it is a JSON object:
// MCP requires a tool's property schemas to be objects, and strict clients
// (the TypeScript SDK's listTools) refuse the boolean schema true, which
// the schema package writes for a schema that allows anything. An open
// additionalProperties is dropped (absent means the same), and a property
// or item that allows anything gets a description instead. The boolean
// false that closes an object stays: it is not a property schema.
func objectSchemas(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if allowsAnything(s.AdditionalProperties) {
		s.AdditionalProperties = nil
	}
	for k, p := range s.Properties {
		if allowsAnything(p) {
			s.Properties[k] = &jsonschema.Schema{Description: "any JSON value"}
			continue
		}
		objectSchemas(p)
	}
	if allowsAnything(s.Items) {
		s.Items = nil
	}
	objectSchemas(s.Items)
	objectSchemas(s.AdditionalProperties)
	for _, list := range [][]*jsonschema.Schema{s.AnyOf, s.OneOf, s.AllOf, s.PrefixItems} {
		for i, sub := range list {
			if allowsAnything(sub) {
				list[i] = &jsonschema.Schema{Description: "any JSON value"}
				continue
			}
			objectSchemas(sub)
		}
	}
}

// allowsAnything reports whether s is the empty schema, written as true.
func allowsAnything(s *jsonschema.Schema) bool {
	return s != nil && reflect.ValueOf(*s).IsZero()
}

// addTool registers fn as a tool whose arguments are In and whose
// structured result is Out, and the field names In's JSON may have in
// set.fields.
func addTool[In, Out any](srv *mcp.Server, set *toolSet, name, title, desc string, readOnly bool, fn func(context.Context, *Caller, *In) (Out, error)) {
	in, err := jsonschema.For[In](schemaOpts)
	if err != nil {
		panic(fmt.Sprintf("memory: schema of %s: %v", name, err))
	}
	out, err := jsonschema.For[Out](schemaOpts)
	if err != nil {
		panic(fmt.Sprintf("memory: schema of %s's result: %v", name, err))
	}
	objectSchemas(in)
	objectSchemas(out)
	fields, checks := fieldsOf(in), set.checks
	set.fields[name] = fields
	tool := &mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: in, OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}}
	op := opOf(name)
	run := func(ctx context.Context, c *Caller, args json.RawMessage, checked bool) (json.RawMessage, *memory.Error) {
		if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		var v In
		var bad *memory.Error
		if checked {
			bad = decodeChecked(args, &v)
		} else {
			checks.Add(1)
			bad = decodeWith(args, fields, &v)
		}
		if bad != nil {
			return nil, bad
		}
		res, err := fn(ctx, c, &v)
		if err != nil {
			return nil, memory.ErrorFor(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, memory.ErrorFor(err)
		}
		return b, nil
	}
	// Every operation, over MCP, the direct door or in process, is traced
	// and counted.
	do := func(ctx context.Context, c *Caller, args json.RawMessage, checked bool) (json.RawMessage, *memory.Error) {
		ctx, span, start := set.tel.start(ctx, op, c)
		res, e := run(ctx, c, args, checked)
		set.tel.end(span, op, start, e)
		return res, e
	}
	call := func(ctx context.Context, c *Caller, args json.RawMessage, checked bool) *mcp.CallToolResult {
		res, e := do(ctx, c, args, checked)
		if e != nil {
			return toolError(e)
		}
		return &mcp.CallToolResult{StructuredContent: res, Content: []mcp.Content{&mcp.TextContent{Text: string(res)}}}
	}
	set.ops[doorPrefix+op] = func(ctx context.Context, c *Caller, args json.RawMessage) (json.RawMessage, *memory.Error) {
		return do(ctx, c, args, false)
	}
	set.tools = append(set.tools, tool)
	set.calls[name] = func(ctx context.Context, c *Caller, args json.RawMessage) *mcp.CallToolResult {
		return call(ctx, c, args, false)
	}
	srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := callerOf(req)
		if c == nil {
			return toolError(&memory.Error{Status: http.StatusUnauthorized, Code: memory.CodeUnauthorized, Message: "a verified bearer token is required"}), nil
		}
		return call(ctx, c, req.Params.Arguments, argsChecked(req)), nil
	})
}

// Tools returns the memory tools as an MCP server lists them, for a door
// that serves them in process (the tool gateway).
func (s *Service) Tools() []*mcp.Tool {
	return s.direct().tools
}

// CallTool runs the memory tool name for c, as the MCP server would;
// false when there is no such tool. The arguments are checked as a call
// to the server checks them, and every failure is an isError result.
func (s *Service) CallTool(ctx context.Context, c *Caller, name string, args json.RawMessage) (*mcp.CallToolResult, bool) {
	call, ok := s.direct().calls[name]
	if !ok {
		return nil, false
	}
	return call(ctx, c, args), true
}

// direct is the tool set Tools and CallTool use, built once.
func (s *Service) direct() *toolSet {
	s.directOnce.Do(func() { _, s.directSet = s.mcpServer("") })
	return s.directSet
}

// argsChecked reports whether Handler checked req's arguments against
// the tool's field names already.
func argsChecked(req *mcp.CallToolRequest) bool {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return false
	}
	checked, _ := req.Extra.TokenInfo.Extra[argsCheckedExtra].(bool)
	return checked
}

func callerOf(req *mcp.CallToolRequest) *Caller {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil
	}
	c, _ := req.Extra.TokenInfo.Extra[callerKey].(*Caller)
	return c
}

// toolError is the isError result of e: its text is {"error": e}, which
// the Go client and any MCP client can read.
func toolError(e *memory.Error) *mcp.CallToolResult {
	b, _ := json.Marshal(map[string]*memory.Error{"error": e})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// decodeArgs decodes a tool's arguments into v, refusing keys the schema
// does not name exactly (encoding/json alone would take "Scope" for
// "scope") and values of the wrong JSON type, naming the field, never
// its value.
func decodeArgs(args json.RawMessage, schema *jsonschema.Schema, v any) *memory.Error {
	return decodeWith(args, fieldsOf(schema), v)
}

// decodeWith is decodeArgs with the schema's field names already drawn
// out of it.
func decodeWith(args json.RawMessage, fields *strictjson.Fields, v any) *memory.Error {
	err := strictjson.Check(args, &strictjson.Options{Object: true, Fields: fields})
	if se, ok := errors.AsType[*strictjson.Error](err); ok && se.Problem == strictjson.Unknown {
		return invalidArg(fieldPath(se.Path), "is not a field of this tool (names are case-sensitive)")
	}
	if err != nil {
		return invalidArg("arguments", "must be a JSON object")
	}
	return decodeChecked(args, v)
}

// decodeChecked decodes arguments whose names were checked already.
func decodeChecked(args json.RawMessage, v any) *memory.Error {
	if err := json.Unmarshal(args, v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			field := te.Field
			if field == "" {
				field = "arguments"
			}
			return invalidArg(field, "must be a JSON "+jsonKind(te.Type))
		}
		return invalidArg("arguments", "could not be read")
	}
	return nil
}

// fieldPath is a strictjson path as a field name: $.metadata.tags[0]
// becomes metadata.tags[0].
func fieldPath(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, "$"), ".")
}

func invalidArg(field, rule string) *memory.Error {
	return &memory.Error{Status: http.StatusUnprocessableEntity, Code: memory.CodeInvalid, Field: field, Rule: rule, Message: field + ": " + rule}
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if t == reflect.TypeFor[time.Time]() {
			return "RFC 3339 time string"
		}
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "object"
}

// fieldsOf draws from a tool's schema the member names its arguments
// may have: an object schema's properties, and others only where its
// additionalProperties admits them.
func fieldsOf(s *jsonschema.Schema) *strictjson.Fields {
	if s == nil {
		return nil
	}
	f := &strictjson.Fields{Items: fieldsOf(s.Items), Open: !closed(s.AdditionalProperties)}
	if f.Open {
		f.Other = fieldsOf(s.AdditionalProperties)
	}
	if len(s.Properties) > 0 {
		f.Names = make(map[string]*strictjson.Fields, len(s.Properties))
		for k, p := range s.Properties {
			f.Names[k] = fieldsOf(p)
		}
	}
	if f.Open && f.Other == nil && f.Names == nil && f.Items == nil {
		return nil // admits anything
	}
	return f
}

// closed reports whether an additionalProperties schema admits nothing.
func closed(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}
