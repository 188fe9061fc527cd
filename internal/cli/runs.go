package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// exitInterrupted is the exit code of a command that stopped following a
// run on Ctrl-C (128 + SIGINT, as shells report it).
const exitInterrupted = 130

// maxAttachFile bounds a file --attach reads: the gateway takes a request
// body of a few MiB, and base64 grows the file by a third.
const maxAttachFile = 4 << 20

var runsCommands = []command{
	{"list", "the runs you may see, newest first: runs list [--status S] [--instance I] [--limit N]", runRunsList},
	{"show", "one run, its answer, artifacts and pause: runs show RUN [--events]", runRunsShow},
	{"cancel", "cancel a run that has not ended: runs cancel RUN", runRunsCancel},
	{"reply", "answer a paused run: runs reply RUN [--input TEXT] [--action ID] [--value V] [--call ID --approve|--reject]", runRunsReply},
	{"events", "follow a run's events until it ends, as run does: runs events RUN [--after ID]", runRunsEvents},
	{"debug", "pause, step, resume or abort a run: runs debug RUN pause|step|resume|abort [--metadata JSON]", runRunsDebug},
}

func runRuns(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "runs", runsCommands, args, e)
}

// gwFlags are the flags every gateway command has: where the server is
// and who calls it.
type gwFlags struct {
	fs                   *flag.FlagSet
	server               *string
	tokenFile, adminFile *string
	tenant               *string
	json                 *bool
	e                    *env
	// cred is the credential client chose.
	cred credential
}

// describeFlags has fs's usage say what the command does: its synopsis, the
// lines of about, then the flags.
func describeFlags(fs *flag.FlagSet, e *env, synopsis string, about ...string) {
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: novaos %s\n\n", synopsis)
		for _, line := range about {
			fmt.Fprintln(e.stderr, line)
		}
		fmt.Fprintln(e.stderr, "\nFlags:")
		fs.PrintDefaults()
	}
}

func newGWFlags(name, synopsis string, e *env) *gwFlags {
	fs := newFlags(name, name+" "+synopsis+" [--server URL] [--token-file FILE | --admin-token-file FILE --tenant T] [--json]", e)
	return &gwFlags{
		fs:        fs,
		e:         e,
		server:    fs.String("server", defaultServer(e), "NovaOS server `URL` ($"+EnvServer+" sets the default)"),
		tokenFile: fs.String("token-file", "", "`file` holding a platform token with the runs:* or instances:* scopes it needs (default $"+EnvToken+")"),
		adminFile: fs.String("admin-token-file", "", "`file` holding the server's admin token, which acts for the tenant --tenant names (default $"+EnvAdminToken+"); with no token at all, a server without an admin token takes a caller on its own machine as its admin"),
		tenant:    fs.String("tenant", "", "tenant `id` the admin token acts for (a platform token names its own)"),
		json:      fs.Bool("json", false, "print the server's answer as JSON (one event per line when following a run)"),
	}
}

// parse reads args (flags may follow the arguments) and wants between
// lo and hi positional arguments, named by what.
func (g *gwFlags) parse(args []string, lo, hi int, what string) ([]string, int, bool) {
	pos, code, ok := parseArgs(g.fs, args)
	if !ok {
		return nil, code, false
	}
	switch {
	case len(pos) < lo:
		return nil, usageError(g.fs, "want %s", what), false
	case len(pos) > hi:
		return nil, usageError(g.fs, "unexpected argument %q", pos[hi]), false
	}
	return pos, 0, true
}

// client returns a gateway client, or the exit code of the usage or
// configuration error it reported.
//
// Flags win over the environment. With both $NOVAOS_TOKEN and
// $NOVAOS_ADMIN_TOKEN set, the platform token is sent unless --tenant
// says the caller acts as the admin.
func (g *gwFlags) client() (*gateway.Client, int, bool) {
	tok, code, ok := g.credentials()
	if !ok {
		return nil, code, false
	}
	c, err := gateway.NewClient(*g.server, &gateway.ClientOptions{Token: tok, Tenant: *g.tenant})
	if err != nil {
		fmt.Fprintf(g.e.stderr, "novaos %s: %v\n", g.fs.Name(), err)
		return nil, exitFail, false
	}
	return c, 0, true
}

