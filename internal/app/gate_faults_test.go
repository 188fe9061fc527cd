package app_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver store/sqlite uses, to tamper with the file directly

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/internal/gatesvc/judge"
	"novaos.dev/novaos/internal/gatesvc/rules"
	"novaos.dev/novaos/internal/modelapi"
	"novaos.dev/novaos/secret"
)

// fault is what one fail-closed case gets: the servers, a tenant and a
// session id of its own, and the gated Go function whose runs it counts.
type fault struct {
	t          *testing.T
	main, aux  *gateEnv
	tenant     string
	sid        string
	eff        effects
	requests   atomic.Int64 // sent by the case's agent clients
	judgeModes []string     // the judge modes the case must have reached
}

// agent is a counted agent client of e for the case's tenant.
func (f *fault) agent(e *gateEnv, o *gate.ClientOptions) *gate.Client {
	return e.client(f.tenant, gate.ScopeSubmit, &f.requests, o)
}

// write runs one gated write of r in s with the counted function.
func (f *fault) write(ctx context.Context, c *gate.Client, s gate.Session, r refund) error {
	return runOne(ctx, c, s, refundSpec, f.eff.fn, r)
}

// prepare runs a write that is not the one under test (its function is
// not counted) and requires it to succeed.
func (f *fault) prepare(e *gateEnv, s gate.Session, r refund) {
	f.t.Helper()
	ran := 0
	err := runOne(context.Background(), e.agent(f.tenant, nil), s, refundSpec, func(context.Context, refund) (string, error) {
		ran++
		return "ok", nil
	}, r)
	if err != nil || ran != 1 {
		f.t.Fatalf("preparing write: ran %d times, %v", ran, err)
	}
}

func (f *fault) resumed() gate.Session {
	s := session(f.tenant, f.sid)
	s.Attach, s.Resume = true, true
	return s
}

