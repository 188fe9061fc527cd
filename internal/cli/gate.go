package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	neturl "net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/gatesvc"
	"novaos.dev/novaos/secret"
)

var gateCommands = []command{
	{"list", "actions waiting for an operator: gate list [--state held,unconfirmed] [--limit N] [--all]", runGateList},
	{"show", "everything a reviewer needs about one action: gate show SESSION ACTION", runGateShow},
	{"approve", "let a held action run: gate approve SESSION ACTION [--note TEXT]", runGateApprove},
	{"deny", "refuse a held action for good: gate deny SESSION ACTION [--note TEXT]", runGateDeny},
	{"confirm", "settle an unconfirmed write: gate confirm SESSION ACTION --executed|--not-executed", runGateConfirm},
	{"rules", "the tenant's rule set: gate rules put FILE | gate rules get [--version N]", runGateRules},
	{"audit", "check the hash-chained audit log: gate audit verify", runGateAudit},
}

func runGate(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "gate", gateCommands, args, e)
}

// gateCmdFlags are the flags every gate subcommand has: where the gate is
// and what it is called with.
type gateCmdFlags struct {
	fs                   *flag.FlagSet
	url                  *string
	tokenFile, adminFile *string
	tenant               *string
	json                 *bool
	e                    *env
}

func newGateFlags(sub, synopsis string, e *env) *gateCmdFlags {
	g := newGateFlagsNoJSON(sub, synopsis, e)
	g.json = g.fs.Bool("json", false, "print the server's answer as JSON")
	return g
}

// newGateFlagsNoJSON is newGateFlags for a command whose answer is not a
// document.
func newGateFlagsNoJSON(sub, synopsis string, e *env) *gateCmdFlags {
	fs := newFlags("gate "+sub, "gate "+sub+" "+synopsis+" [--url URL] [--token-file FILE | --admin-token-file FILE [--tenant T]]", e)
	return &gateCmdFlags{
		fs:        fs,
		e:         e,
		url:       fs.String("url", "", "NovaOS server `URL` (default $"+gate.URLEnv+", else $"+EnvServer+", else "+DefaultServer+")"),
		tokenFile: fs.String("token-file", "", "`file` holding a platform token with the scope "+gate.ScopeOperate+" (rules: "+gate.ScopeAdmin+"); default $"+EnvToken),
		adminFile: fs.String("admin-token-file", "", "`file` holding the server's admin token, which acts for every tenant (default $"+EnvAdminToken+"); with no token at all, a server without an admin token takes a caller on its own machine as its admin"),
		tenant:    fs.String("tenant", "", "tenant `id` the admin token acts for (a platform token names its own)"),
		json:      new(bool),
	}
}

// parse reads args (flags may follow the arguments) and wants exactly n
// positional arguments named by what.
func (g *gateCmdFlags) parse(args []string, n int, what string) ([]string, int, bool) {
	pos, code, ok := parseArgs(g.fs, args)
	if !ok {
		return nil, code, false
	}
	if len(pos) != n {
		if n == 0 {
			return nil, usageError(g.fs, "unexpected argument %q", pos[0]), false
		}
		return nil, usageError(g.fs, "want %s, got %d arguments", what, len(pos)), false
	}
	return pos, 0, true
}

// credential is what a gate command authenticates with.
type credential int

const (
	credLoopback credential = iota // no token: the server's loopback rule
	credPlatform                   // a platform token with gate scopes
	credAdmin                      // the server's admin token
)

// gateNeed says what a subcommand requires of its caller.
type gateNeed struct {
	// admin: only the server's admin token (or loopback) will do.
	admin bool
	// tenant: with the admin token, --tenant is required.
	tenant bool
}

