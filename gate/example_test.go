package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/secret"
)

// A resumed session must bring each write's own action id; the write is
// refused before any request, with the same error type as every other stop.
func ExampleValidateWrite() {
	ctx := gate.WithSession(context.Background(), gate.Session{
		TenantID: "hallway", TeamID: "field-ops", AgentID: "po-agent",
		ID: "nightly-2026-09-03", Attach: true, Resume: true, Resumable: true,
		MaxHold: gate.AdoptDeploymentWindow,
	})
	err := gate.ValidateWrite(ctx, "")
	var kill *gate.KillError
	if errors.As(err, &kill) {
		fmt.Println(kill.Reason, kill.FailedClosed())
	}
	fmt.Println(err)
	fmt.Println(gate.ValidateWrite(ctx, "po-1234"))
	// Output:
	// fail_closed_config true
	// [fail_closed_config] gate: write failed closed: a write in a resumed session must supply its own action id (verdict=kill session=nightly-2026-09-03)
	// <nil>
}

// A verdict is decoded strictly: the duplicate verdict below would decode
// as a pass with encoding/json alone.
func ExampleDecodeVerdict() {
	v, err := gate.DecodeVerdict([]byte(`{"action_id":"a1","session_id":"s1","verdict":"kill","rule_id_cited":"AP-1","rationale":"bank details changed 3 days ago"}`))
	fmt.Println(gate.NewKillError(v), err)
	_, err = gate.DecodeVerdict([]byte(`{"action_id":"a1","session_id":"s1","verdict":"kill","rule_id_cited":"AP-1","verdict":"pass"}`))
	fmt.Println(err)
	// Output:
	// gate: write blocked: bank details changed 3 days ago (verdict=kill rule=AP-1 action=a1 session=s1) <nil>
	// gate: decode verdict: duplicate member "verdict" at $.verdict
}

// The action a gated write submits: the context the rules see (here with
// an extra field a rule keys off), the buffered reads with their
// provenance, and the agent's reasoning.
func ExampleAction() {
	a := gate.Action{
		ActionID: "act-1", ActionType: "issue_refund",
		TenantID: "acme", TeamID: "support", AgentID: "refund-bot", SessionID: "s-1",
		Context: gate.GenericContext{
			RecordID: "cust-4821", Summary: "Refund $240.00 to cust-4821", Amount: new(240.0),
			Extra: map[string]any{"open_dispute_count": 2},
		},
		Evidence: []gate.Evidence{{
			Tool: "lookup_customer", Arguments: json.RawMessage(`{"customer_id":"cust-4821"}`),
			Result:     json.RawMessage(`{"disputes":2}`),
			Provenance: gate.Provenance{Sequence: 1, ObservedAt: time.Date(2026, 9, 3, 2, 0, 1, 0, time.UTC)},
		}},
		Reasoning: "Customer reported a double charge; verified in CRM.",
	}
	fmt.Println(a.Validate())
	b, _ := json.MarshalIndent(a, "", "  ")
	fmt.Println(string(b))
	// Output:
	// <nil>
	// {
	//   "action_id": "act-1",
	//   "action_type": "issue_refund",
	//   "tenant_id": "acme",
	//   "team_id": "support",
	//   "agent_id": "refund-bot",
	//   "session_id": "s-1",
	//   "context_type": "generic",
	//   "context": {
	//     "amount": 240,
	//     "open_dispute_count": 2,
	//     "record_id": "cust-4821",
	//     "summary": "Refund $240.00 to cust-4821"
	//   },
	//   "evidence": [
	//     {
	//       "tool": "lookup_customer",
	//       "arguments": {
	//         "customer_id": "cust-4821"
	//       },
	//       "result": {
	//         "disputes": 2
	//       },
	//       "provenance": {
	//         "seq": 1,
	//         "observed_at": "2026-09-03T02:00:01Z"
	//       }
	//     }
	//   ],
	//   "reasoning": "Customer reported a double charge; verified in CRM."
	// }
}