// waitHeld waits until the action is held on e.
func (f *fault) waitHeld(e *gateEnv, aid string) {
	f.t.Helper()
	op := e.operator(f.tenant)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if rec, err := op.Action(context.Background(), f.sid, aid); err == nil && rec.State == gate.ActionHeld {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.t.Fatalf("action %s was never held", aid)
}

type faultCase struct {
	name   string
	reason gate.Reason
	// verdict is the KillError's verdict when it is not kill.
	verdict gate.Outcome
	// detail is a text the error must carry (what exactly was refused).
	detail string
	// noRequests: refused before the client sent anything.
	noRequests bool
	run        func(t *testing.T, f *fault) error
}

// judgeFaults are the judge's failure modes and the reason each must
// fail closed with.
var judgeFaults = []struct {
	mode   string
	reason gate.Reason
	detail string
}{
	{"timeout", gate.ReasonJudgeTimeout, "deadline"},
	{"429", gate.ReasonJudgeError, "429"},
	{"500", gate.ReasonJudgeError, "500"},
	{"503", gate.ReasonJudgeError, "503"},
	{"malformed", gate.ReasonJudgeMalformed, ""},
	{"dupkeys", gate.ReasonJudgeMalformed, "duplicate"},
	{"extra", gate.ReasonJudgeMalformed, "confidence"},
	{"trailing", gate.ReasonJudgeMalformed, ""},
	{"verdict", gate.ReasonJudgeMalformed, "approve"},
	{"rule", gate.ReasonJudgeMalformed, "made-up-rule"},
	{"envelope", gate.ReasonJudgeMalformed, ""},
	{"refusal", gate.ReasonJudgeRefused, "refused"},
	{"length", gate.ReasonJudgeRefused, "length"},
}

func faultCases() []faultCase {
	var cases []faultCase
	for _, jf := range judgeFaults {
		cases = append(cases, faultCase{name: "judge " + jf.mode, reason: jf.reason, detail: jf.detail,
			run: func(t *testing.T, f *fault) error {
				f.judgeModes = []string{jf.mode}
				return f.write(t.Context(), f.agent(f.main, nil), session(f.tenant, f.sid), refund{ID: "a1", Record: "jf[" + jf.mode + "]", Amount: 5})
			}})
	}
	return append(cases,
		faultCase{name: "rule set fails to load", reason: gate.ReasonRulesUnavailable, run: func(t *testing.T, f *fault) error {
			// A set an older release stored, which this one cannot compile.
			if _, err := f.main.store().PutRuleSet(t.Context(), gate.RuleSetRecord{TenantID: f.tenant, Hash: "legacy", CreatedAt: time.Now(),
				Body: []byte(`{"rules":[{"id":"old","text":"an old rule","when":"no_such_variable > 1","verdict":"kill"}]}`)}); err != nil {
				t.Fatal(err)
			}
			return f.write(t.Context(), f.agent(f.main, nil), session(f.tenant, f.sid), refund{ID: "a1", Record: "r1", Amount: 5})
		}},
		faultCase{name: "CEL cost limit exceeded", reason: gate.ReasonRuleError, detail: "cost", run: func(t *testing.T, f *fault) error {
			// The load-time estimate assumes 8 reads (the server's SizeHint);
			// this trajectory brings 200, so only the run-time limit stops it.
			f.main.rules(f.tenant, gate.RuleDocument{ID: "scan", Text: "Hold when any read is very late in the run.",
				When: "evidence.exists(e, e.seq > 100000)", Verdict: gate.Hold})
			c := f.agent(f.main, &gate.ClientOptions{Evidence: gate.EvidenceLimits{MaxItems: 512}})
			lookup := gate.Read("lookup_order", func(_ context.Context, i int) (int, error) { return i, nil })
			var werr error
			err := c.Run(t.Context(), session(f.tenant, f.sid), func(ctx context.Context) error {
				for i := range 200 {
					_, _ = lookup(ctx, i)
				}
				_, werr = gate.Write(c, refundSpec, f.eff.fn)(ctx, refund{ID: "a1", Record: "r1", Amount: 5})
				return nil
			})
			return errors.Join(werr, err)
		}},
		faultCase{name: "rule evaluation error", reason: gate.ReasonRuleError, detail: "vendor_risk", run: func(t *testing.T, f *fault) error {
			f.main.rules(f.tenant, gate.RuleDocument{ID: "risk", Text: "Hold refunds to risky vendors.", When: `ctx.vendor_risk == "high"`, Verdict: gate.Hold})
			return f.write(t.Context(), f.agent(f.main, nil), session(f.tenant, f.sid), refund{ID: "a1", Record: "r1", Amount: 5})
		}},
		faultCase{name: "operator timeout", reason: gate.ReasonOperatorTimeout, run: func(t *testing.T, f *fault) error {
			f.main.rules(f.tenant, holdOver...)
			s := session(f.tenant, f.sid)
			s.MaxHold = 400 * time.Millisecond
			err := f.write(t.Context(), f.agent(f.main, nil), s, refund{ID: "a1", Record: "r1", Amount: 500})
			// The server expired it too, not just the client.
			rec, rerr := f.main.operator(f.tenant).Action(t.Context(), f.sid, "a1")
			if rerr != nil || rec.State != gate.ActionExpired || rec.Reason != gate.ReasonOperatorTimeout {
				t.Errorf("server record %+v, %v; want expired with %s", rec, rerr, gate.ReasonOperatorTimeout)
			}
			return err
		}},
		faultCase{name: "operator deny", reason: gate.ReasonOperatorDenied, run: func(t *testing.T, f *fault) error {
			f.main.rules(f.tenant, holdOver...)
			done := make(chan error, 1)
			go func() {
				_, err := decideWhenHeld(t.Context(), f.main.operator(f.tenant), f.sid, "a1", gate.DecisionDeny)
				done <- err
			}()
			err := f.write(t.Context(), f.agent(f.main, nil), session(f.tenant, f.sid), refund{ID: "a1", Record: "r1", Amount: 500})
			if derr := <-done; derr != nil {
				t.Fatal(derr)
			}
			return err
		}},
		faultCase{name: "restart past grace", reason: gate.ReasonRestartPastGrace, run: func(t *testing.T, f *fault) error {
			f.aux.rules(f.tenant, holdOver...)
			c := f.agent(f.aux, &gate.ClientOptions{WaitPoll: time.Second})
			done := make(chan error, 1)
			go func() {
				done <- f.write(context.Background(), c, session(f.tenant, f.sid), refund{ID: "a1", Record: "r1", Amount: 500})
			}()
			f.waitHeld(f.aux, "a1")
			f.aux.stop()
			time.Sleep(2 * f.aux.opts.RestartGrace) // down past the grace
			f.aux.start()
			return <-done
		}},
		faultCase{name: "resume fingerprint mismatch", reason: gate.ResumeFingerprintMismatch, run: func(t *testing.T, f *fault) error {
			f.prepare(f.main, session(f.tenant, f.sid), refund{ID: "po-1", Record: "r1", Amount: 10})
			return f.write(t.Context(), f.agent(f.main, nil), f.resumed(), refund{ID: "po-1", Record: "r1", Amount: 20})
		}},
		faultCase{name: "resume commitment unversioned", reason: gate.ResumeCommitmentUnversioned, run: func(t *testing.T, f *fault) error {
			if err := f.main.agent(f.tenant, nil).Run(t.Context(), session(f.tenant, f.sid), func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
			// A standing pass recorded by a release before fingerprints.
			r := refund{ID: "legacy-1", Record: "r1", Amount: 10}
			cx, _ := refundContext(r)
			raw, _ := json.Marshal(gate.Action{ActionID: r.ID, ActionType: refundSpec.ActionType, TenantID: f.tenant, TeamID: "support",
				AgentID: "refund-bot", SessionID: f.sid, Context: cx})
			now := time.Now()
			if _, err := f.main.store().WriteAction(t.Context(), gate.ActionWrite{Now: now, Record: gate.ActionRecord{
				TenantID: f.tenant, SessionID: f.sid, ActionID: r.ID, ActionType: refundSpec.ActionType, TeamID: "support", AgentID: "refund-bot",
				Action: raw, State: gate.ActionPassed, Verdict: gate.Pass, CreatedAt: now, UpdatedAt: now}}); err != nil {
				t.Fatal(err)
			}
			return f.write(t.Context(), f.agent(f.main, nil), f.resumed(), r)
		}},
		faultCase{name: "resume commitment version changed", reason: gate.ResumeCommitmentVersionChanged, run: func(t *testing.T, f *fault) error {
			r := refund{ID: "po-7", Record: "r1", Amount: 10}
			f.prepare(f.aux, session(f.tenant, f.sid), r)
			// A release that changed what a commitment means.
			f.aux.restart(func(o *gatesvc.Options) { o.CommitmentVersion = "2" })
			return f.write(t.Context(), f.agent(f.aux, nil), f.resumed(), r)
		}},
		faultCase{name: "resume no standing verdict", reason: gate.ResumeNoStandingVerdict, run: func(t *testing.T, f *fault) error {
			f.main.rules(f.tenant, holdOver...)
			r := refund{ID: "po-9", Record: "r1", Amount: 500}
			// A first run that stopped waiting leaves the hold pending.
			ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
			defer cancel()
			err := runOne(ctx, f.main.agent(f.tenant, nil), session(f.tenant, f.sid), refundSpec, func(context.Context, refund) (string, error) {
				t.Error("the first run's write ran")
				return "", nil
			}, r)
			wantKill(t, err, gate.ReasonOperatorTimeout)
			return f.write(t.Context(), f.agent(f.main, nil), f.resumed(), r)
		}},
		faultCase{name: "context builder error", reason: gate.ReasonContextBuilder, run: func(t *testing.T, f *fault) error {
			spec := refundSpec
			spec.Context = func(refund) (gate.Context, error) { return nil, errors.New("the CRM lookup for the context failed") }
			return runOne(t.Context(), f.agent(f.main, nil), session(f.tenant, f.sid), spec, f.eff.fn, refund{ID: "a1", Record: "r1", Amount: 5})
		}},
		faultCase{name: "action id builder error", reason: gate.ReasonContextBuilder, run: func(t *testing.T, f *fault) error {
			spec := refundSpec
			spec.ActionID = func(refund) (string, error) { return "", errors.New("no purchase order number") }
			return runOne(t.Context(), f.agent(f.main, nil), session(f.tenant, f.sid), spec, f.eff.fn, refund{ID: "a1", Record: "r1", Amount: 5})
		}},
		faultCase{name: "config resume without attach", reason: gate.ReasonConfig, noRequests: true, detail: "resume requires attach", run: func(t *testing.T, f *fault) error {
			s := session(f.tenant, f.sid)
			s.Resume = true
			return f.write(t.Context(), f.agent(f.main, nil), s, refund{ID: "a1", Record: "r1", Amount: 5})
		}},
		faultCase{name: "config resumed write without action id", reason: gate.ReasonConfig, noRequests: true, detail: "action id", run: func(t *testing.T, f *fault) error {
			spec := refundSpec
			spec.ActionID = nil
			ctx := gate.WithSession(t.Context(), f.resumed())
			_, err := gate.Write(f.agent(f.main, nil), spec, f.eff.fn)(ctx, refund{Record: "r1", Amount: 5})
			return err
		}},
		faultCase{name: "config token without gate:submit", reason: gate.ReasonConfig, run: func(t *testing.T, f *fault) error {
			c := f.main.client(f.tenant, gate.ScopeOperate, &f.requests, nil)
			return f.write(t.Context(), c, session(f.tenant, f.sid), refund{ID: "a1", Record: "r1", Amount: 5})
		}},
		faultCase{name: "gate unreachable", reason: gate.ReasonServerUnavailable, run: func(t *testing.T, f *fault) error {
			c := f.agent(f.aux, nil)
			ctx, _, err := c.Begin(t.Context(), session(f.tenant, f.sid))
			if err != nil {
				t.Fatal(err)
			}
			f.aux.stop()
			_, werr := gate.Write(c, refundSpec, f.eff.fn)(ctx, refund{ID: "a1", Record: "r1", Amount: 5})
			f.aux.start()
			return werr
		}},
		faultCase{name: "execution unconfirmed after a crash between claim and ack", verdict: gate.ExecutionUnconfirmed, detail: "unconfirmed",
			run: func(t *testing.T, f *fault) error {
				// A process that claimed through the raw API and died before
				// acknowledging.
				r := refund{ID: "po-3", Record: "r1", Amount: 5}
				tok := f.main.token(f.tenant, gate.ScopeSubmit)
				s := session(f.tenant, f.sid)
				s.MaxHold = time.Minute
				postGate(t, f.main, tok, "/sessions", s.Request(), http.StatusCreated)
				cx, _ := refundContext(r)
				v := postGate(t, f.main, tok, "/actions?claim=1", gate.Action{ActionID: r.ID, ActionType: refundSpec.ActionType, TenantID: f.tenant,
					TeamID: "support", AgentID: "refund-bot", SessionID: f.sid, Context: cx}, http.StatusOK)
				if !strings.Contains(string(v), `"granted"`) {
					t.Fatalf("the raw submit was not claimed: %s", v)
				}
				err := f.write(t.Context(), f.agent(f.main, nil), f.resumed(), r)
				// Within the claim timeout the first claimant may still be
				// writing: the resume is refused and the claim left alone.
				rec, rerr := f.main.operator(f.tenant).Action(t.Context(), f.sid, r.ID)
				if rerr != nil || rec.State != gate.ActionClaimed || rec.FencingToken != 1 {
					t.Errorf("server record %s with token %d, %v; want the first claim, still live", rec.State, rec.FencingToken, rerr)
				}
				return err
			}},
	)
}

// postGate sends a raw JSON request to the gate API and returns the body,
// failing unless the status is want.
func postGate(t *testing.T, e *gateEnv, tok secret.Value, path string, body any, want int) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url()+gate.APIPath+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, out, want)
	}
	return out
}