// client returns a gate client and the credential it sends, or the exit
// code of a usage or configuration error it has reported.
//
// Flags win over the environment. With both $NOVAOS_TOKEN and
// $NOVAOS_ADMIN_TOKEN set, the platform token is sent unless the command
// needs the admin token or --tenant says the caller acts as the admin.
func (g *gateCmdFlags) client(need gateNeed) (*gate.Client, credential, int, bool) {
	e, fail := g.e, func(err error) (*gate.Client, credential, int, bool) {
		fmt.Fprintf(g.e.stderr, "novaos %s: %v\n", g.fs.Name(), err)
		return nil, 0, exitFail, false
	}
	usage := func(format string, a ...any) (*gate.Client, credential, int, bool) {
		return nil, 0, usageError(g.fs, format, a...), false
	}
	base := *g.url
	if base == "" {
		base = e.getenv(gate.URLEnv)
	}
	if base == "" {
		base = defaultServer(e)
	}
	u, err := neturl.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// Not the URL itself: it may carry credentials.
		return usage("--url: want an absolute http(s) URL without user information")
	}
	if *g.tokenFile != "" && *g.adminFile != "" {
		return usage("give --token-file or --admin-token-file, not both")
	}
	var tok secret.Value
	cred := credLoopback
	switch {
	case *g.adminFile != "":
		if tok, err = adminToken(*g.adminFile, e); err != nil {
			return fail(err)
		}
		cred = credAdmin
	case *g.tokenFile != "":
		if tok, err = platformToken(*g.tokenFile); err != nil {
			return fail(err)
		}
		cred = credPlatform
	default:
		adm, err := adminToken("", e)
		if err != nil {
			return fail(err)
		}
		plat := secret.New(bearerless(e.getenv(EnvToken)))
		switch {
		case !adm.IsZero() && (need.admin || *g.tenant != "" || plat.IsZero()):
			tok, cred = adm, credAdmin
		case !plat.IsZero():
			tok, cred = plat, credPlatform
		}
	}
	switch {
	case cred == credPlatform && need.admin:
		return usage("this needs the server's admin token (--admin-token-file or $%s): the audit chain spans tenants", EnvAdminToken)
	case cred == credPlatform && *g.tenant != "":
		return usage("--tenant is for the admin token; a platform token acts for its own tenant")
	case cred == credLoopback && !isLoopbackHost(u.Hostname()):
		return usage("no token: set $%s or --token-file (a platform token with %s), or $%s or --admin-token-file", EnvToken, gate.ScopeOperate, EnvAdminToken)
	case cred != credPlatform && need.tenant && *g.tenant == "":
		return usage("the server's admin acts for every tenant: name one with --tenant")
	}
	if cred != credLoopback && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(e.stderr, "novaos %s: warning: sending a token to %s over plain http\n", g.fs.Name(), u.Host)
	}
	opts := &gate.ClientOptions{Tenant: *g.tenant, NoToken: cred == credLoopback}
	c, err := gate.NewClient(gate.Config{URL: base, Token: tok, AllowedHosts: envconfig.AllowedHosts(e.lookup)}, opts)
	if err != nil {
		return fail(err)
	}
	return c, cred, 0, true
}

// platformToken reads a platform token from file: surrounding white space
// and a "Bearer " prefix are dropped. Errors never hold the token.
func platformToken(file string) (secret.Value, error) {
	f, err := os.Open(file)
	if err != nil {
		return secret.Value{}, fmt.Errorf("token: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, identity.DefaultMaxTokenBytes+64))
	if err != nil {
		return secret.Value{}, fmt.Errorf("token: read %s: %w", file, err)
	}
	if len(b) > identity.DefaultMaxTokenBytes+32 {
		return secret.Value{}, fmt.Errorf("token: %s is larger than a token; it should hold the token only", file)
	}
	tok := bearerless(string(b))
	if tok == "" {
		return secret.Value{}, fmt.Errorf("token: %s is empty", file)
	}
	return secret.New(tok), nil
}

func bearerless(s string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "Bearer "))
}

// fail reports err as one line and returns exitFail.
func (g *gateCmdFlags) fail(err error) int {
	fmt.Fprintf(g.e.stderr, "novaos %s: %s\n", g.fs.Name(), gateError(err))
	return exitFail
}