// A read runs freely and is kept as evidence; the write is the gated
// moment. The gate here is a stand-in that passes every write; against a
// NovaOS server, Config comes from ConfigFromEnv.
func ExampleWrite() {
	srv := exampleGate()
	defer srv.Close()
	c, err := gate.NewClient(gate.Config{URL: srv.URL, Token: secret.New("example-token")}, nil)
	if err != nil {
		panic(err)
	}
	lookup := gate.Read("lookup_customer", func(ctx context.Context, id string) (map[string]any, error) {
		return map[string]any{"id": id, "open_disputes": 0}, nil
	})
	type refund struct {
		Customer string
		Amount   float64
	}
	issueRefund := gate.Write(c, gate.WriteSpec[refund]{
		ActionType: "issue_refund",
		Context: func(r refund) (gate.Context, error) {
			return gate.GenericContext{RecordID: r.Customer, Summary: fmt.Sprintf("Refund $%.2f to %s", r.Amount, r.Customer), Amount: &r.Amount}, nil
		},
	}, func(ctx context.Context, r refund) (string, error) {
		return fmt.Sprintf("refunded %.2f to %s", r.Amount, r.Customer), nil
	})

	s := gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot"}
	err = c.Run(context.Background(), s, func(ctx context.Context) error {
		if _, err := lookup(ctx, "cust-4821"); err != nil {
			return err
		}
		_ = gate.SetReasoning(ctx, "Customer reported a double charge; verified in CRM.")
		res, err := issueRefund(ctx, refund{Customer: "cust-4821", Amount: 240})
		var kill *gate.KillError
		if errors.As(err, &kill) {
			fmt.Println("stopped at the gate:", kill.Reason, kill.RuleIDCited)
			return nil
		}
		fmt.Println(res, err)
		return err
	})
	fmt.Println(err)
	// Output:
	// refunded 240.00 to cust-4821 <nil>
	// <nil>
}

// exampleGate answers the calls of a passing write: the session, a pass
// claimed in the same step, the acknowledgement.
func exampleGate() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		sid, aid := req["session_id"], req["action_id"]
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case gate.APIPath + "/sessions":
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(map[string]any{"session_id": sid, "hold_window_s": 300})
		case gate.APIPath + "/actions":
			json.NewEncoder(w).Encode(map[string]any{"session_id": sid, "action_id": aid, "verdict": "pass",
				"claim": map[string]any{"session_id": sid, "action_id": aid, "status": "granted", "fencing_token": 1, "claimed_at": time.Now()}})
		case gate.APIPath + "/acks":
			json.NewEncoder(w).Encode(map[string]any{"session_id": sid, "action_id": aid, "acknowledged_at": time.Now()})
		case gate.APIPath + "/sessions/end":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
}

// At a framework's tool seam, tools are classified once and every call
// passes through Call; a denied write would come back Blocked, with text
// for the model, while a kill halts the run.
func ExampleToolGate() {
	srv := exampleGate()
	defer srv.Close()
	c, _ := gate.NewClient(gate.Config{URL: srv.URL, Token: secret.New("example-token")}, nil)
	g := &gate.ToolGate{
		Client: c,
		Kinds:  map[string]gate.ToolKind{"lookup_customer": gate.ToolRead, "issue_refund": gate.ToolWrite},
		Writes: map[string]gate.WriteSpecJSON{"issue_refund": {
			ActionType: "issue_refund",
			Context: func(args json.RawMessage) (gate.Context, error) {
				var a struct {
					CustomerID string  `json:"customer_id"`
					Amount     float64 `json:"amount"`
				}
				err := json.Unmarshal(args, &a)
				return gate.GenericContext{RecordID: a.CustomerID, Amount: &a.Amount}, err
			},
		}},
	}
	tool := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"status":"done"}`), nil
	}
	onToolError := gate.KillSafe(func(err error) string { return "the tool failed: " + err.Error() })
	s := gate.Session{TenantID: "acme", TeamID: "support", AgentID: "refund-bot", ID: "ticket-4821"}
	err := c.Run(context.Background(), s, func(ctx context.Context) error {
		for _, call := range []struct{ name, args string }{
			{"lookup_customer", `{"customer_id":"cust-4821"}`},
			{"issue_refund", `{"customer_id":"cust-4821","amount":240}`},
			{"delete_account", `{"customer_id":"cust-4821"}`},
		} {
			res, err := g.Call(ctx, call.name, json.RawMessage(call.args), tool)
			if err != nil {
				if _, err := onToolError(err); err != nil {
					return err // a halt: the run stops here
				}
				continue
			}
			fmt.Println(call.name, res.Blocked, res.Content)
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// lookup_customer false {"status":"done"}
	// issue_refund false {"status":"done"}
	// [fail_closed_config] gate: write failed closed: tool "delete_account" is not classified as read or write; the seam runs no unclassified tool (verdict=kill session=ticket-4821)
}
