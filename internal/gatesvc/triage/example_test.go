package triage_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/triage"
	"novaos.dev/novaos/internal/httpapi"
)

// onePause is a gate service with one held write.
type onePause struct{ rec gate.ActionRecord }

func (o *onePause) List(ctx context.Context, tenant string, states []gate.ActionState, after string, limit int) (gate.ActionList, error) {
	if o.rec.State != gate.ActionHeld {
		return gate.ActionList{}, nil
	}
	return gate.ActionList{Actions: []gate.ActionRecord{o.rec}}, nil
}

func (o *onePause) Get(ctx context.Context, tenant, sessionID, actionID string) (gate.ActionRecord, error) {
	return o.rec, nil
}

func (o *onePause) Decide(ctx context.Context, tenant, sessionID, actionID string, d gate.OperatorDecision, actor string) (gate.ActionRecord, error) {
	if o.rec.State != gate.ActionHeld {
		return o.rec, fmt.Errorf("decide: %w", gate.ErrConflict)
	}
	fmt.Printf("service: %s %s by %s (%q)\n", d.Decision, actionID, actor, d.Note)
	o.rec.State = gate.ActionApproved
	return o.rec, nil
}

// Example signs in, lists the held write, and approves it, as a browser
// on the page would.
func Example() {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	svc := &onePause{rec: gate.ActionRecord{
		TenantID: "acme", SessionID: "s-1", ActionID: "refund-42", ActionType: "issue_refund", AgentID: "cs-agent",
		State: gate.ActionHeld, Verdict: gate.Hold, RuleIDCited: "cs-refund-velocity",
		HoldExpiresAt: now.Add(3 * time.Minute), CreatedAt: now.Add(-2 * time.Minute),
		Action: []byte(`{"action_id":"refund-42","context_type":"cs","context":{"customer_id":"C-9"}}`),
	}}
	auth := func(ctx context.Context, token string) (triage.Principal, error) {
		if token != "operator-token" {
			return triage.Principal{}, httpapi.ErrUnauthenticated
		}
		return triage.Principal{Tenant: "acme", Actor: "alice"}, nil
	}
	h := triage.New(svc, auth, &triage.Options{Now: func() time.Time { return now }})

	cookies := map[string]*http.Cookie{} // a browser's cookie jar, by name
	do := func(method, path string, form url.Values) *httptest.ResponseRecorder {
		var r *http.Request
		if form != nil {
			r = httptest.NewRequest(method, "http://gate.example"+path, strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Origin", "http://gate.example")
		} else {
			r = httptest.NewRequest(method, "http://gate.example"+path, nil)
		}
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		for _, c := range w.Result().Cookies() {
			if c.MaxAge < 0 {
				delete(cookies, c.Name)
			} else {
				cookies[c.Name] = c
			}
		}
		return w
	}

	w := do("POST", "/ui/gate/login", url.Values{"token": {"operator-token"}})
	fmt.Println("login:", w.Code, w.Header().Get("Location"))

	page := do("GET", "/ui/gate", nil).Body.String()
	fmt.Println("held write listed:", strings.Contains(page, "PAUSED") && strings.Contains(page, "refund-42"))
	fmt.Println("time left shown:", strings.Contains(page, "3m0s"))

	csrf := page[strings.Index(page, `name="csrf" value="`)+len(`name="csrf" value="`):]
	csrf = csrf[:strings.IndexByte(csrf, '"')]
	w = do("POST", "/ui/gate/actions/s-1/refund-42/decide", url.Values{"csrf": {csrf}, "decision": {"approve"}, "note": {"customer verified"}})
	fmt.Println("decide:", w.Code, w.Header().Get("Location"))

	page = do("GET", "/ui/gate", nil).Body.String()
	fmt.Println("flash:", strings.Contains(page, "Action refund-42 approved."))
	// Output:
	// login: 303 /ui/gate
	// held write listed: true
	// time left shown: true
	// service: approve refund-42 by alice ("customer verified")
	// decide: 303 /ui/gate
	// flash: true
}