// gateError renders a gate error for a person: a refusal as its status
// and the server's detail, without the Go package prefixes around it.
func gateError(err error) string {
	var p *gate.Problem
	if errors.As(err, &p) {
		title := p.Title
		if title == "" {
			title = http.StatusText(p.Status)
		}
		s := fmt.Sprintf("%d %s", p.Status, title)
		if d := problemDetail(p.Detail); d != "" {
			s += ": " + d
		}
		if p.Reason != "" {
			s += " [" + string(p.Reason) + "]"
		}
		switch p.Status {
		case http.StatusUnauthorized:
			s += " (check the token: --token-file, $" + EnvToken + ", --admin-token-file or $" + EnvAdminToken + ")"
		case http.StatusForbidden:
			s += " (operators need a token with " + gate.ScopeOperate + ", rule sets " + gate.ScopeAdmin + ", the audit log the admin token)"
		}
		return s
	}
	var ce *gate.ChainError
	if errors.As(err, &ce) {
		return strings.TrimPrefix(ce.Error(), "gate: ")
	}
	return strings.TrimPrefix(err.Error(), "gate: ")
}

// problemDetail drops the service's sentinel texts from a detail: the
// status already says "conflict", "not found", "bad request".
func problemDetail(d string) string {
	for _, sentinel := range []error{gate.ErrConflict, gate.ErrNotFound, gatesvc.ErrBadRequest, gatesvc.ErrForbidden} {
		if rest, ok := strings.CutPrefix(d, sentinel.Error()+": "); ok {
			return rest
		}
	}
	return strings.TrimPrefix(d, "gate: ")
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) {
	out, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", out)
}

// stateLabel is how an action's state reads in a listing.
func stateLabel(s gate.ActionState) string {
	if s == gate.ActionHeld {
		return "PAUSED"
	}
	return strings.ToUpper(string(s))
}

var actionStates = []gate.ActionState{
	gate.ActionPassed, gate.ActionHeld, gate.ActionApproved, gate.ActionClaimed, gate.ActionUnconfirmed,
	gate.ActionExecuted, gate.ActionKilled, gate.ActionDenied, gate.ActionExpired,
}

// holdLeft says how long a held action may still wait.
func holdLeft(r *gate.ActionRecord, now time.Time) string {
	switch {
	case r.State != gate.ActionHeld:
		return "-"
	case r.HoldExpiresAt.IsZero():
		return "indefinite"
	}
	left := r.HoldExpiresAt.Sub(now).Round(time.Second)
	if left <= 0 {
		return "expiring"
	}
	return left.String()
}

