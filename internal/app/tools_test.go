package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/gatesvc/triage/triagetest"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// toolAgent calls a built-in tool, an upstream server's tool and then a
// write-class one through the tool gateway, pausing the run when the
// gateway holds the write.
func toolAgent(hook string) *agent.Agent {
	a := agent.New("toolbot", "1.0.0", nil)
	a.MustRegister(agent.Skill{ID: "work", Handler: func(c *agent.Context) (agent.Result, error) {
		b, err := tools.From(c, nil)
		if err != nil {
			return agent.Result{}, err
		}
		if _, err := b.Memory.Write(c, &memory.WriteRequest{Scope: memory.ScopeRun, Content: "refund 240 for cust-4821"}); err != nil {
			return agent.Result{}, err
		}
		crm, err := b.Call(c, "novaos.crm.lookup_customer", map[string]any{"id": "cust-4821"})
		if err != nil || !crm.Success {
			return agent.Result{}, fmt.Errorf("upstream lookup: %v %+v", err, crm)
		}
		_, err = b.Notify.Webhook(c, hook, map[string]any{"text": "refunded 240"})
		if w, ok := errors.AsType[*tools.WriteConfirmationRequired](err); ok {
			status, out := w.Pause("")
			return agent.Result{Status: status, Output: out}, nil
		}
		if err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Output: "notified"}, nil
	}})
	return a
}

// follow reads the run's events from after until the run pauses or ends,
// and returns their types and the last event's id.
func follow(t *testing.T, c *gateway.Client, runID, after string) ([]string, string, gateway.StreamEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var types []string
	var last gateway.StreamEvent
	for ev, err := range c.EventsWithReconnect(ctx, runID, &gateway.ReconnectOptions{LastEventID: after}) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.WireType)
		last = ev
		if ev.IsTerminal() || ev.Status == gateway.StatusWaitingUser {
			break
		}
	}
	return types, last.ID, last
}

// A Go SDK agent run through the execution gateway calls a built-in tool,
// an upstream server's tool and a write-class one; the write is held, a
// person approves it at the gate, the run resumes and the write runs
// exactly once. On SQLite and on PostgreSQL.
func TestToolsThroughTheGateway(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { toolsThroughTheGateway(t, app.DatabaseOptions{}, approveByService) })
	t.Run("postgres", func(t *testing.T) {
		toolsThroughTheGateway(t, app.DatabaseOptions{URL: pgtest.URL(t)}, approveByService)
	})
}

// The held call is approved by a person on the gate's operator page, in
// headless Chromium.
func TestToolsHeldCallApprovedOnTheGatePage(t *testing.T) {
	toolsThroughTheGateway(t, app.DatabaseOptions{}, func(t *testing.T, srv *app.Server, session, action string) {
		tok, err := srv.Issuer().Mint(context.Background(), identity.Claims{TenantID: "acme", Subject: "ops@example.com",
			Scopes: []string{gate.ScopeOperate}}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		b := triagetest.NewBrowser(t, srv.URL()+app.TriagePath)
		b.Login(tok)
		b.WaitForAction(session, action)
		b.Open(session, action)
		b.Decide(gate.DecisionApprove, "the customer asked for it")
	})
}

// approveByService approves the held call as the operator page does.
func approveByService(t *testing.T, srv *app.Server, session, action string) {
	t.Helper()
	if _, err := srv.Gate().Decide(context.Background(), "acme", session, action,
		gate.OperatorDecision{Decision: gate.DecisionApprove}, "ops@example.com"); err != nil {
		t.Fatal(err)
	}
}

func toolsThroughTheGateway(t *testing.T, db app.DatabaseOptions, approve func(t *testing.T, srv *app.Server, session, action string)) {
	var lookups atomic.Int32
	crm := mcp.NewServer(&mcp.Implementation{Name: "crm", Version: "1"}, nil)
	mcp.AddTool(crm, &mcp.Tool{Name: "lookup_customer", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			ID string `json:"id"`
		}) (*mcp.CallToolResult, map[string]string, error) {
			lookups.Add(1)
			return nil, map[string]string{"id": in.ID, "tier": "gold"}, nil
		})
	crmSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return crm }, nil))
	defer crmSrv.Close()
	var posts atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	srv := start(t, &app.Options{DataDir: t.TempDir(), Database: db,
		Agents: app.AgentOptions{Hosted: map[string]app.Agent{"toolbot": toolAgent(hook.URL + "/hook")}},
		BuiltinTools: app.BuiltinToolsOptions{Notify: builtin.NotifyOptions{
			Policy: &netguard.Policy{AllowLoopback: true}, AllowHTTP: true},
			Upstream: upstream.Options{AllowPrivate: true}}})
	ctx := context.Background()
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", Subject: "ops", Scopes: []string{tools.ScopeAdmin}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(tools.ServerRequest{Transport: tools.TransportHTTP, URL: crmSrv.URL})
	req, _ := http.NewRequest(http.MethodPut, srv.URL()+tools.ServersPath+"/crm", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("register the upstream server: %s", resp.Status)
	}
	inst, err := c.Install(ctx, gateway.InstallRequest{Name: "toolbot", Hosted: "toolbot",
		Scopes: []string{"mcp:tools:*", "memory:write:run", "memory:read:*"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(ctx, gateway.ExecuteRequest{InstanceID: inst.ID, Input: "refund cust-4821"})
	if err != nil {
		t.Fatal(err)
	}
	first, lastID, paused := follow(t, c, res.RunID, "")
	if paused.Status != gateway.StatusWaitingUser {
		t.Fatalf("the run did not pause: %v", first)
	}
	if n := posts.Load(); n != 0 {
		t.Fatalf("the held write ran %d times before approval", n)
	}
	held, err := srv.Gate().List(ctx, "acme", []gate.ActionState{gate.ActionHeld}, "", 10)
	if err != nil || len(held.Actions) != 1 || held.Actions[0].ActionType != tools.Prefix+"notify.webhook" {
		t.Fatalf("held actions %+v, %v", held, err)
	}
	h := held.Actions[0]
	approve(t, srv, h.SessionID, h.ActionID)
	second, _, end := follow(t, c, res.RunID, lastID)
	if !end.IsTerminal() || end.IsFailure() {
		t.Fatalf("the resumed run ended on %+v (%v)", end, second)
	}
	if n := posts.Load(); n != 1 {
		t.Fatalf("the approved write ran %d times, want once", n)
	}
	if n := lookups.Load(); n != 2 {
		t.Fatalf("the upstream tool was called %d times, want once per turn", n)
	}
	all := append(first, second...)
	call := slices.Index(all, gateway.EventToolCall)
	conf := slices.Index(all, gateway.EventWriteConfirmationRequired)
	result := slices.Index(all[max(conf, 0):], gateway.EventToolResult)
	if call < 0 || conf < call || result < 0 {
		t.Fatalf("events %v: want tool.call, tool.write_confirmation_required, tool.result in order", all)
	}
	if n := countOf(all, gateway.EventWriteConfirmationRequired); n != 1 {
		t.Fatalf("events %v: the pause announced %d times", all, n)
	}
	rec, err := srv.Gate().Get(ctx, "acme", h.SessionID, h.ActionID)
	if err != nil || rec.State != gate.ActionExecuted {
		t.Fatalf("the action is %s (%v), want executed", rec.State, err)
	}
}

func countOf(list []string, v string) int {
	n := 0
	for _, s := range list {
		if s == v {
			n++
		}
	}
	return n
}
