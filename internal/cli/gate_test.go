package cli

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/secret"
)

// gateFixture is a novaos serve on SQLite with an admin token, a platform
// token of tenant t1 holding every gate scope, and a rule set that holds
// refunds over 100.
type gateFixture struct {
	base, data string
	token      string // the platform token
	tokenFile  string
	outputs    []string // everything the commands printed, for noGateToken
}

const gateRules = `{"rules": [
  {"id": "big-refund", "text": "Hold refunds over 100 for a person.", "when": "ctx.amount > 100", "verdict": "hold"},
  {"id": "explain", "text": "A refund must cite the order it refunds."}
]}`

func newGateFixture(t *testing.T, serveArgs ...string) *gateFixture {
	t.Helper()
	f := &gateFixture{data: t.TempDir()}
	f.base, _, _ = serveFor(t, map[string]string{EnvAdminToken: testToken}, append([]string{"--data", f.data}, serveArgs...)...)
	code, tok, stderr := runCmd(t, "token", "mint", "--data", f.data, "--issuer", f.base, "--tenant", "t1", "--agent", "op",
		"--scopes", strings.Join([]string{gate.ScopeSubmit, gate.ScopeOperate, gate.ScopeAdmin}, ","))
	if code != exitOK {
		t.Fatalf("token mint: %d %s", code, stderr)
	}
	f.token = strings.TrimSpace(tok)
	f.tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(f.tokenFile, []byte(f.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(gateRules), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := f.run(t, nil, "gate", "rules", "put", rules, "--url", f.base, "--token-file", f.tokenFile); code != exitOK || !strings.Contains(out, "stored rule set version 1 for tenant t1: 2 rules") {
		t.Fatalf("rules put: %d %q %q", code, out, errOut)
	}
	return f
}

// run runs a novaos command with vars as its environment.
func (f *gateFixture) run(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	e, out, errOut := testEnv(vars)
	code = run(t.Context(), args, e)
	f.outputs = append(f.outputs, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// api calls the gate's HTTP API with the platform token.
func (f *gateFixture) api(t *testing.T, path string, body any, out any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.base+gate.APIPath+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s: %d: %v", path, resp.StatusCode, err)
		}
	}
	return resp.StatusCode
}

// submit opens session (once) and submits a refund of amount as action.
func (f *gateFixture) submit(t *testing.T, session, action string, amount float64) gate.Verdict {
	t.Helper()
	if code := f.api(t, "/sessions", gate.SessionRequest{TenantID: "t1", TeamID: "ops", AgentID: "op", SessionID: session, MaxHoldS: 3600}, nil); code != http.StatusCreated && code != http.StatusOK {
		// A second submit in the session finds it open: 409 is fine.
		if code != http.StatusConflict {
			t.Fatalf("open session %s: %d", session, code)
		}
	}
	now := time.Now().UTC()
	a := gate.Action{ActionID: action, ActionType: "refund", TenantID: "t1", TeamID: "ops", AgentID: "op", SessionID: session,
		Context: gate.GenericContext{RecordID: "order-" + action, Amount: &amount, Summary: "refund order " + action},
		Evidence: []gate.Evidence{{Tool: "orders.get", Arguments: json.RawMessage(`{"id":"order-` + action + `"}`),
			Result: json.RawMessage(`{"status":"returned"}`), Provenance: gate.Provenance{Sequence: 1, CallID: "call-1", ObservedAt: now}}},
		Reasoning: "the customer returned the goods",
	}
	var v gate.Verdict
	if code := f.api(t, "/actions", a, &v); code != http.StatusOK {
		t.Fatalf("submit %s: %d %+v", action, code, v)
	}
	return v
}

// record reads an action's state through the public client.
func (f *gateFixture) record(t *testing.T, session, action string) *gate.ActionRecord {
	t.Helper()
	c, err := gate.NewClient(gate.Config{URL: f.base, Token: secret.New(f.token)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Action(t.Context(), session, action)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// noGateToken fails the test when any command's output shows the
// platform or the admin token.
func (f *gateFixture) noGateToken(t *testing.T) {
	t.Helper()
	sig := f.token[strings.LastIndex(f.token, ".")+1:]
	for _, s := range f.outputs {
		if strings.Contains(s, sig) || strings.Contains(s, testToken[4:]) {
			t.Error("a command's output shows a token")
		}
	}
}

func TestGateOperatorCommands(t *testing.T) {
	// Every claim is past a 1ns claim timeout by the next request, so an
	// unacknowledged one is the operator's at once (TestGateConfirmLiveClaim
	// covers a live one).
	f := newGateFixture(t, "--gate-claim-timeout", "1ns")
	for _, a := range []string{"a1", "a2", "a3"} {
		if v := f.submit(t, "s1", a, 250); v.Verdict != gate.Hold || v.RuleIDCited != "big-refund" {
			t.Fatalf("submit %s: %+v, want a hold citing big-refund", a, v)
		}
	}
	if v := f.submit(t, "s1", "small", 20); v.Verdict != gate.Pass {
		t.Fatalf("submit small: %+v, want pass", v)
	}
	plat := []string{"--token-file", f.tokenFile}
	admin := map[string]string{EnvAdminToken: testToken}
	tests := []struct {
		name       string
		vars       map[string]string
		args       []string
		wantCode   int
		wantStdout []string // substrings, in any order
		wantStderr string
		notStdout  string
	}{
		{"list the held actions", nil, append([]string{"gate", "list"}, plat...), exitOK,
			[]string{"TYPE", "SESSION", "ACTION", "STATE", "HOLD LEFT", "RULE", "AGENT", "refund", "s1", "a1", "a2", "a3", "PAUSED", "big-refund", "op"}, "", "small"},
		{"a platform token lists without the tenant column", map[string]string{EnvToken: f.token}, []string{"gate", "list"}, exitOK,
			[]string{"a1"}, "", "TENANT"},
		{"the admin token lists every tenant", admin, []string{"gate", "list"}, exitOK,
			[]string{"TENANT", "t1", "a1"}, "", ""},
		{"passed actions on request", nil, append([]string{"gate", "list", "--state", "passed"}, plat...), exitOK,
			[]string{"small", "PASSED"}, "", "a1"},
		{"show", nil, append([]string{"gate", "show", "s1", "a1"}, plat...), exitOK,
			[]string{"refund a1", "tenant t1, team ops, agent op", "PAUSED", "hold, citing rule big-refund", "window 15m0s",
				"left)", "Context (generic)", `"amount": 250`, "the customer returned the goods", "#1 orders.get", "call call-1",
				`{"id":"order-a1"}`, `{"status":"returned"}`, "rule set version 1", "matched big-refund → hold: Hold refunds over 100 for a person.",
				"Fingerprint:"}, "", ""},
		{"show with the admin token", admin, []string{"gate", "show", "s1", "a1", "--tenant", "t1"}, exitOK,
			[]string{"refund a1"}, "", ""},
		{"show an unknown action", nil, append([]string{"gate", "show", "s1", "nope"}, plat...), exitFail,
			nil, "novaos gate show: 404 Not Found", ""},
		{"approve", nil, append([]string{"gate", "approve", "s1", "a1", "--note", "checked the return"}, plat...), exitOK,
			[]string{"approved refund a1 in session s1: now APPROVED"}, "", ""},
		{"deny", admin, []string{"gate", "deny", "s1", "a2", "--tenant", "t1"}, exitOK,
			[]string{"denied refund a2 in session s1: now DENIED"}, "", ""},
		{"approve a denied action", nil, append([]string{"gate", "approve", "s1", "a2"}, plat...), exitFail,
			nil, "novaos gate approve: 409 Conflict: the action is denied, not held\n", ""},
		{"confirm an action never claimed", nil, append([]string{"gate", "confirm", "s1", "a3", "--executed"}, plat...), exitFail,
			nil, "409 Conflict: the action is held, not unconfirmed", ""},
		{"a wrong token", map[string]string{EnvToken: f.token + "x"}, []string{"gate", "list", "--url", f.base}, exitFail,
			nil, "novaos gate list: 401", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "--url", f.base)
			code, out, errOut := f.run(t, tt.vars, args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q", code, tt.wantCode, redact(out, f.token), redact(errOut, f.token))
			}
			for _, s := range tt.wantStdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			if tt.notStdout != "" && strings.Contains(out, tt.notStdout) {
				t.Errorf("stdout holds %q:\n%s", tt.notStdout, out)
			}
			if !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("stderr %q, want %q", redact(errOut, f.token), tt.wantStderr)
			}
			if tt.wantCode == exitFail && strings.Count(errOut, "\n") != 1 {
				t.Errorf("the error takes %d lines, want one: %q", strings.Count(errOut, "\n"), errOut)
			}
		})
	}
	if r := f.record(t, "s1", "a1"); r.State != gate.ActionApproved || r.DecidedBy != "op" {
		t.Errorf("a1 after approve: %s by %q, want approved by op", r.State, r.DecidedBy)
	}
	if r := f.record(t, "s1", "a2"); r.State != gate.ActionDenied || r.Reason != gate.ReasonOperatorDenied {
		t.Errorf("a2 after deny: %s %s, want denied", r.State, r.Reason)
	}

	// The approved action is claimed, then claimed again without its
	// acknowledgement past the claim timeout: it is unconfirmed, for an
	// operator to settle.
	for range 2 {
		var cl gate.Claim
		if code := f.api(t, "/claims", gate.ClaimRequest{SessionID: "s1", ActionID: "a1"}, &cl); code != http.StatusOK {
			t.Fatalf("claim: %d %+v", code, cl)
		}
	}
	code, out, _ := f.run(t, nil, "gate", "list", "--state", "unconfirmed", "--url", f.base, "--token-file", f.tokenFile)
	if code != exitOK || !strings.Contains(out, "UNCONFIRMED") || !strings.Contains(out, "a1") {
		t.Fatalf("list unconfirmed: %d\n%s", code, out)
	}
	code, out, errOut := f.run(t, nil, "gate", "confirm", "s1", "a1", "--not-executed", "--url", f.base, "--token-file", f.tokenFile)
	if code != exitOK || !strings.Contains(out, "confirmed not executed: refund a1 in session s1: now APPROVED") {
		t.Fatalf("confirm --not-executed: %d %q %q", code, out, errOut)
	}
	f.api(t, "/claims", gate.ClaimRequest{SessionID: "s1", ActionID: "a1"}, nil)
	code, out, errOut = f.run(t, nil, "gate", "confirm", "s1", "a1", "--executed", "--note", "saw it in the ledger", "--json", "--url", f.base, "--token-file", f.tokenFile)
	var rec gate.ActionRecord
	if code != exitOK || json.Unmarshal([]byte(out), &rec) != nil || rec.State != gate.ActionExecuted {
		t.Fatalf("confirm --executed --json: %d %q %q", code, out, errOut)
	}
	if r := f.record(t, "s1", "a1"); r.State != gate.ActionExecuted || r.FencingToken != 2 {
		t.Errorf("a1 after confirm: %s, fencing token %d; want executed, 2", r.State, r.FencingToken)
	}

	code, out, _ = f.run(t, nil, "gate", "list", "--json", "--url", f.base, "--token-file", f.tokenFile)
	var list gate.ActionList
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Actions) != 1 || list.Actions[0].ActionID != "a3" {
		t.Errorf("list --json after the decisions: %d\n%s\nwant a3 alone", code, out)
	}
	f.noGateToken(t)
}

// A listing longer than the server's page (100) ends with a note, and
// --all follows the pages. (--limit is not exercised: the server reads
// its page size from ?pageSize=, not the ?limit= the API documents and the
// client sends.)
func TestGateListPages(t *testing.T) {
	f := newGateFixture(t)
	const n = 101
	for i := range n {
		f.submit(t, "s-many", fmt.Sprintf("a%03d", i), 250)
	}
	for _, tt := range []struct {
		all        bool
		rows       int
		wantStderr string
	}{
		{false, 100, "more actions follow: give --all to list them all\n"},
		{true, n, ""},
	} {
		args := []string{"gate", "list", "--url", f.base, "--token-file", f.tokenFile}
		if tt.all {
			args = append(args, "--all")
		}
		code, out, errOut := f.run(t, nil, args...)
		rows := strings.Count(out, "\n") - 1 // the header
		if code != exitOK || rows != tt.rows || errOut != tt.wantStderr {
			t.Errorf("list --all=%t: exit %d, %d rows, stderr %q; want %d rows, stderr %q", tt.all, code, rows, errOut, tt.rows, tt.wantStderr)
		}
		if tt.all && !strings.Contains(out, fmt.Sprintf("a%03d", n-1)) {
			t.Errorf("list --all lacks the last action")
		}
	}
}

func TestGateRules(t *testing.T) {
	f := newGateFixture(t)
	plat := []string{"--url", f.base, "--token-file", f.tokenFile}
	shadow := filepath.Join(t.TempDir(), "shadow.json")
	os.WriteFile(shadow, []byte(`{"shadow": true, "rules": [{"id": "all", "text": "Hold everything.", "when": "true", "verdict": "hold"}]}`), 0o600)
	typo := filepath.Join(t.TempDir(), "typo.json")
	os.WriteFile(typo, []byte(`{"rulez": []}`), 0o600)
	badCEL := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(badCEL, []byte(`{"rules": [{"id": "x", "text": "x", "when": "nosuchvar > 1", "verdict": "hold"}]}`), 0o600)
	tests := []struct {
		name       string
		vars       map[string]string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"get the current set", nil, append([]string{"gate", "rules", "get"}, plat...), exitOK, `"id": "big-refund"`, "rule set version 1 of tenant t1, hash "},
		{"put a shadow set", nil, append([]string{"gate", "rules", "put", shadow}, plat...), exitOK, "stored rule set version 2 for tenant t1: 1 rules, 0 aggregates, shadow (log-only)", ""},
		{"get the shadow set", nil, append([]string{"gate", "rules", "get", "--json"}, plat...), exitOK, `"version": 2`, ""},
		{"get an older version", nil, append([]string{"gate", "rules", "get", "--version", "1"}, plat...), exitOK, `"text": "A refund must cite the order it refunds."`, "version 1"},
		{"the admin token names the tenant", map[string]string{EnvAdminToken: testToken}, []string{"gate", "rules", "get", "--tenant", "t1", "--url", f.base}, exitOK, `"shadow": true`, ""},
		{"a misspelt member", nil, append([]string{"gate", "rules", "put", typo}, plat...), exitFail, "", `unknown field "rulez"`},
		{"a condition that does not compile", nil, append([]string{"gate", "rules", "put", badCEL}, plat...), exitFail, "", "novaos gate rules put: 400 Bad Request: "},
		{"a missing file", nil, append([]string{"gate", "rules", "put", filepath.Join(t.TempDir(), "nope.json")}, plat...), exitFail, "", "no such file"},
		{"an unknown version", nil, append([]string{"gate", "rules", "get", "--version", "9"}, plat...), exitFail, "", "404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := f.run(t, tt.vars, tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.wantStdout) || !strings.Contains(errOut, tt.wantStderr) {
				t.Errorf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", code, tt.wantCode, out, tt.wantStdout, errOut, tt.wantStderr)
			}
		})
	}

	// Under the shadow set a write passes, and show says what the set
	// would have done.
	if v := f.submit(t, "s1", "shadowed", 5); v.Verdict != gate.Pass || !v.Shadow {
		t.Fatalf("submit under a shadow set: %+v", v)
	}
	code, out, _ := f.run(t, nil, append([]string{"gate", "show", "s1", "shadowed"}, plat...)...)
	if code != exitOK || !strings.Contains(out, "shadow (log-only) rule set: it would have decided hold; pass was enforced") ||
		!strings.Contains(out, "matched all → hold: Hold everything.") {
		t.Errorf("show a shadowed write: %d\n%s", code, out)
	}

	// What rules get prints, rules put takes back, from standard input.
	code, doc, _ := f.run(t, nil, append([]string{"gate", "rules", "get", "--version", "1"}, plat...)...)
	if code != exitOK {
		t.Fatal("rules get failed")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = stdin }()
	go func() { w.WriteString(doc); w.Close() }()
	code, out, errOut := f.run(t, nil, append([]string{"gate", "rules", "put", "-"}, plat...)...)
	if code != exitOK || !strings.Contains(out, "stored rule set version 3 for tenant t1: 2 rules") {
		t.Errorf("rules put -: %d %q %q", code, out, errOut)
	}
	f.noGateToken(t)
}