func runGateList(ctx context.Context, args []string, e *env) int {
	g := newGateFlags("list", "[--state S1,S2] [--limit N] [--all]", e)
	states := g.fs.String("state", "", "comma-separated `states` to list (default: held,unconfirmed, the ones waiting for a person); one of "+joinStates(actionStates))
	limit := g.fs.Int("limit", 0, "page size `n` (default: the server's, 100; at most 500)")
	all := g.fs.Bool("all", false, "follow the pages to the end of the listing")
	if _, code, ok := g.parse(args, 0, ""); !ok {
		return code
	}
	q := &gate.ListQuery{Limit: *limit}
	for s := range strings.SplitSeq(*states, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(actionStates, gate.ActionState(s)) {
			return usageError(g.fs, "--state: %q is not one of %s", s, joinStates(actionStates))
		}
		q.States = append(q.States, gate.ActionState(s))
	}
	if *limit < 0 || *limit > 500 {
		return usageError(g.fs, "--limit: want 1 to 500")
	}
	c, cred, code, ok := g.client(gateNeed{})
	if !ok {
		return code
	}
	var list gate.ActionList
	for {
		page, err := c.ListActions(ctx, q)
		if err != nil {
			return g.fail(err)
		}
		list.Actions = append(list.Actions, page.Actions...)
		list.Next = page.Next
		if !*all || page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if list.Actions == nil {
		list.Actions = []gate.ActionRecord{}
	}
	if *g.json {
		printJSON(e.stdout, list)
		return exitOK
	}
	// An admin without --tenant sees every tenant: say whose each is.
	withTenant := cred != credPlatform && *g.tenant == ""
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	head := "TYPE\tSESSION\tACTION\tSTATE\tHOLD LEFT\tRULE\tAGENT"
	if withTenant {
		head = "TYPE\tTENANT\tSESSION\tACTION\tSTATE\tHOLD LEFT\tRULE\tAGENT"
	}
	fmt.Fprintln(tw, head)
	now := time.Now()
	for i := range list.Actions {
		r := &list.Actions[i]
		cols := []string{r.ActionType, r.SessionID, r.ActionID, stateLabel(r.State), holdLeft(r, now), orDash(r.RuleIDCited), r.AgentID}
		if withTenant {
			cols = slices.Insert(cols, 1, r.TenantID)
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	tw.Flush()
	if list.Next != "" {
		fmt.Fprintln(e.stderr, "more actions follow: give --all to list them all")
	}
	return exitOK
}

func joinStates(states []gate.ActionState) string {
	s := make([]string, len(states))
	for i, st := range states {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func runGateShow(ctx context.Context, args []string, e *env) int {
	g := newGateFlags("show", "SESSION ACTION", e)
	pos, code, ok := g.parse(args, 2, "the session id and the action id")
	if !ok {
		return code
	}
	c, _, code, ok := g.client(gateNeed{tenant: true})
	if !ok {
		return code
	}
	rec, err := c.Action(ctx, pos[0], pos[1])
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, rec)
		return exitOK
	}
	describeAction(e.stdout, rec, time.Now())
	return exitOK
}

// describeAction writes what a reviewer needs to decide on an action.
func describeAction(w io.Writer, r *gate.ActionRecord, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	row("Action:", "%s %s", r.ActionType, r.ActionID)
	row("Session:", "%s (tenant %s, team %s, agent %s)", r.SessionID, r.TenantID, r.TeamID, r.AgentID)
	row("State:", "%s", stateLabel(r.State))
	verdict := string(r.Verdict)
	if r.RuleIDCited != "" {
		verdict += ", citing rule " + r.RuleIDCited
	}
	if r.Reason != "" {
		verdict += " [" + string(r.Reason) + "]"
	}
	row("Verdict:", "%s", verdict)
	if r.Rationale != "" {
		row("Rationale:", "%s", oneLine(r.Rationale))
	}
	if r.Verdict == gate.Hold {
		switch {
		case r.HoldIndefinite && r.HoldExpiresAt.IsZero():
			row("Hold:", "indefinite: waits until a person decides")
		default:
			hold := fmt.Sprintf("window %s, expires %s", r.HoldWindow, at(r.HoldExpiresAt))
			if r.State == gate.ActionHeld {
				hold += " (" + holdLeft(r, now) + " left)"
			}
			row("Hold:", "%s", hold)
		}
	}
	if r.DecidedBy != "" || !r.DecidedAt.IsZero() {
		row("Decided:", "by %s at %s", orDash(r.DecidedBy), at(r.DecidedAt))
	}
	if r.FencingToken > 0 || !r.ClaimedAt.IsZero() || !r.AcknowledgedAt.IsZero() {
		claim := fmt.Sprintf("fencing token %d", r.FencingToken)
		if !r.ClaimedAt.IsZero() {
			claim += ", claimed " + at(r.ClaimedAt)
		}
		if !r.AcknowledgedAt.IsZero() {
			claim += ", acknowledged " + at(r.AcknowledgedAt)
		}
		row("Claim:", "%s", claim)
	}
	if r.Fingerprint != "" {
		row("Fingerprint:", "%s (%s, commitment %s)", r.Fingerprint, orDash(r.FingerprintScheme), orDash(r.CommitmentVersion))
	}
	row("Recorded:", "created %s, updated %s, version %d", at(r.CreatedAt), at(r.UpdatedAt), r.Version)
	tw.Flush()

	var a gate.Action
	if err := json.Unmarshal(r.Action, &a); err != nil {
		// An action this client cannot type still shows as stored.
		fmt.Fprintf(w, "\nAction as submitted (%v):\n%s\n", err, indentJSON(r.Action, "  "))
	} else {
		fmt.Fprintf(w, "\nContext (%s):\n", a.ContextType)
		ctxJSON, _ := json.Marshal(a.Context)
		fmt.Fprintf(w, "%s\n", indentJSON(ctxJSON, "  "))
		if a.Reasoning != "" {
			fmt.Fprintf(w, "\nReasoning (the agent's own account):\n  %s\n", oneLine(a.Reasoning))
		}
		fmt.Fprintf(w, "\nEvidence (%d reads):\n", len(a.Evidence))
		for _, ev := range a.Evidence {
			describeEvidence(w, &ev)
		}
	}
	if len(r.Decision) > 0 {
		var d gate.Decision
		if err := json.Unmarshal(r.Decision, &d); err != nil {
			fmt.Fprintf(w, "\nDecision (%v):\n%s\n", err, indentJSON(r.Decision, "  "))
		} else {
			describeDecision(w, &d)
		}
	}
}

func describeEvidence(w io.Writer, ev *gate.Evidence) {
	p := ev.Provenance
	fmt.Fprintf(w, "  #%d %s, observed %s", p.Sequence, ev.Tool, p.ObservedAt.UTC().Format(time.RFC3339))
	if p.CallID != "" {
		fmt.Fprintf(w, ", call %s", p.CallID)
	}
	if p.Truncated {
		fmt.Fprintf(w, ", truncated from %d bytes", p.OriginalBytes)
	}
	fmt.Fprintln(w)
	if len(ev.Arguments) > 0 {
		fmt.Fprintf(w, "      arguments: %s\n", oneLineJSON(ev.Arguments))
	}
	if len(ev.Result) > 0 {
		fmt.Fprintf(w, "      result:    %s\n", oneLineJSON(ev.Result))
	}
	if ev.Error != "" {
		fmt.Fprintf(w, "      error:     %s\n", oneLine(ev.Error))
	}
}

func describeDecision(w io.Writer, d *gate.Decision) {
	fmt.Fprintf(w, "\nDecision (rule set version %d", d.RuleSetVersion)
	if d.RuleSetHash != "" {
		fmt.Fprintf(w, ", hash %s", d.RuleSetHash)
	}
	us := func(n int64) time.Duration { return time.Duration(n) * time.Microsecond }
	fmt.Fprintf(w, "; took %s, rules %s", us(d.TotalMicros), us(d.RulesMicros))
	if d.Judge != nil {
		fmt.Fprintf(w, ", judge %s", us(d.JudgeMicros))
	}
	fmt.Fprintln(w, "):")
	if d.Shadow {
		fmt.Fprintf(w, "  shadow (log-only) rule set: it would have decided %s; pass was enforced\n", orDash(string(d.Would)))
	}
	fmt.Fprintf(w, "  rules: %s\n", orDash(string(d.Rules)))
	for _, m := range d.Matched {
		fmt.Fprintf(w, "    matched %s → %s: %s", m.RuleID, m.Verdict, oneLine(m.Text))
		if m.Error != "" {
			fmt.Fprintf(w, " (failed closed: %s)", oneLine(m.Error))
		}
		fmt.Fprintln(w)
	}
	if len(d.Aggregates) > 0 {
		fmt.Fprintln(w, "  aggregates:")
		for _, k := range slices.Sorted(maps.Keys(d.Aggregates)) {
			fmt.Fprintf(w, "    %s = %g\n", k, d.Aggregates[k])
		}
	}
	if j := d.Judge; j != nil {
		verdict := string(j.Verdict)
		if verdict == "" {
			verdict = "no verdict"
		}
		fmt.Fprintf(w, "  judge: %s (prompt %s): %s", j.Model, j.PromptVersion, verdict)
		if j.RuleIDCited != "" {
			fmt.Fprintf(w, ", citing rule %s", j.RuleIDCited)
		}
		fmt.Fprintln(w)
		if j.Rationale != "" {
			fmt.Fprintf(w, "    rationale: %s\n", oneLine(j.Rationale))
		}
		for _, s := range j.Signals {
			fmt.Fprintf(w, "    signal: %s\n", oneLine(s))
		}
		switch {
		case j.Failure != "" && d.Shadow:
			fmt.Fprintf(w, "    failure: %s (it would have failed closed; the rule set is log-only)\n", oneLine(j.Failure))
		case j.Failure != "":
			fmt.Fprintf(w, "    failure: %s (the verdict failed closed)\n", oneLine(j.Failure))
		}
	}
	if d.FingerprintScheme != "" || d.CommitmentVersion != "" {
		fmt.Fprintf(w, "  bound to fingerprint scheme %s, commitment %s\n", orDash(d.FingerprintScheme), orDash(d.CommitmentVersion))
	}
}

func indentJSON(raw []byte, prefix string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, "  "); err != nil {
		return prefix + oneLine(string(raw))
	}
	return prefix + b.String()
}

func oneLineJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return oneLine(string(raw))
	}
	return b.String()
}

