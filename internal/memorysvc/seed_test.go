package memorysvc

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/memory"
)

// TestSeedHintScopes: a hint needs a memory write scope the memory guide's
// tokens carry, not one of our own.
//
// seed 002, Writing memory: "Agents can write agent and run scope only.
// ... 403 when your token lacks memory:write:user / memory:write:tenant
// (the normal case — agent tokens don't carry them) ... To get a fact into
// user memory, submit a hint and let consolidation decide."
// seed 000, novaos_client_sdk.memory, Authorization model: "Memory Service
// may also enforce memory IAM scopes from the token's scopes claim
// (memory:read:* / memory:write:*)".
func TestSeedHintScopes(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		scopes []string
		want   int
	}{
		{"an agent's token (memory:write:agent, run)", seedAgentScopes, http.StatusOK},
		{"memory:write:run alone", []string{"memory:write:run"}, http.StatusOK},
		{"memory:write:agent alone", []string{"memory:write:agent"}, http.StatusOK},
		{"memory:write:*", []string{"memory:write:*"}, http.StatusOK},
		{"memory:*", []string{"memory:*"}, http.StatusOK},
		{"reads only", []string{"memory:read:*"}, http.StatusForbidden},
		{"no memory scope", []string{"mcp:tools:*"}, http.StatusForbidden},
		// memory:write:hint was a scope of our own; no seed token has it,
		// and alone it grants nothing now.
		{"memory:write:hint alone", []string{"memory:write:hint"}, http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := agentCaller("t1", "a1", tt.scopes...)
			h, err := s.Hint(ctx, c, &memory.HintRequest{Hint: "User prefers dark mode.", ConversationID: "conv-1"})
			if got := statusOK(err); got != tt.want {
				t.Fatalf("hint: status %d (%v), want %d", got, err, tt.want)
			}
			if tt.want != http.StatusOK {
				return
			}
			if h.Status != memory.HintAccepted {
				t.Fatalf("hint status %q, want accepted", h.Status)
			}
			// The agent that submitted it reads its status with the same
			// token.
			if _, err := s.HintStatus(ctx, c, h.HintID); err != nil {
				t.Fatalf("hint_status: %v", err)
			}
		})
	}
}

// statusOK is 200 for no error, else the Error's status.
func statusOK(err error) int {
	if err == nil {
		return http.StatusOK
	}
	return status(err)
}