// show gives the judge's part of a decision, here a judge that cannot be
// reached under a log-only rule set: the write passed, and show says it
// would have failed closed. (Under an enforcing set such a kill leaves no
// record to show: the gate could not decide, so a retry is judged afresh.)
func TestGateShowJudgeFailure(t *testing.T) {
	f := newGateFixture(t, "--gate-judge-url", "http://127.0.0.1:1", "--gate-judge-model", "judge-m", "--gate-judge-timeout", "2s")
	rules := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(rules, []byte(`{"shadow":true,"rules":[{"id":"r1","text":"Refunds need a receipt."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := f.run(t, nil, "gate", "rules", "put", rules, "--url", f.base, "--token-file", f.tokenFile); code != exitOK {
		t.Fatalf("rules put: %s", errOut)
	}
	if v := f.submit(t, "s1", "a1", 5); v.Verdict != gate.Pass || !v.Shadow {
		t.Fatalf("submit with the judge down under a shadow set: %+v, want a shadow pass", v)
	}
	code, out, errOut := f.run(t, nil, "gate", "show", "s1", "a1", "--url", f.base, "--token-file", f.tokenFile)
	for _, want := range []string{"judge: judge-m (prompt ", "failure: fail_closed_judge_", "(it would have failed closed; the rule set is log-only)"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("show: %d, stdout lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
}

func TestGateAuditVerify(t *testing.T) {
	f := newGateFixture(t)
	f.submit(t, "s1", "a1", 250)
	f.submit(t, "s1", "a2", 250)
	if code, _, errOut := f.run(t, nil, "gate", "approve", "s1", "a1", "--url", f.base, "--token-file", f.tokenFile); code != exitOK {
		t.Fatalf("approve: %s", errOut)
	}
	admin := map[string]string{EnvAdminToken: testToken}
	verify := func(t *testing.T) (int, string, string) {
		t.Helper()
		return f.run(t, admin, "gate", "audit", "verify", "--url", f.base)
	}
	code, out, errOut := verify(t)
	m := regexp.MustCompile(`^audit chain verified: (\d+) entries, head ([0-9a-f]{64})\n$`).FindStringSubmatch(out)
	if code != exitOK || m == nil || m[1] == "0" {
		t.Fatalf("verify: %d %q %q", code, out, errOut)
	}

	// The chain is append-only in the schema; whoever can write the file
	// can drop the triggers, and verify still notices.
	u := neturl.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(f.data, app.DatabaseFile)), RawQuery: "_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DROP TRIGGER gate_audit_no_update`, `DROP TRIGGER gate_audit_no_delete`} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	var body []byte
	if err := db.QueryRowContext(t.Context(), `SELECT body FROM gate_audit WHERE seq = 2`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	altered := bytes.Replace(body, []byte("t1"), []byte("t2"), 1)
	if bytes.Equal(altered, body) {
		altered = append([]byte(`{"x":1,`), body[1:]...)
	}
	tamper := []struct {
		name, sql  string
		args       []any
		wantStderr string
	}{
		{"an altered entry", `UPDATE gate_audit SET body = ? WHERE seq = 2`, []any{altered}, "audit chain broken at seq 2: "},
		{"the entry restored", `UPDATE gate_audit SET body = ? WHERE seq = 2`, []any{body}, ""},
		{"the last entry removed", `DELETE FROM gate_audit WHERE seq = (SELECT MAX(seq) FROM gate_audit)`, nil, "audit chain broken at seq " + m[1] + ": "},
	}
	for _, tt := range tamper {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.ExecContext(t.Context(), tt.sql, tt.args...); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := verify(t)
			if tt.wantStderr == "" {
				if code != exitOK || out != "audit chain verified: "+m[1]+" entries, head "+m[2]+"\n" {
					t.Errorf("verify: %d %q %q, want the first answer again", code, out, errOut)
				}
				return
			}
			if code != exitFail || out != "" || !strings.HasPrefix(errOut, "novaos gate audit verify: "+tt.wantStderr) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("verify: %d %q %q, want exit 1 and %q", code, out, errOut, tt.wantStderr)
			}
		})
	}

	// The audit chain spans tenants: a platform token is refused before
	// anything is sent.
	code, _, errOut = f.run(t, nil, "gate", "audit", "verify", "--url", f.base, "--token-file", f.tokenFile)
	if code != exitUsage || !strings.Contains(errOut, "needs the server's admin token") {
		t.Errorf("verify with a platform token: %d %q", code, errOut)
	}
	f.noGateToken(t)
}