func runGateApprove(ctx context.Context, args []string, e *env) int {
	return runGateDecide(ctx, "approve", args, e)
}

func runGateDeny(ctx context.Context, args []string, e *env) int {
	return runGateDecide(ctx, "deny", args, e)
}

func runGateConfirm(ctx context.Context, args []string, e *env) int {
	return runGateDecide(ctx, "confirm", args, e)
}

// runGateDecide records an operator's decision: approve, deny or confirm.
func runGateDecide(ctx context.Context, sub string, args []string, e *env) int {
	synopsis := "SESSION ACTION [--note TEXT]"
	if sub == "confirm" {
		synopsis = "SESSION ACTION --executed|--not-executed [--note TEXT]"
	}
	g := newGateFlags(sub, synopsis, e)
	note := g.fs.String("note", "", "`text` saying why, kept in the action and the audit log (at most 4 KiB)")
	var executed, notExecuted *bool
	if sub == "confirm" {
		executed = g.fs.Bool("executed", false, "the write did land: the action is executed")
		notExecuted = g.fs.Bool("not-executed", false, "the write did not land: a later run may claim it again")
	}
	pos, code, ok := g.parse(args, 2, "the session id and the action id")
	if !ok {
		return code
	}
	if len(*note) > 4<<10 {
		return usageError(g.fs, "--note: longer than 4 KiB")
	}
	d := gate.OperatorDecision{Decision: gate.OperatorDecisionKind(sub), Note: *note}
	if sub == "confirm" {
		switch {
		case *executed == *notExecuted:
			return usageError(g.fs, "give --executed or --not-executed")
		case *executed:
			d.Decision = gate.DecisionConfirmExecuted
		default:
			d.Decision = gate.DecisionConfirmNotExecuted
		}
	}
	c, _, code, ok := g.client(gateNeed{tenant: true})
	if !ok {
		return code
	}
	rec, err := c.Decide(ctx, pos[0], pos[1], d)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, rec)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "%s %s %s in session %s: now %s\n", pastTense(d.Decision), rec.ActionType, rec.ActionID, rec.SessionID, stateLabel(rec.State))
	return exitOK
}

