package runspage_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runspage"
)

func TestLoginLogout(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       *runspage.Options
		tls        bool
		wantSecure bool
	}{
		{name: "plain http"},
		{name: "tls", tls: true, wantSecure: true},
		{name: "secure option (https base URL)", opts: &runspage.Options{Secure: true}, wantSecure: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, tc.opts)
			b := hs.browser(t)
			b.tls = tc.tls
			if tc.tls {
				b.origin = "https://" + host
			}
			w := b.get("/ui/runs")
			wantStatus(t, w, http.StatusSeeOther)
			if got := w.Header().Get("Location"); got != "/ui/runs/login" {
				t.Fatalf("signed out, the list redirects to %q", got)
			}
			w = b.get("/ui/runs/login")
			wantStatus(t, w, http.StatusOK)
			wantContains(t, w.Body.String(), `id="token"`, `type="password"`, `action="/ui/runs/login"`)

			b.login(" " + tokAlice + "\n")
			c := b.cookies["novaos_runs_session"]
			switch {
			case c == nil:
				t.Fatal("no session cookie after login")
			case !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/runs":
				t.Errorf("session cookie HttpOnly=%v SameSite=%v Path=%q", c.HttpOnly, c.SameSite, c.Path)
			case c.Secure != tc.wantSecure:
				t.Errorf("session cookie Secure=%v, want %v", c.Secure, tc.wantSecure)
			}
			w = b.get("/ui/runs")
			wantStatus(t, w, http.StatusOK)
			wantContains(t, w.Body.String(), "alice@acme", "tenant acme", `id="logout"`)
			wantLacks(t, w.Body.String(), tokAlice)

			w = b.post("/ui/runs/logout", url.Values{"csrf": {b.csrf()}})
			wantStatus(t, w, http.StatusSeeOther)
			if _, ok := b.cookies["novaos_runs_session"]; ok {
				t.Error("the session cookie survived logout")
			}
			wantStatus(t, b.get("/ui/runs"), http.StatusSeeOther)
			if strings.Contains(hs.logs.String(), tokAlice) {
				t.Errorf("the log shows the token:\n%s", hs.logs)
			}
		})
	}
}

func TestAuthRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		status      int
		msg         string
	}{
		{"unknown token", "tok-wrong", http.StatusUnauthorized, "Refused: that token is not a platform token"},
		{"checker fails", tokBroken, http.StatusServiceUnavailable, "could not be checked"},
		{"neither a user nor a service account", tokNoUser, http.StatusForbidden, "names no user and is no service account"},
		{"empty", " ", http.StatusBadRequest, "Paste a token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			b := hs.browser(t)
			w := b.post("/ui/runs/login", url.Values{"token": {tc.token}})
			wantStatus(t, w, tc.status)
			wantContains(t, w.Body.String(), tc.msg, `id="login-error"`)
			if len(b.cookies) != 0 {
				t.Errorf("cookies set on a refused login: %v", b.cookies)
			}
			if tok := strings.TrimSpace(tc.token); tok != "" && (strings.Contains(w.Body.String(), tok) || strings.Contains(hs.logs.String(), tok)) {
				t.Errorf("the token shows in the answer or the log:\n%s", hs.logs)
			}
		})
	}
	t.Run("revoked after login", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokAlice)
		csrf := b.csrf()
		hs.auth.mu.Lock()
		hs.auth.revoked[tokAlice] = true
		hs.auth.mu.Unlock()
		w := b.post("/ui/runs/r-alice-2/cancel", url.Values{"csrf": {csrf}})
		wantStatus(t, w, http.StatusSeeOther)
		if got := w.Header().Get("Location"); got != "/ui/runs/login" {
			t.Errorf("a revoked token's POST goes to %q", got)
		}
		if len(hs.runs.cancels) != 0 {
			t.Error("a revoked token cancelled a run")
		}
	})
}