// Without an admin token, the server takes a tokenless caller on its own
// machine as its admin, and so does novaos gate.
func TestGateLoopbackAdmin(t *testing.T) {
	base, _, _ := serveFor(t, nil)
	f := &gateFixture{base: base}
	code, out, errOut := f.run(t, nil, "gate", "audit", "verify", "--url", base)
	if code != exitOK || !strings.HasPrefix(out, "audit chain verified: ") {
		t.Fatalf("audit verify on loopback: %d %q %q", code, out, errOut)
	}
	code, out, errOut = f.run(t, map[string]string{gate.URLEnv: base}, "gate", "list")
	if code != exitOK || !strings.Contains(out, "TENANT") {
		t.Errorf("list on loopback from $%s: %d %q %q", gate.URLEnv, code, out, errOut)
	}
}

func TestGateUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("eyJhbGciOiJFUzI1NiJ9.e30.c2ln\n"), 0o600)
	emptyFile := filepath.Join(dir, "empty")
	os.WriteFile(emptyFile, nil, 0o600)
	// Nothing listens here: every case must stop before a request.
	url := "http://127.0.0.1:1"
	tests := []struct {
		name       string
		vars       map[string]string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"no subcommand", nil, []string{"gate"}, exitUsage, "Usage: novaos gate <subcommand>"},
		{"unknown subcommand", nil, []string{"gate", "frob"}, exitUsage, `unknown subcommand "frob"`},
		{"help", nil, []string{"gate", "-h"}, exitOK, ""},
		{"show without the action", nil, []string{"gate", "show", "s1", "--url", url}, exitUsage, "want the session id and the action id, got 1"},
		{"approve with three ids", nil, []string{"gate", "approve", "s1", "a1", "x", "--url", url}, exitUsage, "got 3 arguments"},
		{"confirm without an outcome", nil, []string{"gate", "confirm", "s1", "a1", "--url", url, "--token-file", tokenFile}, exitUsage, "give --executed or --not-executed"},
		{"confirm with both outcomes", nil, []string{"gate", "confirm", "s1", "a1", "--executed", "--not-executed", "--url", url}, exitUsage, "give --executed or --not-executed"},
		{"an unknown state", nil, []string{"gate", "list", "--state", "held,paused", "--url", url}, exitUsage, `--state: "paused" is not one of`},
		{"a page too large", nil, []string{"gate", "list", "--limit", "501", "--url", url}, exitUsage, "--limit: want 1 to 500"},
		{"both token files", nil, []string{"gate", "list", "--token-file", tokenFile, "--admin-token-file", tokenFile, "--url", url}, exitUsage, "not both"},
		{"tenant with a platform token", nil, []string{"gate", "list", "--token-file", tokenFile, "--tenant", "t1", "--url", url}, exitUsage, "--tenant is for the admin token"},
		{"the admin token without a tenant", map[string]string{EnvAdminToken: testToken}, []string{"gate", "show", "s1", "a1", "--url", url}, exitUsage, "name one with --tenant"},
		{"audit with a platform token", map[string]string{EnvToken: "eyJ.e30.c2ln"}, []string{"gate", "audit", "verify", "--url", url}, exitUsage, "needs the server's admin token"},
		{"no token for a remote server", nil, []string{"gate", "list", "--url", "https://gate.example.com"}, exitUsage, "no token: set $NOVAOS_TOKEN"},
		{"a URL with credentials", nil, []string{"gate", "list", "--url", "https://u:pw@gate.example.com"}, exitUsage, "--url: want an absolute http(s) URL without user information"},
		// seed 000, novaos_client_sdk.config.validate_host_allowed: a
		// configured allow-list refuses a host it does not cover.
		{"a host NOVAOS_ALLOWED_HOSTS does not cover", map[string]string{"NOVAOS_ALLOWED_HOSTS": "gate.example.com"}, []string{"gate", "list", "--token-file", tokenFile, "--url", url}, exitFail, `host not in the allowed hosts: "127.0.0.1"`},
		{"an empty token file", nil, []string{"gate", "list", "--token-file", emptyFile, "--url", url}, exitFail, "is empty"},
		{"rules put without a file", nil, []string{"gate", "rules", "put", "--url", url}, exitUsage, "want the rule set file"},
		{"rules with no subcommand", nil, []string{"gate", "rules"}, exitUsage, "Usage: novaos gate rules <subcommand>"},
		{"audit verify with json", nil, []string{"gate", "audit", "verify", "--json"}, exitUsage, "flag provided but not defined: -json"},
		{"help lists gate", nil, []string{"help"}, exitOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, out, errOut := testEnv(tt.vars)
			code := run(t.Context(), tt.args, e)
			if code != tt.wantCode || !strings.Contains(errOut.String(), tt.wantStderr) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tt.wantCode, redact(errOut.String()), tt.wantStderr)
			}
			if tt.name == "help lists gate" && !strings.Contains(out.String(), "  gate ") {
				t.Errorf("help does not list gate:\n%s", out)
			}
			if strings.Contains(out.String()+errOut.String(), "c2ln") || strings.Contains(out.String()+errOut.String(), testToken[4:]) {
				t.Error("the output shows a token")
			}
		})
	}
}

