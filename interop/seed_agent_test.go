package interop

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/memorysvc"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// seedAgent is a running js/seed_agent.mjs: an agent shaped like one
// built on the NovaOS Python SDK, on @a2a-js/sdk, with no NovaOS code.
type seedAgent struct {
	URL        string
	deliveries chan seedDelivery
	calls      chan seedCall
	stderr     *lockedBuffer
}

// seedDelivery is what the agent was sent, as it reports it: the
// platform context without its tokens.
type seedDelivery struct {
	MessageID       string         `json:"message_id"`
	TaskID          string         `json:"task_id"`
	Text            string         `json:"text"`
	Resumed         bool           `json:"resumed"`
	TaskState       *string        `json:"task_state"`
	RunID           string         `json:"run_id"`
	TenantID        string         `json:"tenant_id"`
	MCPGatewayURL   string         `json:"mcp_gateway_url"`
	HasToken        bool           `json:"has_mcp_gateway_token"`
	WriteHITLActive *bool          `json:"mcp_write_hitl_active"`
	Config          map[string]any `json:"config"`
	PlatformData    map[string]any `json:"platform_data"`
}

// seedCall is a tool call as the agent's bindings answered it: a
// ToolResponse, or the -32042 hold's data.
type seedCall struct {
	Tool    string                       `json:"tool"`
	Success bool                         `json:"success"`
	Data    json.RawMessage              `json:"data"`
	Error   *string                      `json:"error"`
	Held    *tools.WriteConfirmationData `json:"held"`
}

// startSeedAgent starts js/seed_agent.mjs and waits until it listens; it
// is stopped when the test ends.
func startSeedAgent(t *testing.T) *seedAgent {
	t.Helper()
	node, dir := jsPeer(t)
	a := &seedAgent{deliveries: make(chan seedDelivery, 16), calls: make(chan seedCall, 64), stderr: &lockedBuffer{}}
	cmd := exec.Command(node, "seed_agent.mjs")
	cmd.Dir = dir
	cmd.Stderr = a.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start node seed_agent.mjs: %v", err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	ready := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var line struct {
				URL      string
				Delivery *seedDelivery
				Call     *seedCall
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch {
			case line.URL != "":
				ready <- line.URL
			case line.Delivery != nil:
				a.deliveries <- *line.Delivery
			case line.Call != nil:
				a.calls <- *line.Call
			}
		}
		close(ready)
		io.Copy(io.Discard, stdout)
		cmd.Wait()
	}()
	select {
	case url, ok := <-ready:
		if !ok {
			t.Fatalf("seed_agent.mjs exited before listening; stderr:\n%s", a.stderr)
		}
		a.URL = url
	case <-time.After(gwTimeout):
		t.Fatalf("seed_agent.mjs did not listen within %v; stderr:\n%s", gwTimeout, a.stderr)
	}
	return a
}

// delivery waits for the agent's next delivery.
func (a *seedAgent) delivery(t *testing.T, what string) seedDelivery {
	t.Helper()
	select {
	case d := <-a.deliveries:
		return d
	case <-time.After(gwTimeout):
		t.Fatalf("no %s reached the agent in %v; stderr:\n%s", what, gwTimeout, a.stderr)
	}
	return seedDelivery{}
}

// call waits for the agent's report of its next tool call, which must be
// of tool.
func (a *seedAgent) call(t *testing.T, tool string) seedCall {
	t.Helper()
	select {
	case c := <-a.calls:
		if c.Tool != tool {
			t.Fatalf("the agent called %s (%+v), want %s", c.Tool, c, tool)
		}
		return c
	case <-time.After(gwTimeout):
		t.Fatalf("the agent reported no call of %s in %v; stderr:\n%s", tool, gwTimeout, a.stderr)
	}
	return seedCall{}
}