func TestCSRF(t *testing.T) {
	hs := newHarness(t, nil)
	other := hs.browser(t)
	other.login(tokAlice)
	otherCSRF := other.csrf()
	b := hs.browser(t)
	b.login(tokAlice)
	good := b.csrf()
	for _, tc := range []struct {
		name   string
		csrf   []string
		status int
	}{
		{"missing", nil, http.StatusForbidden},
		{"empty", []string{""}, http.StatusForbidden},
		{"forged", []string{"AAAA"}, http.StatusForbidden},
		{"another login's", []string{otherCSRF}, http.StatusForbidden},
		{"good", []string{good}, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, action := range []string{"cancel", "reply"} {
				before := len(hs.runs.cancels) + len(hs.runs.replies)
				f := url.Values{"input": {"yes"}}
				if tc.csrf != nil {
					f["csrf"] = tc.csrf
				}
				w := b.post("/ui/runs/r-alice-2/"+action, f)
				wantStatus(t, w, tc.status)
				called := len(hs.runs.cancels) + len(hs.runs.replies) - before
				if (called == 1) != (tc.status == http.StatusSeeOther) {
					t.Errorf("%s: the gateway was called %d times", action, called)
				}
				if tc.status == http.StatusForbidden && !strings.Contains(w.Body.String(), "CSRF") {
					t.Errorf("refusal %q does not name the CSRF token", w.Body)
				}
			}
		})
	}
}

func TestCrossOrigin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		origin string
		hdr    map[string]string
		status int
	}{
		{name: "other site", origin: "http://evil.example", status: http.StatusForbidden},
		{name: "other port", origin: "http://" + host + ":8443", status: http.StatusForbidden},
		{name: "subdomain", origin: "http://x." + host, status: http.StatusForbidden},
		{name: "opaque origin", origin: "null", status: http.StatusForbidden},
		{name: "sec-fetch cross-site", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, status: http.StatusForbidden},
		{name: "sec-fetch same-site", hdr: map[string]string{"Sec-Fetch-Site": "same-site"}, status: http.StatusForbidden},
		{name: "same origin", origin: "http://" + host, status: http.StatusSeeOther},
		{name: "https origin behind a proxy", origin: "https://" + host, status: http.StatusSeeOther},
		{name: "sec-fetch same-origin", hdr: map[string]string{"Sec-Fetch-Site": "same-origin"}, status: http.StatusSeeOther},
		{name: "no origin (not a browser)", status: http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			b := hs.browser(t)
			b.login(tokAlice)
			csrf := b.csrf()
			b.origin = tc.origin
			w := b.do(http.MethodPost, "/ui/runs/r-alice-2/cancel", url.Values{"csrf": {csrf}}, tc.hdr)
			wantStatus(t, w, tc.status)
			if n := len(hs.runs.cancels); (n == 1) != (tc.status == http.StatusSeeOther) {
				t.Errorf("Cancel called %d times", n)
			}
			if tc.status == http.StatusForbidden && !strings.Contains(w.Body.String(), "not sent from the runs page") {
				t.Errorf("refusal %q does not say why", w.Body)
			}
			// A login from another site is refused too.
			w = b.do(http.MethodPost, "/ui/runs/login", url.Values{"token": {tokBob}}, tc.hdr)
			if tc.status == http.StatusForbidden && w.Code != http.StatusForbidden {
				t.Errorf("a cross-site login: %d", w.Code)
			}
		})
	}
}

var rowIDs = regexp.MustCompile(`data-run-id="([^"]+)"`)