// credentials checks --server and returns the token the flags and the
// environment choose (see client), or the exit code of the usage or
// configuration error it reported.
func (g *gwFlags) credentials() (secret.Value, int, bool) {
	e := g.e
	fail := func(err error) (secret.Value, int, bool) {
		fmt.Fprintf(e.stderr, "novaos %s: %v\n", g.fs.Name(), err)
		return secret.Value{}, exitFail, false
	}
	usage := func(format string, a ...any) (secret.Value, int, bool) {
		return secret.Value{}, usageError(g.fs, format, a...), false
	}
	u, err := neturl.Parse(*g.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// Not the URL itself: it may carry credentials.
		return usage("--server: want an absolute http(s) URL without user information")
	}
	if *g.tokenFile != "" && *g.adminFile != "" {
		return usage("give --token-file or --admin-token-file, not both")
	}
	var tok secret.Value
	g.cred = credLoopback
	switch {
	case *g.adminFile != "":
		if tok, err = adminToken(*g.adminFile, e); err != nil {
			return fail(err)
		}
		g.cred = credAdmin
	case *g.tokenFile != "":
		if tok, err = platformToken(*g.tokenFile); err != nil {
			return fail(err)
		}
		g.cred = credPlatform
	default:
		adm, err := adminToken("", e)
		if err != nil {
			return fail(err)
		}
		plat := secret.New(bearerless(e.getenv(EnvToken)))
		switch {
		case !adm.IsZero() && (*g.tenant != "" || plat.IsZero()):
			tok, g.cred = adm, credAdmin
		case !plat.IsZero():
			tok, g.cred = plat, credPlatform
		}
	}
	switch {
	case g.cred == credPlatform && *g.tenant != "":
		return usage("--tenant is for the admin token; a platform token acts for its own tenant")
	case g.cred == credLoopback && !isLoopbackHost(u.Hostname()):
		return usage("no token: set $%s or --token-file (a platform token), or $%s or --admin-token-file with --tenant", EnvToken, EnvAdminToken)
	case g.cred != credPlatform && *g.tenant == "":
		return usage("the server's admin acts for every tenant: name one with --tenant")
	}
	if g.cred != credLoopback && u.Scheme == "http" && !isLoopbackHost(u.Hostname()) {
		fmt.Fprintf(e.stderr, "novaos %s: warning: sending a token to %s over plain http\n", g.fs.Name(), u.Host)
	}
	return tok, 0, true
}

// fail reports err as one line (and the fields a refusal names) and
// returns exitFail.
func (g *gwFlags) fail(err error) int {
	fmt.Fprintf(g.e.stderr, "novaos %s: %s\n", g.fs.Name(), gatewayError(err))
	var ge *gateway.Error
	if errors.As(err, &ge) {
		for _, f := range ge.Errors {
			fmt.Fprintf(g.e.stderr, "  %s: %s\n", f.Field, f.Message)
		}
	}
	return exitFail
}

// gatewayError renders a gateway error for a person: a refusal as its
// status and the server's detail, with a hint for the usual causes.
func gatewayError(err error) string {
	var ge *gateway.Error
	if errors.As(err, &ge) {
		title := ge.Title
		if title == "" {
			title = http.StatusText(ge.Status)
		}
		s := fmt.Sprintf("%d %s", ge.Status, title)
		if ge.Detail != "" {
			s += ": " + ge.Detail
		}
		switch ge.Status {
		case http.StatusUnauthorized:
			s += " (check the token: --token-file, $" + EnvToken + ", --admin-token-file or $" + EnvAdminToken + ")"
		case http.StatusForbidden:
			s += " (runs need a token with runs:execute or runs:read, instances with instances:read or instances:write)"
		}
		return s
	}
	var ie *gateway.InvalidError
	if errors.As(err, &ie) {
		return "invalid " + ie.Field + ": " + ie.Message
	}
	return strings.ReplaceAll(err.Error(), "gateway: ", "")
}