func pastTense(k gate.OperatorDecisionKind) string {
	switch k {
	case gate.DecisionApprove:
		return "approved"
	case gate.DecisionDeny:
		return "denied"
	case gate.DecisionConfirmExecuted:
		return "confirmed executed:"
	}
	return "confirmed not executed:"
}

func runGateRules(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "gate rules", []command{
		{"put", "store the next version of the tenant's rule set: gate rules put FILE (- for standard input)", runGateRulesPut},
		{"get", "print a version of the tenant's rule set: gate rules get [--version N]", runGateRulesGet},
	}, args, e)
}

func runGateRulesPut(ctx context.Context, args []string, e *env) int {
	g := newGateFlags("rules put", "FILE", e)
	pos, code, ok := g.parse(args, 1, "the rule set file (a RuleSetDocument in JSON; - for standard input)")
	if !ok {
		return code
	}
	doc, err := readRuleSet(pos[0])
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos gate rules put: %v\n", err)
		return exitFail
	}
	c, _, code, ok := g.client(gateNeed{tenant: true})
	if !ok {
		return code
	}
	info, err := c.PutRules(ctx, doc)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, info)
		return exitOK
	}
	mode := ""
	if doc.Shadow {
		mode = ", shadow (log-only)"
	}
	fmt.Fprintf(e.stdout, "stored rule set version %d for tenant %s: %d rules, %d aggregates%s, hash %s\n",
		info.Version, info.TenantID, len(doc.Rules), len(doc.Aggregates), mode, info.Hash)
	return exitOK
}