// TestSeedUpdateAndForgetStatuses: the statuses of update and forget as
// the memory guide's client maps them. An agent learns that an id is
// another agent's memory only where update says so (403); a forget of it,
// and any call naming another tenant's memory, is 404 as if it did not
// exist.
//
// seed 000, novaos_client_sdk.memory MemoryClient.update, Raises:
// "NovaOSServerError HTTP 409 on a stale version; 404 if the memory is not
// found; 403 if it belongs to another agent; 422 for a scope that cannot be
// updated or content rejected by the PII/secret screen."
// seed 000, MemoryClient.forget, Raises: "NovaOSServerError If the memory
// is not found (HTTP 404)."
func TestSeedUpdateAndForgetStatuses(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	owner := agentCaller("t1", "a1", seedAgentScopes...)
	w, err := s.Write(ctx, owner, &memory.WriteRequest{Scope: memory.ScopeAgent, Content: "Deploy on Tuesdays."})
	if err != nil {
		t.Fatal(err)
	}
	s.judgeProposals(ctx)
	st, err := s.ProposalStatus(ctx, owner, w.MemoryID)
	if err != nil || st.MemoryID == nil {
		t.Fatalf("proposal = %+v, %v", st, err)
	}
	id := *st.MemoryID
	run, err := s.Write(ctx, owner, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "scratch"})
	if err != nil {
		t.Fatal(err)
	}
	otherAgent := agentCaller("t1", "a2", seedAgentScopes...)
	otherTenant := agentCaller("t2", "a1", seedAgentScopes...)
	const missing = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

	for _, tt := range []struct {
		name   string
		caller *Caller
		req    memory.UpdateRequest
		want   int
		code   string
	}{
		{"another agent's memory", otherAgent, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("x")}, http.StatusForbidden, memory.CodeNotOwner},
		{"another tenant's memory", otherTenant, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("x")}, http.StatusNotFound, memory.CodeNotFound},
		{"no such memory", owner, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: missing, Version: 1, Content: ptr("x")}, http.StatusNotFound, memory.CodeNotFound},
		{"a run memory named as agent", owner, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: run.MemoryID, Version: 1, Content: ptr("x")}, http.StatusNotFound, memory.CodeNotFound},
		{"user scope", owner, memory.UpdateRequest{Scope: memory.ScopeUser, MemoryID: id, Version: 1, Content: ptr("x")}, http.StatusUnprocessableEntity, memory.CodePolicy},
		{"tenant scope", owner, memory.UpdateRequest{Scope: memory.ScopeTenant, MemoryID: id, Version: 1, Content: ptr("x")}, http.StatusUnprocessableEntity, memory.CodePolicy},
		{"run scope", owner, memory.UpdateRequest{Scope: memory.ScopeRun, MemoryID: run.MemoryID, Version: 1, Content: ptr("x")}, http.StatusUnprocessableEntity, memory.CodePolicy},
		{"screened content", owner, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("mail jane.doe@example.com")}, http.StatusUnprocessableEntity, memory.CodeScreened},
		{"own memory", owner, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("Deploy on Wednesdays.")}, http.StatusOK, ""},
		{"stale version", owner, memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: id, Version: 1, Content: ptr("Deploy on Thursdays.")}, http.StatusConflict, memory.CodeConflict},
	} {
		t.Run("update/"+tt.name, func(t *testing.T) {
			_, err := s.Update(ctx, tt.caller, &tt.req)
			if got := statusOK(err); got != tt.want {
				t.Fatalf("status %d (%v), want %d", got, err, tt.want)
			}
			if tt.code != "" && memory.ErrorFor(err).Code != tt.code {
				t.Fatalf("code %q, want %q", memory.ErrorFor(err).Code, tt.code)
			}
		})
	}
	for _, tt := range []struct {
		name   string
		caller *Caller
		req    memory.ForgetRequest
		want   int
	}{
		{"another agent's memory", otherAgent, memory.ForgetRequest{Scope: memory.ScopeAgent, MemoryID: id, Reason: "agent-requested"}, http.StatusNotFound},
		{"another tenant's memory", otherTenant, memory.ForgetRequest{Scope: memory.ScopeAgent, MemoryID: id, Reason: "agent-requested"}, http.StatusNotFound},
		{"no such memory", owner, memory.ForgetRequest{Scope: memory.ScopeRun, MemoryID: missing, Reason: "agent-requested"}, http.StatusNotFound},
		{"own memory", owner, memory.ForgetRequest{Scope: memory.ScopeAgent, MemoryID: id, Reason: "agent-requested"}, http.StatusOK},
		{"forgotten already", owner, memory.ForgetRequest{Scope: memory.ScopeAgent, MemoryID: id, Reason: "agent-requested"}, http.StatusNotFound},
	} {
		t.Run("forget/"+tt.name, func(t *testing.T) {
			if _, err := s.Forget(ctx, tt.caller, &tt.req); statusOK(err) != tt.want {
				t.Fatalf("status %d (%v), want %d", statusOK(err), err, tt.want)
			}
		})
	}
}