// followFlags returns the flags a follow-up command printed for the
// user needs besides the defaults: the server when it is not the default
// one, and the tenant the admin acts for.
func (g *gwFlags) followFlags() string {
	var b strings.Builder
	if *g.server != defaultServer(g.e) {
		b.WriteString(" --server " + shellQuote(*g.server))
	}
	if *g.tenant != "" {
		b.WriteString(" --tenant " + shellQuote(*g.tenant))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@=,+%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runRun(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("run", `INSTANCE "text" [--thread T] [--conversation C] [--attach FILE]… [--detach]`, e)
	thread := g.fs.String("thread", "", "continue the thread `id` (the agent gets its history)")
	conv := g.fs.String("conversation", "", "conversation `id` the run belongs to")
	var attach listFlag
	g.fs.Var(&attach, "attach", "attach this `file` (sent as data; repeatable, at most 16)")
	detach := g.fs.Bool("detach", false, "print the run id and return without following the run")
	describeFlags(g.fs, e, "run INSTANCE \"text\" [flags]",
		"Starts a run of the instance (its name or id) and follows its events: the answer on stdout as it",
		"arrives, status, progress, tool calls and pauses on stderr. A pause shows the question and the",
		"novaos runs reply command that answers it; the run goes on after a reply from anywhere. Exit 0",
		"when the run completes, 1 when it fails or is cancelled. Ctrl-C stops following; the run goes on.")
	pos, code, ok := g.parse(args, 2, 2, `the instance and the text: novaos run INSTANCE "text"`)
	if !ok {
		return code
	}
	atts := make([]gateway.Attachment, 0, len(attach))
	for _, f := range attach {
		a, err := readAttachment(f)
		if err != nil {
			return usageError(g.fs, "--attach: %v", err)
		}
		atts = append(atts, a)
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	id, err := resolveInstance(ctx, c, pos[0])
	if err != nil {
		return g.fail(err)
	}
	req := gateway.ExecuteRequest{InstanceID: id, Input: pos[1], ThreadID: *thread, ConversationID: *conv, Attachments: atts}
	if err := req.Validate(); err != nil {
		return usageError(g.fs, "%s", gatewayError(err))
	}
	res, err := c.Execute(ctx, req)
	if err != nil {
		return g.fail(err)
	}
	if *detach {
		if *g.json {
			printJSON(e.stdout, res)
		} else {
			fmt.Fprintln(e.stdout, res.RunID)
		}
		return exitOK
	}
	if !*g.json {
		fmt.Fprintf(e.stderr, "run %s started on %s\n", res.RunID, pos[0])
	}
	return g.follow(ctx, c, res.RunID, "")
}

// readAttachment reads file as an attachment sent by value, typed by its
// extension, else by its content.
func readAttachment(file string) (gateway.Attachment, error) {
	f, err := os.Open(file)
	if err != nil {
		return gateway.Attachment{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAttachFile+1))
	if err != nil {
		return gateway.Attachment{}, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxAttachFile {
		return gateway.Attachment{}, fmt.Errorf("%s is larger than %d MiB", file, maxAttachFile>>20)
	}
	if len(data) == 0 {
		return gateway.Attachment{}, fmt.Errorf("%s is empty", file)
	}
	name := filepath.Base(file)
	if err := gateway.ValidAttachmentName(name); err != nil {
		return gateway.Attachment{}, fmt.Errorf("%s: %w", file, err)
	}
	typ := mime.TypeByExtension(filepath.Ext(name))
	if typ == "" {
		typ = http.DetectContentType(data)
	}
	return gateway.Attachment{Type: typ, Data: data, Name: name}, nil
}

// jsonEvent is how --json prints an event: the gateway's frame and the
// SSE id a reconnect resumes after (--after).
type jsonEvent struct {
	ID        string          `json:"id,omitempty"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	RunID     string          `json:"run_id,omitempty"`
	Sequence  int64           `json:"sequence,omitempty"`
	Timestamp json.RawMessage `json:"timestamp,omitempty"`
}

// eventJSON is the --json line of ev.
func eventJSON(ev gateway.StreamEvent) []byte {
	j := jsonEvent{ID: ev.ID, Type: ev.WireType, Payload: ev.Payload, RunID: ev.RunID, Sequence: ev.Sequence}
	if _, err := strconv.ParseInt(ev.Timestamp, 10, 64); err == nil {
		j.Timestamp = json.RawMessage(ev.Timestamp)
	} else if ev.Timestamp != "" {
		j.Timestamp, _ = json.Marshal(ev.Timestamp)
	}
	if !json.Valid(j.Payload) {
		j.Payload = nil
	}
	line, err := json.Marshal(j)
	if err != nil {
		line, _ = json.Marshal(jsonEvent{ID: ev.ID, Type: ev.WireType, RunID: ev.RunID, Sequence: ev.Sequence})
	}
	return line
}

// follow prints the events of run after the event after ("" from the
// start) until it ends, and returns the exit code the ending calls for.
func (g *gwFlags) follow(ctx context.Context, c *gateway.Client, runID, after string) int {
	p := &progress{out: g.e.stdout, log: g.e.stderr, runID: runID, replyFlags: g.followFlags()}
	last := after
	for ev, err := range c.EventsWithReconnect(ctx, runID, &gateway.ReconnectOptions{LastEventID: after}) {
		if err != nil {
			p.endLine()
			if ctx.Err() != nil {
				return p.interrupted(last)
			}
			return g.fail(err)
		}
		last = ev.ID
		if *g.json {
			fmt.Fprintf(g.e.stdout, "%s\n", eventJSON(ev))
		} else {
			p.show(ev)
		}
		if ev.IsTerminal() {
			p.endLine()
			if ev.IsFailure() {
				fmt.Fprintf(g.e.stderr, "run %s %s: %s\n", runID, endStatus(ev), orDefault(reasonOf(ev), "no reason given"))
				return exitFail
			}
			if !*g.json {
				fmt.Fprintf(g.e.stderr, "run %s COMPLETED\n", runID)
			}
			return exitOK
		}
	}
	p.endLine()
	if ctx.Err() != nil {
		return p.interrupted(last)
	}
	fmt.Fprintf(g.e.stderr, "novaos %s: the event stream of run %s ended before the run did\n", g.fs.Name(), runID)
	return exitFail
}

// endStatus is the status a terminal event names.
func endStatus(ev gateway.StreamEvent) gateway.Status {
	if ev.Status != "" {
		return ev.Status
	}
	var p gateway.EndPayload
	if json.Unmarshal(ev.Payload, &p) == nil && p.Status != "" {
		return p.Status
	}
	if ev.IsFailure() {
		return gateway.StatusFailed
	}
	return gateway.StatusCompleted
}

// reasonOf is why a run ended, as its terminal event says.
func reasonOf(ev gateway.StreamEvent) string {
	var p gateway.EndPayload
	if json.Unmarshal(ev.Payload, &p) == nil && p.Reason != "" {
		return p.Reason
	}
	return ev.Content
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// progress renders a run's events for a person: the answer on out, the
// rest as short lines on log.
type progress struct {
	out, log   io.Writer
	runID      string
	replyFlags string
	// midLine is set while the answer's last chunk did not end a line;
	// streamed is set once the turn's answer arrived in chunks, so the
	// final message does not repeat it.
	midLine, streamed bool
}

// endLine ends the answer's line, so that what log prints next does not
// run into it on a terminal.
func (p *progress) endLine() {
	if p.midLine {
		fmt.Fprintln(p.out)
		p.midLine = false
	}
}

func (p *progress) interrupted(last string) int {
	resume := ""
	if last != "" {
		resume = " --after " + shellQuote(last)
	}
	fmt.Fprintf(p.log, "stopped following run %s; the run goes on. Follow it again with: novaos runs events %s%s%s (novaos runs cancel %s stops it)\n",
		p.runID, p.runID, resume, p.replyFlags, p.runID)
	return exitInterrupted
}

func (p *progress) text(s string) {
	if s == "" {
		return
	}
	fmt.Fprint(p.out, s)
	p.midLine = !strings.HasSuffix(s, "\n")
}

func (p *progress) note(format string, a ...any) {
	p.endLine()
	fmt.Fprintf(p.log, "· "+format+"\n", a...)
}

// show renders one event.
func (p *progress) show(ev gateway.StreamEvent) {
	switch ev.WireType {
	case gateway.EventMessageDelta:
		p.streamed = true
		p.text(ev.Content)
	case gateway.EventMessageFinal:
		if !p.streamed {
			p.text(ev.Content)
		}
		p.endLine()
		p.streamed = false
	case gateway.EventStatus:
		switch {
		case ev.Status != "" && ev.IsTerminal():
			// The ending is reported once, by follow.
		case ev.Status != "":
			if r := reasonOf(ev); r != "" {
				p.note("%s: %s", ev.Status, clipLine(r, 200))
			} else {
				p.note("%s", ev.Status)
			}
		default:
			p.note("%s", clipLine(orDefault(ev.Content, string(ev.Payload)), 200))
		}
	case gateway.EventHITL, gateway.EventWriteConfirmationRequired, gateway.EventOAuthRequired:
		p.endLine()
		describePause(p.log, p.runID, ev.WireType, ev.Payload, p.replyFlags)
	case gateway.EventToolCall, gateway.EventToolResult:
		p.note("%s %s", ev.WireType, clipLine(string(ev.Payload), 200))
	case gateway.EventArtifact:
		var a gateway.Artifact
		_ = json.Unmarshal(ev.Payload, &a)
		p.note("artifact %s", orDefault(a.Name, a.ArtifactID))
	case gateway.EventDone, gateway.EventError:
		// Terminal: follow reports it.
	default:
		p.note("%s %s", ev.WireType, clipLine(orDefault(ev.Content, string(ev.Payload)), 200))
	}
}

// clipLine makes s one line of at most n runes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// pauseBody is what the gateway's pause payloads hold: a human-in-the-loop
// request, a write confirmation or a connector's OAuth, and the agent's
// text.
type pauseBody struct {
	HITL      *hitl.HITL `json:"hitl"`
	Content   string     `json:"content"`
	CallID    string     `json:"call_id"`
	ToolName  string     `json:"tool_name"`
	Connector string     `json:"connector"`
	AuthURL   string     `json:"auth_url"`
}

// describePause prints the question a paused run waits on and the
// command that answers it.
func describePause(w io.Writer, runID, typ string, payload json.RawMessage, flags string) {
	var b pauseBody
	_ = json.Unmarshal(payload, &b)
	reply := "novaos runs reply " + runID
	switch typ {
	case gateway.EventWriteConfirmationRequired:
		fmt.Fprintf(w, "? confirm the call %s of the tool %s", orDefault(b.CallID, "(no id)"), orDefault(b.ToolName, "(unnamed)"))
		if b.Content != "" {
			fmt.Fprintf(w, ": %s", clipLine(b.Content, 500))
		}
		fmt.Fprintf(w, "\n  answer with: %s --call %s --approve%s   (or --reject)\n", reply, shellQuote(b.CallID), flags)
	case gateway.EventOAuthRequired:
		fmt.Fprintf(w, "? authorize the connector %s", orDefault(b.Connector, "the agent needs"))
		if b.AuthURL != "" {
			fmt.Fprintf(w, " at %s", b.AuthURL)
		}
		if b.Content != "" {
			fmt.Fprintf(w, ": %s", clipLine(b.Content, 500))
		}
		fmt.Fprintf(w, "\n  then continue with: %s --input done%s\n", reply, flags)
	default:
		content := b.Content
		if b.HITL != nil && b.HITL.Content != "" {
			content = b.HITL.Content
		}
		fmt.Fprintf(w, "? %s\n", orDefault(clipLine(content, 500), "the agent waits for your answer"))
		if b.HITL != nil {
			for _, a := range b.HITL.Actions {
				fmt.Fprintf(w, "  action %s: %s\n", a.ID, a.Label)
			}
			for _, f := range b.HITL.Fields {
				fmt.Fprintf(w, "  field %s: %s\n", f.Name, f.Label)
			}
			if len(b.HITL.Actions) > 0 {
				fmt.Fprintf(w, "  answer with: %s --action ID [--value TEXT]%s\n", reply, flags)
				return
			}
		}
		fmt.Fprintf(w, "  answer with: %s --input 'your answer'%s\n", reply, flags)
	}
}

func runRunsEvents(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("runs events", "RUN [--after ID]", e)
	after := g.fs.String("after", "", "resume after the event with this SSE `id` (what --json prints as \"id\")")
	pos, code, ok := g.parse(args, 1, 1, "the run id")
	if !ok {
		return code
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	return g.follow(ctx, c, pos[0], *after)
}

var runStatuses = []gateway.Status{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusWaitingUser,
	gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusCancelled}

func runRunsList(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("runs list", "[--status S] [--instance I] [--limit N] [--after CURSOR]", e)
	status := g.fs.String("status", "", "only runs in this `status`: QUEUED, RUNNING, WAITING_USER, COMPLETED, FAILED or CANCELLED")
	inst := g.fs.String("instance", "", "only runs of this instance (`name or id`)")
	limit := g.fs.Int("limit", 0, "list at most `n` runs (default: the server's page size)")
	after := g.fs.String("after", "", "continue a listing after this `cursor` (the one a previous listing printed)")
	if _, code, ok := g.parse(args, 0, 0, ""); !ok {
		return code
	}
	st := gateway.Status(strings.ToUpper(*status))
	if st != "" && !containsStatus(st) {
		return usageError(g.fs, "--status %q: want QUEUED, RUNNING, WAITING_USER, COMPLETED, FAILED or CANCELLED", clipLine(*status, 40))
	}
	if *limit < 0 {
		return usageError(g.fs, "--limit must not be negative")
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	o := gateway.RunListOptions{Status: st, Limit: *limit, After: *after}
	if *inst != "" {
		id, err := resolveInstance(ctx, c, *inst)
		if err != nil {
			return g.fail(err)
		}
		o.InstanceID = id
	}
	page, err := c.ListRuns(ctx, o)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, page)
		return exitOK
	}
	names := instanceNames(ctx, c)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tINSTANCE\tCREATED\tINPUT")
	for _, r := range page.Runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, orDefault(names[r.InstanceID], r.InstanceID),
			r.CreatedAt.UTC().Format(time.DateTime), clipLine(r.Input, 40))
	}
	tw.Flush()
	if page.NextCursor != "" {
		fmt.Fprintf(e.stderr, "more runs: add --after %s\n", shellQuote(page.NextCursor))
	}
	return exitOK
}

func containsStatus(s gateway.Status) bool {
	for _, v := range runStatuses {
		if v == s {
			return true
		}
	}
	return false
}

func runRunsShow(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("runs show", "RUN [--events]", e)
	withEvents := g.fs.Bool("events", false, "also list the run's recorded events")
	pos, code, ok := g.parse(args, 1, 1, "the run id")
	if !ok {
		return code
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	r, err := c.GetRun(ctx, pos[0])
	if err != nil {
		return g.fail(err)
	}
	var events []gateway.RunEvent
	if *withEvents {
		after := ""
		for {
			page, err := c.RunEvents(ctx, r.ID, gateway.RunEventsOptions{After: after})
			if err != nil {
				return g.fail(err)
			}
			events = append(events, page.Events...)
			if page.NextCursor == "" || len(page.Events) == 0 {
				break
			}
			after = page.NextCursor
		}
	}
	if *g.json {
		if *withEvents {
			printJSON(e.stdout, struct {
				*gateway.Run
				Events []gateway.RunEvent `json:"events"`
			}{r, events})
		} else {
			printJSON(e.stdout, r)
		}
		return exitOK
	}
	w := e.stdout
	fmt.Fprintf(w, "run       %s\n", r.ID)
	fmt.Fprintf(w, "status    %s\n", r.Status)
	if r.Reason != "" {
		fmt.Fprintf(w, "reason    %s\n", clipLine(r.Reason, 500))
	}
	fmt.Fprintf(w, "instance  %s\n", r.InstanceID)
	if r.ThreadID != "" {
		fmt.Fprintf(w, "thread    %s\n", r.ThreadID)
	}
	if r.ConversationID != "" {
		fmt.Fprintf(w, "conversation %s\n", r.ConversationID)
	}
	fmt.Fprintf(w, "created   %s\n", r.CreatedAt.UTC().Format(time.RFC3339))
	if !r.EndedAt.IsZero() {
		fmt.Fprintf(w, "ended     %s\n", r.EndedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "turns     %d\n", r.Turn)
	fmt.Fprintf(w, "input     %s\n", clipLine(r.Input, 500))
	if r.Output != "" {
		fmt.Fprintf(w, "output    %s\n", r.Output)
	}
	for _, a := range r.Artifacts {
		fmt.Fprintf(w, "artifact  %s %s\n", a.ArtifactID, a.Name)
	}
	if d := r.Debug; d != nil {
		fmt.Fprintf(w, "debugger  %s\n", debuggerLine(d))
	}
	if r.Status == gateway.StatusWaitingUser && len(r.Pause) > 0 {
		var typed struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		typ, payload := gateway.EventHITL, r.Pause
		if json.Unmarshal(r.Pause, &typed) == nil && typed.Type != "" && len(typed.Payload) > 0 {
			typ, payload = typed.Type, typed.Payload
		}
		describePause(w, r.ID, typ, payload, g.followFlags())
	}
	for _, ev := range events {
		fmt.Fprintf(w, "event %d %s %s\n", ev.Sequence, ev.Type, clipLine(string(ev.Data), 200))
	}
	return exitOK
}

func runRunsCancel(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("runs cancel", "RUN", e)
	pos, code, ok := g.parse(args, 1, 1, "the run id")
	if !ok {
		return code
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	r, err := c.CancelRun(ctx, pos[0])
	if err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			fmt.Fprintf(e.stderr, "novaos runs cancel: run %s has ended already (%s)\n", pos[0], gatewayError(err))
			return exitFail
		}
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, r)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "cancelled run %s (%s)\n", r.ID, r.Status)
	return exitOK
}

func runRunsReply(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("runs reply", "RUN [--input TEXT] [--action ID] [--value V] [--call ID --approve|--reject]", e)
	input := g.fs.String("input", "", "the answer's `text`")
	action := g.fs.String("action", "", "the `id` of the action chosen of a request's actions")
	value := g.fs.String("value", "", "the `value` entered for a request's input field")
	call := g.fs.String("call", "", "the paused tool call's `id` a write confirmation names (with --approve or --reject)")
	approve := g.fs.Bool("approve", false, "let the paused tool call run")
	reject := g.fs.Bool("reject", false, "refuse the paused tool call")
	pos, code, ok := g.parse(args, 1, 1, "the run id")
	if !ok {
		return code
	}
	r := gateway.Reply{Input: *input, ActionID: *action, InputValue: *value, CallID: *call}
	switch {
	case *approve && *reject:
		return usageError(g.fs, "give --approve or --reject, not both")
	case (*approve || *reject) && *call == "":
		return usageError(g.fs, "--approve and --reject need --call ID, the paused tool call")
	case *call != "" && !*approve && !*reject:
		return usageError(g.fs, "--call needs --approve or --reject")
	case *approve || *reject:
		v := *approve
		r.Approved = &v
	case *input == "" && *action == "" && *value == "":
		return usageError(g.fs, "nothing to reply: give --input, --action, --value or --call with --approve or --reject")
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	res, err := c.Reply(ctx, pos[0], r)
	if err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			fmt.Fprintf(e.stderr, "novaos runs reply: run %s is not waiting for an answer (%s)\n", pos[0], gatewayError(err))
			return exitFail
		}
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, res)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "replied to run %s; it goes on (%s). Follow it with: novaos runs events %s%s\n", res.RunID, res.Status, res.RunID, g.followFlags())
	return exitOK
}

func runRunsDebug(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("runs debug", "RUN pause|step|resume|abort [--metadata JSON]", e)
	meta := g.fs.String("metadata", "", "a JSON `object` kept with the action's event (a note, a ticket)")
	describeFlags(g.fs, e, "runs debug RUN pause|step|resume|abort [flags]",
		"Drives a run's debugger. pause holds the run at its next event: the gateway records none of the agent's",
		"further events (the agent is held back, nothing is lost) and starts no further turn. step lets one more",
		"event through a paused run, then holds it again. resume lets it go on; abort cancels it. A pause of a",
		"paused run changes nothing; an action on an ended run is refused.")
	pos, code, ok := g.parse(args, 2, 2, "the run id and the action: novaos runs debug RUN pause|step|resume|abort")
	if !ok {
		return code
	}
	action := gateway.DebugAction(strings.ToLower(pos[1]))
	if !action.Valid() {
		return usageError(g.fs, "action %s: want pause, step, resume or abort", strconv.Quote(clipLine(pos[1], 40)))
	}
	var metadata map[string]any
	if *meta != "" {
		if err := json.Unmarshal([]byte(*meta), &metadata); err != nil || metadata == nil {
			return usageError(g.fs, "--metadata: want a JSON object")
		}
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	d, err := c.SendDebugControl(ctx, pos[0], action, metadata)
	if err != nil {
		if errors.Is(err, gateway.ErrConflict) {
			fmt.Fprintf(e.stderr, "novaos runs debug: %s\n", gatewayError(err))
			return exitFail
		}
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, d)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "run %s: %s\n", d.RunID, debuggerLine(d))
	return exitOK
}

// debuggerLine says where a run's debugger holds it.
func debuggerLine(d *gateway.DebugSession) string {
	s := string(d.BreakpointState)
	if d.BreakpointState == gateway.BreakpointStepping {
		s += fmt.Sprintf(" (%d more event", d.Steps)
		if d.Steps != 1 {
			s += "s"
		}
		s += ")"
	}
	s += " after " + string(d.Action)
	if d.Actor != "" {
		s += " by " + d.Actor
	}
	return s + " (session " + d.SessionID + ")"
}

// resolveInstance returns the id of the instance ref names: an id, or a
// name looked up in the tenant's instances.
func resolveInstance(ctx context.Context, c *gateway.Client, ref string) (string, error) {
	if isUUID(ref) {
		// A name may have an id's shape: it is looked up when no
		// instance has that id. A caller that may not read instances
		// (a token with runs:* only) names them by id.
		_, err := c.GetInstance(ctx, ref)
		if err == nil || !errors.Is(err, gateway.ErrNotFound) {
			return ref, nil
		}
		if in, err := findInstance(ctx, c, ref); err == nil {
			return in.ID, nil
		}
		return ref, nil
	}
	inst, err := findInstance(ctx, c, ref)
	if err != nil {
		return "", err
	}
	return inst.ID, nil
}

// findInstance lists the tenant's instances for the one named (or with
// the id) ref.
func findInstance(ctx context.Context, c *gateway.Client, ref string) (*gateway.Instance, error) {
	after := ""
	for {
		page, err := c.ListInstances(ctx, gateway.InstanceListOptions{After: after})
		if err != nil {
			return nil, err
		}
		for i := range page.Instances {
			if in := &page.Instances[i]; in.Name == ref || in.ID == ref {
				return in, nil
			}
		}
		if page.NextCursor == "" || page.NextCursor == after || len(page.Instances) == 0 {
			return nil, fmt.Errorf("no instance %s in the tenant (novaos instances list shows them)", strconv.Quote(clipLine(ref, 80)))
		}
		after = page.NextCursor
	}
}

// instanceNames maps the tenant's instance ids to their names, for a
// listing of runs. A caller that may not list instances (a token with
// runs:* only) gets an empty map: the listing shows ids then.
func instanceNames(ctx context.Context, c *gateway.Client) map[string]string {
	names := map[string]string{}
	after := ""
	for {
		page, err := c.ListInstances(ctx, gateway.InstanceListOptions{After: after})
		if err != nil {
			return names
		}
		for _, in := range page.Instances {
			names[in.ID] = in.Name
		}
		if page.NextCursor == "" || page.NextCursor == after || len(page.Instances) == 0 {
			return names
		}
		after = page.NextCursor
	}
}

// isUUID reports whether s has the form of a UUID, as instance ids do.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