func listed(body string) []string {
	var ids []string
	for _, m := range rowIDs.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestList(t *testing.T) {
	for _, tc := range []struct {
		name, token, query string
		want               []string
		shows, lacks       []string
	}{
		{name: "a user sees their own runs", token: tokAlice, want: []string{"r-alice-2", "r-alice-1"},
			shows: []string{"RUNNING", "COMPLETED", "inst-acme"}, lacks: []string{"r-bob-1", "<th>Caller</th>", "<th>Tenant</th>"}},
		{name: "another user", token: tokBob, want: []string{"r-bob-1"}},
		{name: "a service account sees the tenant's", token: tokService, want: []string{"r-bob-1", "r-alice-2", "r-alice-1"},
			shows: []string{"<th>Caller</th>", "user bob"}},
		{name: "the operator sees every tenant", token: tokAdmin, want: []string{"r-carol-1", "r-bob-1", "r-alice-2", "r-alice-1"},
			shows: []string{"<th>Tenant</th>", `id="tenant"`, "globex"}},
		{name: "the operator picks a tenant", token: tokAdmin, query: "?tenant=globex", want: []string{"r-carol-1"}},
		{name: "filter by status", token: tokService, query: "?status=RUNNING", want: []string{"r-bob-1", "r-alice-2"},
			shows: []string{`<option value="RUNNING" selected>`}},
		{name: "nothing of a status", token: tokAlice, query: "?status=WAITING_USER", shows: []string{`id="empty"`, "No runs with status WAITING_USER"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			b := hs.browser(t)
			b.login(tc.token)
			w := b.get("/ui/runs" + tc.query)
			wantStatus(t, w, http.StatusOK)
			if diff := cmp.Diff(tc.want, listed(w.Body.String())); diff != "" {
				t.Errorf("runs listed (-want +got):\n%s", diff)
			}
			wantContains(t, w.Body.String(), tc.shows...)
			wantLacks(t, w.Body.String(), tc.lacks...)
			wantContains(t, w.Body.String(), `<meta http-equiv="refresh" content="30">`)
		})
	}

	t.Run("pages", func(t *testing.T) {
		hs := newHarness(t, &runspage.Options{PageSize: 2})
		b := hs.browser(t)
		b.login(tokAdmin)
		w := b.get("/ui/runs")
		if diff := cmp.Diff([]string{"r-carol-1", "r-bob-1"}, listed(w.Body.String())); diff != "" {
			t.Fatalf("first page (-want +got):\n%s", diff)
		}
		next := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(w.Body.String())
		if next == nil {
			t.Fatalf("no next page link:\n%s", w.Body)
		}
		w = b.get(strings.ReplaceAll(next[1], "&amp;", "&"))
		if diff := cmp.Diff([]string{"r-alice-2", "r-alice-1"}, listed(w.Body.String())); diff != "" {
			t.Fatalf("second page (-want +got):\n%s", diff)
		}
		wantContains(t, w.Body.String(), `id="first" href="/ui/runs"`)
	})

	t.Run("bad queries", func(t *testing.T) {
		hs := newHarness(t, nil)
		b := hs.browser(t)
		b.login(tokAdmin)
		for q, msg := range map[string]string{
			"?status=DONE":                          "Unknown status",
			"?after=not-a-token":                    "page token",
			"?tenant=" + strings.Repeat("t", 200):   "too long",
			"?after=" + url.QueryEscape("%%%%%%%%"): "page token",
		} {
			w := b.get("/ui/runs" + q)
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), msg) {
				t.Errorf("%s: %d %q, want 400 %q", q, w.Code, w.Body, msg)
			}
		}
	})
}

// artifactRun is a completed run with an artifact holding text, data,
// skill metadata and a part marked as platform data.
func artifactRun(t *testing.T, id, text string) gateway.Run {
	t.Helper()
	r := newRun(id, "acme", "alice", gateway.StatusCompleted, t0)
	data, err := a2a.DataPart(map[string]any{"total": 42})
	if err != nil {
		t.Fatal(err)
	}
	control, err := hitl.TaggedDataPart(map[string]any{"secret_control": "platform-only"}, hitl.MetadataMediaType)
	if err != nil {
		t.Fatal(err)
	}
	r.Artifacts = []gateway.Artifact{{ArtifactID: "a-1", Name: "Invoice summary", Description: "what was paid",
		Parts:         []a2a.Part{a2a.TextPart(text), data, control, a2a.URLPart("https://files.test/x.pdf", "x.pdf", "application/pdf")},
		SkillMetadata: map[string]any{"confidence": 0.9, "source": "ledger"}}}
	r.Output, r.Reason, r.EndedAt = text, "the agent completed the task", t0.Add(time.Minute)
	return r
}