// TestDoorShape: one path, two shapes, told apart by the body alone.
//
// seed 000, novaos_client_sdk.memory MemoryClient: "Communicates with the
// Memory Service's /mcp dispatch endpoint using the MCP tool protocol (tool
// name + payload + context)"; DESIGN's HTTP surface serves MCP JSON-RPC at
// the same POST /api/v1/mcp.
func TestDoorShape(t *testing.T) {
	for _, tt := range []struct {
		body string
		door bool
	}{
		{`{"tool":"memory.query","payload":{}}`, true},
		{` {"payload":{},"tool":"memory.query","context":{"request_id":"r"}} `, true},
		{`{}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},
		{`{"id":1,"jsonrpc":"2.0","method":"tools/list"}`, false},
		// a nested jsonrpc is a payload's business, not the shape's
		{`{"tool":"memory.write","payload":{"content":"jsonrpc","custom":{"jsonrpc":"2.0"}}}`, true},
		{`[{"jsonrpc":"2.0"}]`, false},
		{`{"tool":"memory.query"`, false},
		{`{"tool":"memory.query"} {}`, false},
		{`null`, false},
		{`"tool"`, false},
		{``, false},
		// JSON whitespace of each kind, around and inside the object
		{"\t\r\n {\"tool\":\"memory.query\"}\n\t\r ", true},
		{"{\n\t\"jsonrpc\"\r: \"2.0\"}", false},
		// escapes: a quote inside a string does not end it, an escaped
		// member name is still jsonrpc
		{`{"tool":"say \"jsonrpc\"","payload":{"q":"\\"}}`, true},
		{`{"id":1,"json\u0072pc":"2.0"}`, false},
		// a string or object the body ends inside
		{`{"tool":"memory.query`, false},
		{`{"tool":"a\`, false},
		{`{"tool":"memory.query","payload":{`, false},
	} {
		if got := isDoor([]byte(tt.body)); got != tt.door {
			t.Errorf("isDoor(%s) = %v, want %v", tt.body, got, tt.door)
		}
	}
}

// TestDoorSameOperation: the direct door runs the operation the MCP tool
// runs: the same arguments give the same result, and each call counts
// once in the operation's telemetry.
func TestDoorSameOperation(t *testing.T) {
	s, _ := newService(t, nil)
	srv, c := serveMCP(t, s)
	ctx := context.Background()
	if _, err := s.Write(ctx, c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "Customer chose the annual plan."}); err != nil {
		t.Fatal(err)
	}
	args := `{"scope":"run","query":"plan","top_k":3}`
	door := post(t, srv.URL, `{"tool":"memory.query","payload":`+args+`}`)
	if door.status != http.StatusOK || door.contentType != "application/json" {
		t.Fatalf("door: %d %s %s", door.status, door.contentType, door.body)
	}
	rpc := post(t, srv.URL, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.query","arguments":`+args+`}}`)
	var env struct {
		Result struct {
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rpc.body, &env); err != nil || rpc.status != http.StatusOK {
		t.Fatalf("mcp: %d %s", rpc.status, rpc.body)
	}
	// retrieval_id differs per call; everything else is the same result.
	strip := func(b []byte) string {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		delete(m, "retrieval_id")
		out, _ := json.Marshal(m)
		return string(out)
	}
	if d, m := strip(door.body), strip(env.Result.StructuredContent); d != m {
		t.Fatalf("door result %s\nMCP result  %s", d, m)
	}
}

// TestDoorLimits: the door keeps the endpoint's body limit and its
// token requirement; a body over the limit is 413 in the shape it began
// in.
func TestDoorLimits(t *testing.T) {
	s, _ := newService(t, nil)
	srv, _ := serveMCP(t, s) // 64 KiB limit
	big := strings.Repeat("x", 70<<10)
	for _, tt := range []struct {
		name, body, token string
		status            int
		contentType       string
	}{
		{"door body over the limit", `{"tool":"memory.write","payload":{"scope":"run","content":"` + big + `"}}`, "good", http.StatusRequestEntityTooLarge, "application/problem+json"},
		{"MCP body over the limit", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.write","arguments":{"content":"` + big + `"}}}`, "good", http.StatusRequestEntityTooLarge, "application/json"},
		{"no token", `{"tool":"memory.query","payload":{"scope":"run","query":"x"}}`, "", http.StatusUnauthorized, "application/problem+json"},
		{"a bad token", `{"tool":"memory.query","payload":{"scope":"run","query":"x"}}`, "bad", http.StatusUnauthorized, "application/problem+json"},
		{"content over 32 KiB", `{"tool":"memory.write","payload":{"scope":"run","content":"` + big[:33<<10] + `"}}`, "good", http.StatusUnprocessableEntity, "application/problem+json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := postAs(t, srv.URL, tt.token, tt.body)
			if got.status != tt.status || got.contentType != tt.contentType {
				t.Fatalf("%d %s, want %d %s: %s", got.status, got.contentType, tt.status, tt.contentType, got.body)
			}
			if bytes.Contains(got.body, []byte("xxxx")) {
				t.Fatal("the answer quotes the request's content")
			}
		})
	}
}

type answer struct {
	status      int
	contentType string
	body        []byte
}

func post(t *testing.T, url, body string) answer { return postAs(t, url, "good", body) }

func postAs(t *testing.T, url, token, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header.Get("Content-Type"), b.Bytes()}
}

// BenchmarkDoorShape measures what telling the doors apart adds to a
// request: an MCP body stops at its jsonrpc member; a door body of a
// 32 KiB memory is read through once.
func BenchmarkDoorShape(b *testing.B) {
	content := strings.Repeat("x", 32<<10)
	for _, bm := range []struct{ name, body string }{
		{"mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"novaos.memory.write","arguments":{"scope":"run","content":"` + content + `"}}}`},
		{"mcp-id-first", `{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"name":"novaos.memory.write","arguments":{"scope":"run","content":"` + content + `"}}}`},
		{"door", `{"tool":"memory.write","payload":{"scope":"run","content":"` + content + `"}}`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			data := []byte(bm.body)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				isDoor(data)
			}
		})
	}
}