// Every fail-closed fault class, through the public SDK against novaos
// serve on SQLite: each stops the write with its reason, and the gated Go
// function never runs. Afterwards the audit chain of everything the
// faults recorded verifies, and an altered row is caught.
func TestGateFailClosedFaults(t *testing.T) {
	fj := newFakeJudge(t)
	main := startGate(t, gatesvc.Options{
		HoldWindow: 30 * time.Second,
		Judge: judge.New(fj.srv.URL+"/v1", "fake-judge", secret.New("sk-fake-judge"),
			&judge.Options{Timeout: time.Second, Model: &modelapi.Options{Retry: noRetry}}),
		JudgeModel: "fake-judge",
		Rules:      &rules.Options{CostLimit: 100, SizeHint: 8},
	})
	aux := startGate(t, gatesvc.Options{HoldWindow: 30 * time.Second, RestartGrace: 300 * time.Millisecond})

	cases := faultCases()
	if len(cases) < 20 {
		t.Fatalf("%d fault classes, want at least 20", len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fault{t: t, main: main, aux: aux, tenant: fmt.Sprintf("fault-%02d", i), sid: fmt.Sprintf("s-%02d", i)}
			start := time.Now()
			err := tc.run(t, f)
			k := wantKill(t, err, tc.reason)
			want := tc.verdict
			if want == "" {
				want = gate.Kill
			}
			if k.Verdict != want {
				t.Errorf("verdict %s, want %s (%v)", k.Verdict, want, k)
			}
			if !k.FailedClosed() && tc.reason.FailClosed() {
				t.Errorf("%v does not report FailedClosed", k)
			}
			if tc.detail != "" && !strings.Contains(k.Error(), tc.detail) {
				t.Errorf("error %q does not say %q", k.Error(), tc.detail)
			}
			if strings.Contains(k.Error(), "e2e-admin-token") || strings.Contains(k.Error(), "sk-fake-judge") {
				t.Errorf("error leaks a secret: %v", k)
			}
			if n := f.eff.n.Load(); n != 0 {
				t.Errorf("the gated function ran %d times", n)
			}
			if n := f.requests.Load(); tc.noRequests && n != 0 {
				t.Errorf("%d requests sent; a configuration refusal sends none", n)
			}
			for _, m := range f.judgeModes {
				if fj.calls(m) == 0 {
					t.Errorf("the judge was never asked in mode %s", m)
				}
			}
			t.Logf("%v (%s)", k, time.Since(start).Round(time.Millisecond))
		})
	}

	// The chain holds every decision, refusal and restart the faults made.
	for _, e := range []*gateEnv{main, aux} {
		n, head, err := e.serverAdmin().VerifyAudit(t.Context())
		if err != nil || n < 5 || head == gate.AuditGenesis {
			t.Fatalf("VerifyAudit: %d entries, head %s, %v", n, head, err)
		}
	}
	tamperAudit(t, main)
}

// tamperAudit alters one audit row in the stopped server's SQLite file,
// as someone with the file could, and expects verification to fail once
// the server is back.
func tamperAudit(t *testing.T, e *gateEnv) {
	t.Helper()
	e.stop()
	db, err := sql.Open("sqlite", e.dbPath())
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := db.QueryRow(`SELECT seq FROM gate_audit WHERE CAST(body AS TEXT) LIKE '%"kill"%' ORDER BY seq LIMIT 1 OFFSET 3`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	// The table refuses updates by trigger; whoever holds the file can
	// drop it, which is why the chain exists.
	if _, err := db.Exec(`DROP TRIGGER gate_audit_no_update`); err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE gate_audit SET body = CAST(replace(CAST(body AS TEXT), '"kill"', '"pass"') AS BLOB) WHERE seq = ?`, seq)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("tamper: %d rows, %v", n, err)
	}
	db.Close()
	e.start()
	n, _, err := e.serverAdmin().VerifyAudit(t.Context())
	var ce *gate.ChainError
	if !errors.As(err, &ce) || ce.Seq != seq {
		t.Fatalf("VerifyAudit after altering seq %d: %d verified, %v; want a ChainError at %d", seq, n, err, seq)
	}
}