func TestRunPage(t *testing.T) {
	hs := newHarness(t, nil)
	hs.runs.add(artifactRun(t, "r-art", "paid 3 invoices"), statusEvent(gateway.StatusCompleted, "done"), event(gateway.EventDone, `{}`))
	b := hs.browser(t)
	b.login(tokAlice)

	t.Run("ended run with artifacts", func(t *testing.T) {
		w := b.get("/ui/runs/r-art")
		wantStatus(t, w, http.StatusOK)
		body := w.Body.String()
		wantContains(t, body, `id="status" class="status completed">COMPLETED`, "the agent completed the task",
			"Invoice summary", `<pre class="text part">paid 3 invoices</pre>`, `&#34;total&#34;: 42`,
			"<caption>Skill metadata</caption>", "<code>confidence</code>", "0.9", "ledger",
			"File <code>x.pdf</code>", "https://files.test/x.pdf", "question of r-art",
			`<script src="/ui/runs/static/runs.js" defer></script>`, "the run has ended")
		wantLacks(t, body, "secret_control", "platform-only", `id="cancel"`, "data-stream=", `http-equiv="refresh"`, `id="reply"`)
		if got := w.Header().Get("Content-Security-Policy"); !strings.Contains(got, "script-src 'self'") || strings.Contains(got, "unsafe-inline") {
			t.Errorf("CSP %q", got)
		}
	})

	t.Run("running run", func(t *testing.T) {
		w := b.get("/ui/runs/r-alice-2")
		wantStatus(t, w, http.StatusOK)
		body := w.Body.String()
		wantContains(t, body, `id="cancel"`, `action="/ui/runs/r-alice-2/cancel"`,
			`data-stream="/ui/runs/r-alice-2/events?after=2"`, `data-after="2"`,
			`<noscript><meta http-equiv="refresh" content="5"></noscript>`, `id="reload" href="/ui/runs/r-alice-2"`,
			`<tr data-seq="1" class="t-status">`, "QUEUED: queued", "None yet.")
	})

	t.Run("another user's run", func(t *testing.T) {
		for _, path := range []string{"/ui/runs/r-bob-1", "/ui/runs/r-carol-1", "/ui/runs/nope"} {
			w := b.get(path)
			if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "No such run that you may see") {
				t.Errorf("%s: %d %q", path, w.Code, w.Body)
			}
		}
	})
}