// readRuleSet reads a RuleSetDocument from file (- for standard input),
// refusing unknown fields so a misspelt member is not silently dropped.
func readRuleSet(file string) (gate.RuleSetDocument, error) {
	var r io.Reader = os.Stdin
	name := "standard input"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return gate.RuleSetDocument{}, err
		}
		defer f.Close()
		r, name = f, file
	}
	b, err := io.ReadAll(io.LimitReader(r, gate.MaxDocumentSize+1))
	if err != nil {
		return gate.RuleSetDocument{}, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > gate.MaxDocumentSize {
		return gate.RuleSetDocument{}, fmt.Errorf("%s: larger than %d bytes", name, gate.MaxDocumentSize)
	}
	var doc gate.RuleSetDocument
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return gate.RuleSetDocument{}, fmt.Errorf("%s: not a rule set document: %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return gate.RuleSetDocument{}, fmt.Errorf("%s: data after the rule set document", name)
	}
	return doc, nil
}

func runGateRulesGet(ctx context.Context, args []string, e *env) int {
	g := newGateFlags("rules get", "[--version N]", e)
	version := g.fs.Int64("version", 0, "the `version` to print (default: the current one)")
	if _, code, ok := g.parse(args, 0, ""); !ok {
		return code
	}
	if *version < 0 {
		return usageError(g.fs, "--version: want a positive version")
	}
	c, _, code, ok := g.client(gateNeed{tenant: true})
	if !ok {
		return code
	}
	info, err := c.Rules(ctx, *version)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, info)
		return exitOK
	}
	// The header goes to standard error so standard output is a document
	// rules put takes back.
	by := ""
	if info.CreatedBy != "" {
		by = " by " + info.CreatedBy
	}
	fmt.Fprintf(e.stderr, "rule set version %d of tenant %s, hash %s, stored %s%s\n",
		info.Version, info.TenantID, info.Hash, info.CreatedAt.UTC().Format(time.RFC3339), by)
	if info.Document == nil {
		info.Document = &gate.RuleSetDocument{}
	}
	printJSON(e.stdout, info.Document)
	return exitOK
}

func runGateAudit(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "gate audit", []command{
		{"verify", "page through the audit chain and check every link and its head: gate audit verify", runGateAuditVerify},
	}, args, e)
}

func runGateAuditVerify(ctx context.Context, args []string, e *env) int {
	g := newGateFlagsNoJSON("audit verify", "", e)
	if _, code, ok := g.parse(args, 0, ""); !ok {
		return code
	}
	c, _, code, ok := g.client(gateNeed{admin: true})
	if !ok {
		return code
	}
	n, head, err := c.VerifyAudit(ctx)
	if err != nil {
		var ce *gate.ChainError
		if errors.As(err, &ce) {
			fmt.Fprintf(e.stderr, "novaos gate audit verify: %s (%d entries verified before it)\n", gateError(err), n)
			return exitFail
		}
		return g.fail(err)
	}
	fmt.Fprintf(e.stdout, "audit chain verified: %d entries, head %s\n", n, head)
	return exitOK
}