// ordersServer is an MCP server on the official Go SDK, served over
// Streamable HTTP from this process: one read-only tool, lookup, which
// answers an order's status and counts its calls.
func ordersServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "orders", Version: "1.0.0"}, nil)
	type lookupIn struct {
		OrderID string `json:"order_id" jsonschema:"the order's id"`
	}
	type lookupOut struct {
		OrderID string `json:"order_id"`
		Status  string `json:"status"`
		Amount  int    `json:"amount"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "An order's status and amount.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, lookupOut, error) {
			calls.Add(1)
			return nil, lookupOut{OrderID: in.OrderID, Status: "refundable", Amount: 240}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL, &calls
}

// TestSeedShapedAgent: an agent built the way the NovaOS Python SDK builds
// one (js/seed_agent.mjs: @a2a-js/sdk and plain fetch, no NovaOS code),
// installed by URL and run through the execution gateway, calls a built-in
// tool, an upstream tool of a Go go-sdk MCP server the tenant registered,
// and a write-class tool through /mcp/v1/tools/call with the platform
// context's gateway URL and token. The gateway holds the write (-32042),
// the agent pauses its task as the SDK's
// create_write_confirmation_required_message does, a person approves the
// held action at the gate, the run resumes and the write runs exactly once.
func TestSeedShapedAgent(t *testing.T) {
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	srv := startApp(t, &app.Options{BuiltinTools: app.BuiltinToolsOptions{
		Notify:   builtin.NotifyOptions{Policy: &netguard.Policy{AllowLoopback: true}, AllowHTTP: true},
		Upstream: upstream.Options{AllowPrivate: true}}})
	ctx := t.Context()
	orders, lookups := ordersServer(t)
	const upstreamTool = tools.Prefix + "orders.lookup"

	// The tenant's admin registers the Go server as "orders".
	adminTok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: gwTenant, UserID: "admin", AgentID: "console",
		Scopes: []string{tools.ScopeAdmin}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(tools.ServerRequest{Transport: tools.TransportHTTP, URL: orders + "/"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL()+tools.ServersPath+"/orders", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register the orders server: %d %s", resp.StatusCode, answer)
	}

	agent := startSeedAgent(t)
	c, _ := gwUserClient(t, srv)
	inst, err := c.Install(ctx, gateway.InstallRequest{Name: "seed-agent", URL: agent.URL,
		Config: map[string]any{"hook": hook.URL + "/refunds", "upstream_tool": upstreamTool},
		Scopes: []string{"mcp:tools:*", "memory:write:run", "memory:read:*"}})
	if err != nil {
		t.Fatalf("install %s: %v", agent.URL, err)
	}
	runID := gwExecute(t, c, inst, "cust-4821")

	// The first turn: three calls, the third held.
	first := gwEvents(t, c, runID, "", func(ev gateway.StreamEvent) bool {
		return ev.Status == gateway.StatusWaitingUser || ev.IsTerminal()
	})
	if last := first[len(first)-1]; last.Status != gateway.StatusWaitingUser {
		t.Fatalf("the run did not pause for the write:%s\nagent stderr:\n%s", gwKinds(first), agent.stderr)
	}
	d1 := agent.delivery(t, "first delivery")
	if d1.Resumed || d1.RunID != runID || d1.TenantID != gwTenant || d1.MCPGatewayURL != srv.URL()+tools.Path || !d1.HasToken ||
		d1.WriteHITLActive == nil || !*d1.WriteHITLActive || d1.Config["upstream_tool"] != upstreamTool {
		t.Errorf("first delivery %+v: want the run's platform context with the gateway's URL and a token, write HITL active", d1)
	}
	var mem struct {
		MemoryID string `json:"memory_id"`
		Scope    string
	}
	if m := agent.call(t, memorysvc.ToolWrite); !m.Success || json.Unmarshal(m.Data, &mem) != nil || mem.MemoryID == "" || mem.Scope != "run" {
		t.Errorf("novaos.memory.write answered %+v (data %s); want a stored run memory", m, m.Data)
	}
	var order struct {
		OrderID string `json:"order_id"`
		Status  string
	}
	if o := agent.call(t, upstreamTool); !o.Success || json.Unmarshal(o.Data, &order) != nil || order.OrderID != "A-1001" || order.Status != "refundable" {
		t.Errorf("%s answered %+v (data %s); want the order", upstreamTool, o, o.Data)
	}
	held := agent.call(t, builtin.NotifyWebhook)
	if held.Held == nil || held.Held.Code != tools.ReasonHITLRequired || held.Held.CallID == "" || held.Held.ToolName != builtin.NotifyWebhook ||
		held.Held.RunID != runID || held.Held.ActionID == "" {
		t.Fatalf("the webhook call answered %+v; want a -32042 hold of this run naming the call and the gate's action", held)
	}
	if n := posts.Load(); n != 0 {
		t.Fatalf("the held webhook was sent %d times before approval", n)
	}
	run, err := c.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	// The platform read the pause from the agent's tagged data part.
	var pause struct {
		Type    string
		CallID  string `json:"call_id"`
		Session string `json:"session_id"`
		Payload struct {
			ToolName          string `json:"tool_name"`
			Content           string
			WriteConfirmation map[string]string `json:"write_confirmation"`
		}
	}
	if run.Status != gateway.StatusWaitingUser || json.Unmarshal(run.Pause, &pause) != nil ||
		pause.Type != gateway.EventWriteConfirmationRequired || pause.CallID != held.Held.CallID || pause.Session == "" ||
		pause.Payload.ToolName != builtin.NotifyWebhook || !strings.HasPrefix(pause.Payload.Content, "Confirm sending") ||
		pause.Payload.WriteConfirmation["call_id"] != held.Held.CallID || pause.Payload.WriteConfirmation["session_id"] != pause.Session ||
		pause.Payload.WriteConfirmation["action_id"] != held.Held.ActionID || pause.Payload.WriteConfirmation["run_id"] != runID {
		t.Fatalf("the paused run is %s with pause %s; want it waiting on the agent's write confirmation of %s", run.Status, run.Pause, held.Held.CallID)
	}

	// A person approves the held action at the gate.
	list, err := srv.Gate().List(ctx, gwTenant, []gate.ActionState{gate.ActionHeld}, "", 10)
	if err != nil || len(list.Actions) != 1 {
		t.Fatalf("held actions %+v, %v; want the webhook's", list, err)
	}
	action := list.Actions[0]
	if action.ActionType != builtin.NotifyWebhook || action.ActionID != held.Held.ActionID {
		t.Fatalf("held action %s %s; want %s %s", action.ActionType, action.ActionID, builtin.NotifyWebhook, held.Held.ActionID)
	}
	if _, err := srv.Gate().Decide(ctx, gwTenant, action.SessionID, action.ActionID,
		gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops@example.com"); err != nil {
		t.Fatal(err)
	}

	// The run resumes; the agent makes the held call again, and it runs.
	rest := gwEvents(t, c, runID, first[len(first)-1].ID, func(ev gateway.StreamEvent) bool {
		return ev.IsTerminal() || ev.Status == gateway.StatusWaitingUser
	})
	all := append(first, rest...)
	gwExactlyOnce(t, runID, all)
	if last := all[len(all)-1]; !last.IsTerminal() || last.IsFailure() {
		t.Fatalf("the resumed run ended on %s:%s %q:%s\nagent stderr:\n%s", last.WireType, last.Status, last.Content, gwKinds(all), agent.stderr)
	}
	d2 := agent.delivery(t, "the resumed delivery")
	answer2, _ := d2.PlatformData["hitl_response"].(map[string]any)
	meta, _ := answer2["metadata"].(map[string]any)
	if !d2.Resumed || d2.TaskID != d1.TaskID || d2.TaskState == nil || *d2.TaskState != "TASK_STATE_AUTH_REQUIRED" ||
		meta["call_id"] != held.Held.CallID || meta["approved"] != true || !d2.HasToken {
		t.Errorf("resumed delivery %+v; want the paused task, AUTH_REQUIRED, answered approve for %s", d2, held.Held.CallID)
	}
	var sent struct {
		Status    int
		Delivered bool
	}
	if s := agent.call(t, builtin.NotifyWebhook); !s.Success || json.Unmarshal(s.Data, &sent) != nil || sent.Status != http.StatusNoContent || !sent.Delivered {
		t.Errorf("the approved webhook call answered %+v (data %s); want it delivered", s, s.Data)
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("the approved webhook was sent %d times, want once", n)
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("the upstream tool ran %d times, want once", n)
	}
	rec, err := srv.Gate().Get(ctx, gwTenant, action.SessionID, action.ActionID)
	if err != nil || rec.State != gate.ActionExecuted {
		t.Fatalf("the gate's action is %s (%v), want executed", rec.State, err)
	}
	final, err := c.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != gateway.StatusCompleted || !strings.HasPrefix(final.Output, "notified: ") || final.Turn != 2 {
		t.Errorf("run = status %s output %q turn %d; want COMPLETED with the agent's answer after its second turn", final.Status, final.Output, final.Turn)
	}

	// The run shows every call as the gateway saw it, in order: each
	// read-class call and its result, the held write (the gateway's
	// tool.write_confirmation_required, which the run's pause on the
	// agent's write confirmation does not repeat), and the approved
	// write's one successful result, under the held call's id.
	type shown struct {
		Type, Tool, CallID string
		Success            bool
	}
	var got []shown
	for _, ev := range all {
		switch ev.WireType {
		case gateway.EventToolCall, gateway.EventToolResult, gateway.EventWriteConfirmationRequired:
		default:
			continue
		}
		var p struct {
			Tool     string
			ToolName string `json:"tool_name"`
			CallID   string `json:"call_id"`
			Success  bool
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatalf("event %s %s: %v", ev.ID, ev.Payload, err)
		}
		got = append(got, shown{ev.WireType, cmp.Or(p.Tool, p.ToolName), p.CallID, p.Success})
	}
	want := []struct {
		typ, tool string
		write     bool // the held call's id
	}{
		{gateway.EventToolCall, memorysvc.ToolWrite, false}, {gateway.EventToolResult, memorysvc.ToolWrite, false},
		{gateway.EventToolCall, upstreamTool, false}, {gateway.EventToolResult, upstreamTool, false},
		{gateway.EventToolCall, builtin.NotifyWebhook, true}, {gateway.EventWriteConfirmationRequired, builtin.NotifyWebhook, true},
		{gateway.EventToolCall, builtin.NotifyWebhook, true}, {gateway.EventToolResult, builtin.NotifyWebhook, true},
	}
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		g, w := got[i], want[i]
		ok = g.Type == w.typ && g.Tool == w.tool && g.CallID != "" && (!w.write || g.CallID == held.Held.CallID) &&
			(g.Type != gateway.EventToolResult || g.Success)
	}
	if !ok {
		t.Fatalf("the run's tool events are %+v;\nwant, in order: %+v (the write's under the held call %s, every result a success)", got, want, held.Held.CallID)
	}
	// Each call that ran is metered once for the run, the approved write
	// among them.
	ureq, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+toolgw.UsagePath, nil)
	ureq.Header.Set("Authorization", "Bearer "+adminTok)
	uresp, err := http.DefaultClient.Do(ureq)
	if err != nil {
		t.Fatal(err)
	}
	var usage struct{ Usage []toolgw.Usage }
	err = json.NewDecoder(uresp.Body).Decode(&usage)
	uresp.Body.Close()
	if err != nil || uresp.StatusCode != http.StatusOK {
		t.Fatalf("usage: %d %v", uresp.StatusCode, err)
	}
	for _, tool := range []string{memorysvc.ToolWrite, upstreamTool, builtin.NotifyWebhook} {
		var calls int64
		for _, u := range usage.Usage {
			if u.Tool == tool && u.Run == runID && u.Outcome == "ok" {
				calls += u.Calls
			}
		}
		if calls != 1 {
			t.Errorf("%s metered %d calls for the run, want 1; usage %+v", tool, calls, usage.Usage)
		}
	}
	t.Logf("run events:%s", gwKinds(all))
}