// Agent-controlled text (artifacts, reasons, events, pauses) is only
// ever text on the page.
func TestEscaping(t *testing.T) {
	const evil = `</pre><script>alert(1)</script><img src=x onerror=alert(2)>`
	hs := newHarness(t, nil)
	r := artifactRun(t, "r-evil", evil)
	r.Reason, r.Input = evil, evil
	r.Artifacts[0].Name, r.Artifacts[0].SkillMetadata = evil, map[string]any{evil: evil}
	hs.runs.add(r, event(gateway.EventMessageDelta, `{"content":"`+strings.ReplaceAll(evil, `"`, `\"`)+`"}`))
	w := newRun("r-evil-pause", "acme", "alice", gateway.StatusWaitingUser, t0)
	w.Pause = pause(t, gateway.EventOAuthRequired, map[string]any{"content": evil, "connector": evil, "auth_url": "javascript:alert(3)"}, "")
	hs.runs.add(w)
	h := newRun("r-evil-hitl", "acme", "alice", gateway.StatusWaitingUser, t0)
	h.Pause = pause(t, gateway.EventHITL, map[string]any{"hitl": &hitl.HITL{Type: hitl.TypePlanConfirmation, Content: evil,
		Actions: []hitl.Action{{ID: `x" onclick="alert(4)`, Label: evil, Style: `primary" onclick="alert(5)`}}}}, "")
	hs.runs.add(h)

	b := hs.browser(t)
	b.login(tokAlice)
	for _, id := range []string{"r-evil", "r-evil-pause", "r-evil-hitl"} {
		body := b.get("/ui/runs/" + id).Body.String()
		wantLacks(t, body, "<script>alert", "<img src=x", `href="javascript:`, `onclick="alert`)
		wantContains(t, body, "&lt;script&gt;alert(")
	}
	if body := b.get("/ui/runs/r-evil-pause").Body.String(); !strings.Contains(body, "not an http or https link") {
		t.Errorf("a javascript: auth URL is not called out:\n%s", body)
	}
	if body := b.get("/ui/runs").Body.String(); strings.Contains(body, "<script>alert") {
		t.Errorf("the list shows a reason unescaped")
	}
}