// A claim within the claim timeout may still be running: a duplicate
// claim leaves it off the operator's list, and confirming it either way
// is refused (409), so no second claim can be granted.
func TestGateConfirmLiveClaim(t *testing.T) {
	f := newGateFixture(t)
	if v := f.submit(t, "s1", "a1", 20); v.Verdict != gate.Pass {
		t.Fatalf("submit: %+v, want a pass", v)
	}
	for i := range 2 {
		var cl gate.Claim
		if code := f.api(t, "/claims", gate.ClaimRequest{SessionID: "s1", ActionID: "a1"}, &cl); code != http.StatusOK {
			t.Fatalf("claim %d: %d %+v", i, code, cl)
		}
		if want := []gate.ClaimStatus{gate.ClaimGranted, gate.ClaimExecutionUnconfirmed}[i]; cl.Status != want {
			t.Fatalf("claim %d: %s, want %s", i, cl.Status, want)
		}
	}
	code, out, _ := f.run(t, nil, "gate", "list", "--state", "unconfirmed", "--url", f.base, "--token-file", f.tokenFile)
	if code != exitOK || strings.Contains(out, "a1") {
		t.Fatalf("list unconfirmed during a live claim: %d\n%s", code, out)
	}
	for _, flag := range []string{"--not-executed", "--executed"} {
		code, _, errOut := f.run(t, nil, "gate", "confirm", "s1", "a1", flag, "--url", f.base, "--token-file", f.tokenFile)
		if code != exitFail || !strings.Contains(errOut, "409 Conflict") || !strings.Contains(errOut, "claim timeout") {
			t.Fatalf("confirm %s on a live claim: %d %q", flag, code, errOut)
		}
	}
	if r := f.record(t, "s1", "a1"); r.State != gate.ActionClaimed || r.FencingToken != 1 {
		t.Fatalf("a1: %s with token %d, want still claimed with token 1", r.State, r.FencingToken)
	}
}