// pause builds Run.Pause as the gateway keeps it.
func pause(t *testing.T, typ string, payload map[string]any, callID string) json.RawMessage {
	t.Helper()
	p, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"type": typ, "payload": json.RawMessage(p), "call_id": callID})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReplyBox(t *testing.T) {
	waiting := func(id string, p json.RawMessage) gateway.Run {
		r := newRun(id, "acme", "alice", gateway.StatusWaitingUser, t0)
		r.Pause = p
		return r
	}
	min := 2
	for _, tc := range []struct {
		name  string
		pause json.RawMessage
		shows []string
		lacks []string
	}{
		{name: "hitl question with actions", pause: pause(t, gateway.EventHITL, map[string]any{"content": "Which account?",
			"hitl": hitl.HITL{Type: hitl.TypeInputRequest, Content: "Which account?", InputType: hitl.InputEmail,
				Validation: &hitl.InputValidation{MinLength: &min, Placeholder: "name@acme"},
				Actions:    []hitl.Action{{ID: "submit", Label: "Pay", Style: "primary"}, {ID: "abort", Label: "Stop", Style: "danger"}}}}, ""),
			shows: []string{`data-kind="hitl"`, `id="pause-content" class="question">Which account?`, `type="email"`, `placeholder="name@acme"`,
				`name="action_id" value="submit" data-action="submit">Pay</button>`, `value="abort" data-action="abort">Stop</button>`, `name="input_value"`},
			lacks: []string{`id="send"`, `id="approve"`}},
		{name: "hitl select", pause: pause(t, gateway.EventHITL, map[string]any{"hitl": hitl.HITL{Type: hitl.TypeInputRequest, Content: "Region?",
			InputType: hitl.InputSelect, Validation: &hitl.InputValidation{Options: []map[string]string{{"value": "eu", "label": "Europe"}, {"value": "us"}}}}}, ""),
			shows: []string{`<select id="input_value" name="input_value"><option value="eu">Europe</option><option value="us">us</option></select>`, `id="send"`}},
		{name: "write confirmation", pause: pause(t, gateway.EventWriteConfirmationRequired, map[string]any{"content": "Send the email?",
			"tool_name": "mail.send", "call_id": "call-7", "write_confirmation": &hitl.WriteConfirmation{CallID: "call-7", ToolName: "mail.send",
				Extra: map[string]any{"to": "bob@acme"}}}, "call-7"),
			shows: []string{`data-kind="write"`, `<code id="pause-tool">mail.send</code>`, `id="pause-call">call-7`, `name="call_id" value="call-7"`,
				`id="approve" class="approve" type="submit" name="approved" value="true"`, `id="reject" class="deny" type="submit" name="approved" value="false"`, "bob@acme"}},
		{name: "oauth", pause: pause(t, gateway.EventOAuthRequired, map[string]any{"content": "Connect your calendar",
			"connector": "gcal", "auth_url": "https://auth.test/authorize?state=1&x=2"}, ""),
			shows: []string{`data-kind="oauth"`, `<strong id="pause-connector">gcal</strong>`,
				`<a id="auth-url" href="https://auth.test/authorize?state=1&amp;x=2" target="_blank" rel="noopener noreferrer">`, `name="input"`}},
		{name: "unknown pause", pause: json.RawMessage(`{"type":"custom.pause","payload":{"content":"Tell me more"}}`),
			shows: []string{`data-kind="text"`, `<textarea id="input" name="input"`}},
		{name: "no pause payload", pause: nil, shows: []string{`data-kind="text"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.runs.add(waiting("r-wait", tc.pause), statusEvent(gateway.StatusWaitingUser, "waiting for the user"))
			b := hs.browser(t)
			b.login(tokAlice)
			w := b.get("/ui/runs/r-wait")
			wantStatus(t, w, http.StatusOK)
			body := w.Body.String()
			wantContains(t, body, tc.shows...)
			wantContains(t, body, `id="reply"`, `action="/ui/runs/r-wait/reply"`, `id="cancel"`, "data-stream=")
			wantLacks(t, body, tc.lacks...)
			wantLacks(t, body, `http-equiv="refresh"`) // a reload would lose a typed answer
		})
	}
}

func TestCancelAndReply(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name      string
		run       string
		path      string
		form      url.Values
		wantTo    string
		wantFlash string
		wantReply *runspage.Reply
		cancelled bool
	}{
		{name: "cancel", run: "r-alice-2", path: "cancel", wantTo: "/ui/runs/r-alice-2", wantFlash: "Run cancelled.", cancelled: true},
		{name: "cancel an ended run: 409 as a message", run: "r-alice-1", path: "cancel", wantTo: "/ui/runs/r-alice-1",
			wantFlash: "Not cancelled: The run has ended: COMPLETED."},
		{name: "cancel another user's run", run: "r-bob-1", path: "cancel", wantTo: "/ui/runs", wantFlash: "Not cancelled: No such run that you may see"},
		{name: "reply to a hitl", run: "r-wait", path: "reply", form: url.Values{"action_id": {"submit"}, "input_value": {"savings"}},
			wantTo: "/ui/runs/r-wait", wantFlash: "Answer sent; the run continues.", wantReply: &runspage.Reply{ActionID: "submit", InputValue: "savings"}},
		{name: "approve a write", run: "r-wait", path: "reply", form: url.Values{"call_id": {"call-7"}, "approved": {"true"}},
			wantTo: "/ui/runs/r-wait", wantFlash: "Answer sent", wantReply: &runspage.Reply{CallID: "call-7", Approved: &yes}},
		{name: "reject a write", run: "r-wait", path: "reply", form: url.Values{"call_id": {"call-7"}, "approved": {"false"}},
			wantTo: "/ui/runs/r-wait", wantFlash: "Answer sent", wantReply: &runspage.Reply{CallID: "call-7", Approved: &no}},
		{name: "approved is neither", run: "r-wait", path: "reply", form: url.Values{"approved": {"maybe"}},
			wantTo: "/ui/runs/r-wait", wantFlash: "Not sent: approved is true or false."},
		{name: "reply to a run that moved on: 409 as a message", run: "r-alice-2", path: "reply", form: url.Values{"input": {"late"}},
			wantTo: "/ui/runs/r-alice-2", wantFlash: "Not sent: The run waits for no answer: it is RUNNING.", wantReply: &runspage.Reply{Input: "late"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs := newHarness(t, nil)
			hs.runs.add(newRun("r-wait", "acme", "alice", gateway.StatusWaitingUser, t0))
			b := hs.browser(t)
			b.login(tokAlice)
			f := url.Values{"csrf": {b.csrf()}}
			for k, v := range tc.form {
				f[k] = v
			}
			w := b.post("/ui/runs/"+tc.run+"/"+tc.path, f)
			wantStatus(t, w, http.StatusSeeOther)
			if got := w.Header().Get("Location"); got != tc.wantTo {
				t.Errorf("redirect to %q, want %q", got, tc.wantTo)
			}
			page := b.get(tc.wantTo)
			wantStatus(t, page, http.StatusOK)
			flash := regexp.MustCompile(`id="flash"[^>]*>([^<]*)<`).FindStringSubmatch(page.Body.String())
			if flash == nil || !strings.Contains(flash[1], tc.wantFlash) {
				t.Errorf("flash %v, want %q", flash, tc.wantFlash)
			}
			if got := len(hs.runs.cancels) == 1 && tc.path == "cancel" && tc.cancelled; got != tc.cancelled {
				t.Errorf("cancels %v", hs.runs.cancels)
			}
			var got *runspage.Reply
			if len(hs.runs.replies) == 1 {
				got = &hs.runs.replies[0].Reply
				if hs.runs.replies[0].Actor != "alice@acme" {
					t.Errorf("replied as %q", hs.runs.replies[0].Actor)
				}
			}
			if diff := cmp.Diff(tc.wantReply, got); diff != "" {
				t.Errorf("Reply (-want +got):\n%s", diff)
			}
			if strings.Contains(hs.logs.String(), "level=ERROR") {
				t.Errorf("a refusal was logged as an error:\n%s", hs.logs)
			}
		})
	}
}

func TestGatewayFailure(t *testing.T) {
	hs := newHarness(t, nil)
	hs.runs.listError = errSecretDetail
	b := hs.browser(t)
	b.login(tokAlice)
	w := b.get("/ui/runs")
	wantStatus(t, w, http.StatusInternalServerError)
	wantLacks(t, w.Body.String(), "secret-detail")
	if !strings.Contains(hs.logs.String(), "secret-detail") {
		t.Errorf("the failure is not logged:\n%s", hs.logs)
	}
}

type secretErr struct{}

func (secretErr) Error() string { return "database said secret-detail" }

var errSecretDetail error = secretErr{}

func TestRouting(t *testing.T) {
	hs := newHarness(t, nil)
	b := hs.browser(t)
	b.login(tokAlice)
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/ui/runs/static/runs.js", 200, "text/javascript; charset=utf-8"},
		{"HEAD", "/ui/runs/static/runs.css", 200, "text/css; charset=utf-8"},
		{"GET", "/ui/runs/static/nope.js", 404, ""},
		{"GET", "/ui/runsx", 404, ""},
		{"GET", "/elsewhere", 404, ""},
		{"DELETE", "/ui/runs/r-alice-1", 405, ""},
		{"GET", "/ui/runs/r-alice-1/cancel", 404, ""},
		{"HEAD", "/ui/runs/r-alice-2/events", 404, ""},
		{"GET", "/ui/runs/r-alice-1/what", 404, ""},
		{"GET", "/ui/runs/%2F", 404, ""},
		{"GET", "/ui/runs/r-alice-1", 200, "text/html; charset=utf-8"},
	} {
		w := b.do(tc.method, tc.path, nil, nil)
		if w.Code != tc.status || tc.ctype != "" && w.Header().Get("Content-Type") != tc.ctype {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, w.Code, w.Header().Get("Content-Type"), tc.status, tc.ctype)
		}
		if w.Header().Get("X-Frame-Options") != "DENY" || w.Header().Get("Cache-Control") == "" {
			t.Errorf("%s %s: safety headers missing: %v", tc.method, tc.path, w.Header())
		}
	}
	w := b.post("/ui/runs", url.Values{"csrf": {b.csrf()}})
	wantStatus(t, w, http.StatusNotFound)
}
