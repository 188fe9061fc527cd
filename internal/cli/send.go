package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc/grpcclient"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/envconfig"
	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/registry"
)

func runSend(ctx context.Context, args []string, e *env) int {
	fs := newFlags("send", `send <url-or-agent-name> "text" [flags]`, e)
	stream := fs.Bool("stream", false, "stream the agent's updates (SendStreamingMessage) and print each frame as it arrives")
	taskID := fs.String("task", "", "continue the task with this `id` (e.g. one waiting in INPUT_REQUIRED)")
	contextID := fs.String("context", "", "send within this context `id`")
	skill := fs.String("skill", "", "run the agent's skill with this `id` (sent as message metadata \"skillId\"; an agent with several skills needs one)")
	server := serverFlag(fs, e)
	asJSON := fs.Bool("json", false, "print each frame (or the result) as one line of raw JSON")
	timeout := fs.Duration("timeout", a2aclient.DefaultTimeout, "bound a non-streaming call (streams run until the task stops or Ctrl-C)")
	transport := fs.String("transport", "", "call the agent's interface of this `binding`: jsonrpc, rest (HTTP+JSON) or grpc (default: the first interface of its card that novaos speaks)")
	apiKeyEnv := fs.String("api-key-env", "", "send the API key in this environment `variable` (the Python SDK's is ACP_API_KEY) as X-API-Key on every call")
	sf := secretFlags(fs)
	ca := caFlag(fs)
	// Flags may follow the arguments: novaos send echo "hi" --stream.
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(fs, "want an agent URL or name and the message text, got %d arguments", len(pos))
	}
	if msg := sf.check(pos[0]); msg != "" {
		return usageError(fs, "%s", msg)
	}
	var bindings []string
	if *transport != "" {
		b, ok := transportBindings[strings.ToLower(*transport)]
		if !ok {
			return usageError(fs, "--transport %q: want jsonrpc, rest or grpc", *transport)
		}
		bindings = []string{b}
	}
	// Read every value and the key before anything goes on the wire.
	sealing, err := sf.load(e)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	tlsCfg, err := clientTLS(*ca)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	hc := httpClient(tlsCfg)
	target, rec, err := agentRecord(ctx, pos[0], *server, hc)
	if err == nil && sealing != nil && *sf.recipientKey == "" {
		sealing.to, err = registryRecipient(rec, *sf.recipientKID, *server)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	auth, err := sendAuth(target, *apiKeyEnv, e)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	c, err := a2aclient.NewFromURL(ctx, target, &a2aclient.Options{HTTPClient: hc, Timeout: *timeout, Transports: bindings,
		TransportFactories: transportsWith(tlsCfg), Auth: auth})
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	req := a2aclient.TextRequest(pos[1], *taskID, *contextID)
	var opts []a2aclient.CallOption
	if *skill != "" {
		opts = append(opts, a2aclient.WithSkill(*skill))
	}
	if sealing != nil {
		opt, err := sealing.into(req, c, e)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
			return exitFail
		}
		opts = append(opts, opt)
	}
	p := &printer{w: e.stdout, json: *asJSON}
	if !*stream {
		res, err := c.SendMessage(ctx, req, opts...)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
			return exitFail
		}
		p.frame(&a2a.StreamResponse{Task: res.Task, Message: res.Message})
		return exitOK
	}
	for f, err := range c.SendStreamingMessage(ctx, req, opts...) {
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
			return exitFail
		}
		p.frame(f)
	}
	return exitOK
}

// transportBindings maps --transport values to protocol bindings.
var transportBindings = map[string]string{
	"jsonrpc":   a2a.BindingJSONRPC,
	"rest":      a2a.BindingHTTPJSON,
	"http+json": a2a.BindingHTTPJSON,
	"grpc":      a2a.BindingGRPC,
}

// clientTransports are the client transports the CLI adds to the ones
// a2aclient speaks itself (JSON-RPC, HTTP+JSON), by binding.
var clientTransports = map[string]a2aclient.TransportFactory{a2a.BindingGRPC: grpcclient.Factory(nil)}

// printer writes frames, one line each.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) frame(f *a2a.StreamResponse) {
	if p.json {
		b, err := a2a.AppendStreamResponse(nil, f)
		if err != nil {
			b, _ = json.Marshal(f)
		}
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintln(p.w, describe(f))
}

// describe renders a frame as one human-readable line.
func describe(f *a2a.StreamResponse) string {
	var b strings.Builder
	switch {
	case f.Task != nil:
		t := f.Task
		fmt.Fprintf(&b, "task %s %s (context %s)", t.ID, stateName(t.Status.State), t.ContextID)
		for _, a := range t.Artifacts {
			fmt.Fprintf(&b, " | artifact %s: %s", a.ArtifactID, oneLine(a2a.PartsText(a.Parts)))
		}
		if t.Status.Message != nil {
			fmt.Fprintf(&b, " | %s", oneLine(t.Status.Message.Text()))
		}
	case f.Message != nil:
		fmt.Fprintf(&b, "message from %s: %s", roleName(f.Message.Role), oneLine(f.Message.Text()))
	case f.StatusUpdate != nil:
		s := f.StatusUpdate
		fmt.Fprintf(&b, "status %s %s", s.TaskID, stateName(s.Status.State))
		if s.Status.Message != nil {
			fmt.Fprintf(&b, ": %s", oneLine(s.Status.Message.Text()))
		}
	case f.ArtifactUpdate != nil:
		u := f.ArtifactUpdate
		fmt.Fprintf(&b, "artifact %s %s", u.TaskID, u.Artifact.ArtifactID)
		if u.Append {
			b.WriteString(" +append")
		}
		if u.LastChunk {
			b.WriteString(" (last)")
		}
		fmt.Fprintf(&b, ": %s", oneLine(a2a.PartsText(u.Artifact.Parts)))
	}
	b.WriteString(conventions(hitl.FromFrame(f)))
	return b.String()
}

// conventions summarises the NovaOS message conventions a frame carries
// (a2a/hitl), so a pause says what it waits for.
func conventions(f hitl.Found) string {
	var b strings.Builder
	if h := f.HITL; h != nil {
		fmt.Fprintf(&b, " [%s", h.Type)
		for i, a := range h.Actions {
			sep := "|"
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(&b, "%s%s", sep, a.ID)
		}
		b.WriteString("]")
	}
	if p := f.Progress; p != nil {
		fmt.Fprintf(&b, " [progress %s", p.Status)
		if p.Progress.Percent != nil {
			fmt.Fprintf(&b, " %g%%", *p.Progress.Percent)
		}
		b.WriteString("]")
	}
	if e := f.Error; e != nil {
		fmt.Fprintf(&b, " [error %s: %s]", e.Type, oneLine(e.Message))
	}
	if o := f.OAuthRequired; o != nil {
		fmt.Fprintf(&b, " [authorize %s at %s]", o.Connector, o.AuthURL)
	}
	if w := f.WriteConfirmation; w != nil {
		fmt.Fprintf(&b, " [confirm %s (call %s)]", w.ToolName, w.CallID)
	}
	return b.String()
}

func stateName(s a2a.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATE_"))
}

func roleName(r a2a.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}

// oneLine keeps a frame on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`).Replace(s)
}

// sendSecrets are send's flags for sealed secrets (user-context/v1).
type sendSecrets struct {
	specs        secretSpecs
	recipientKey *string
	recipientKID *string
	instance     *string
	run          *string
	tenant       *string
}

func secretFlags(fs *flag.FlagSet) *sendSecrets {
	s := &sendSecrets{}
	fs.Var(&s.specs, "secret", "seal the secret `NAME` into the request for the agent (user-context/v1; repeatable). "+
		"The value is read from the environment variable NAME, or with NAME=@path from a file (one trailing newline is trimmed). "+
		"A value on the command line is refused: other users see it in ps, and it stays in shell history")
	s.recipientKey = fs.String("recipient-key", "", "the agent's public recipient JWK `file` that --secret seals to (see novaos keys generate); a private key file is read for its public half only. "+
		"Default, for an agent named rather than given by URL: the first recipient key of its registry record")
	s.recipientKID = fs.String("recipient-kid", "", "seal to the registry record's recipient key with this `kid` instead of its first one")
	s.instance = fs.String("instance", "", "user-agent instance `id` the secrets are bound to (required with --secret)")
	s.run = fs.String("run", "", "run `id` the secrets are bound to (default: a fresh id, printed to standard error)")
	s.tenant = fs.String("tenant", "", "tenant `id` the secrets are bound to: the tenant the server verifies for you when it authenticates callers (default: the agent interface's tenant, else \"default\")")
	return s
}

// secretSpec is one --secret: a name and where its value is read from.
type secretSpec struct {
	name     string
	fromFile bool // else from the environment variable name
	file     string
}

// secretSpecs collects --secret flags. Set never fails: the flag package
// would echo the argument, and an inline value must not reach the
// terminal; check reports refused forms by name only.
type secretSpecs struct {
	list   []secretSpec
	inline []string // names given with an inline value
}

func (s *secretSpecs) String() string {
	if s == nil {
		return ""
	}
	names := make([]string, len(s.list))
	for i, sp := range s.list {
		names[i] = sp.name
	}
	return strings.Join(names, ",")
}

func (s *secretSpecs) Set(v string) error {
	name, rest, hasValue := strings.Cut(v, "=")
	path, isFile := strings.CutPrefix(rest, "@")
	switch {
	case !hasValue:
		s.list = append(s.list, secretSpec{name: name})
	case isFile:
		s.list = append(s.list, secretSpec{name: name, fromFile: true, file: path})
	default:
		s.inline = append(s.inline, name)
	}
	return nil
}

// check returns a usage problem with the secret flags, "" for none.
// target is the agent argument: a URL, or a name whose registry record
// may hold the recipient key.
func (s *sendSecrets) check(target string) string {
	if len(s.specs.inline) > 0 {
		n := s.specs.inline[0]
		return fmt.Sprintf("--secret %s=…: a value on the command line is refused (other users see it in ps, and it stays in shell history); "+
			"export it as the environment variable %s and pass --secret %s, or pass --secret %s=@file", n, n, n, n)
	}
	seen := map[string]bool{}
	for _, sp := range s.specs.list {
		switch {
		case sp.name == "":
			return "--secret needs a NAME"
		case sp.fromFile && sp.file == "":
			return fmt.Sprintf("--secret %s=@ needs a file after the @", sp.name)
		case seen[sp.name]:
			return fmt.Sprintf("--secret %s is given twice", sp.name)
		}
		seen[sp.name] = true
	}
	if len(s.specs.list) == 0 {
		if *s.recipientKey != "" || *s.recipientKID != "" || *s.instance != "" || *s.run != "" || *s.tenant != "" {
			return "--recipient-key, --recipient-kid, --instance, --run and --tenant go with --secret"
		}
		return ""
	}
	byURL := strings.Contains(target, "://")
	switch {
	case *s.recipientKID != "" && *s.recipientKey != "":
		return "--recipient-kid picks one of the registry record's keys; it does not go with --recipient-key"
	case *s.recipientKID != "" && byURL:
		return "--recipient-kid picks one of the registry record's keys: name the agent instead of giving its URL"
	case *s.recipientKey == "" && byURL:
		return "--secret needs --recipient-key, the agent's public JWK file"
	}
	if *s.instance == "" {
		return "--secret needs --instance, the user-agent instance the secrets are bound to"
	}
	return ""
}

// sealing is what send seals: the recipient and the values, read before
// the request is built.
type sealing struct {
	to     usercontext.Recipient
	values map[string]usercontext.Secret
	flags  *sendSecrets
}

// load reads the recipient key file, if any, and every secret value; nil
// when no secret is sent. Errors name a secret, a variable or a file,
// never a value. Without --recipient-key the recipient is left for
// registryRecipient.
func (s *sendSecrets) load(e *env) (*sealing, error) {
	if len(s.specs.list) == 0 {
		return nil, nil
	}
	out := &sealing{values: make(map[string]usercontext.Secret, len(s.specs.list)), flags: s}
	if *s.recipientKey != "" {
		_, to, err := readRecipientKey(*s.recipientKey)
		if err != nil {
			return nil, fmt.Errorf("--recipient-key %w", err)
		}
		out.to = to
	}
	for _, sp := range s.specs.list {
		var (
			v   string
			err error
		)
		if !sp.fromFile {
			if v = e.getenv(sp.name); v == "" {
				return nil, fmt.Errorf("--secret %s: the environment variable %s is not set or empty", sp.name, sp.name)
			}
		} else if v, err = readSecretFile(sp.file); err != nil {
			return nil, fmt.Errorf("--secret %s: %w", sp.name, err)
		}
		out.values[sp.name] = usercontext.NewSecret(v)
	}
	return out, nil
}

// registryRecipient is the recipient key of an agent's registry record:
// the one with kid, else the first. The error says how to register one.
func registryRecipient(rec *registry.Agent, kid, server string) (usercontext.Recipient, error) {
	to, err := rec.Recipient(kid)
	switch {
	case err == nil:
		return to, nil
	case errors.Is(err, registry.ErrNoRecipientKey) && kid == "":
		return to, fmt.Errorf("agent %q has no recipient key in the registry of %s, so --secret has nothing to seal to: "+
			"register one with novaos agents register … --recipient-key FILE (or novaos agents update %s --recipient-key FILE), "+
			"or pass --recipient-key FILE", rec.Name, server, rec.Name)
	case errors.Is(err, registry.ErrNoRecipientKey):
		return to, fmt.Errorf("--recipient-kid: %w", err)
	}
	return to, err
}

// readSecretFile reads a secret value from a file, trimming one trailing
// newline (an editor's or echo's).
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, usercontext.MaxSecretSize+3))
	defer clear(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if len(b) > usercontext.MaxSecretSize+2 || len(v) > usercontext.MaxSecretSize {
		return "", fmt.Errorf("%s: larger than %d bytes", path, usercontext.MaxSecretSize)
	}
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return v, nil
}

// into seals the values into req for the agent c calls and reports, on
// stderr, what was sealed for which run.
func (s *sealing) into(req *a2a.SendMessageRequest, c *a2aclient.Client, e *env) (a2aclient.CallOption, error) {
	run := usercontext.Run{TenantID: *s.flags.tenant, InstanceID: *s.flags.instance, RunID: *s.flags.run}
	if run.TenantID == "" {
		run.TenantID = c.Tenant()
	}
	if run.TenantID == "" {
		run.TenantID = "default"
	}
	if run.RunID == "" {
		run.RunID = a2a.NewID()
	}
	act, err := usercontext.SealRequest(req, s.to, run, s.values)
	if err != nil {
		return nil, err
	}
	if card := c.Card(); card != nil {
		if _, ok := a2aclient.FindExtension(card, usercontext.URI); !ok {
			fmt.Fprintf(e.stderr, "novaos send: warning: the agent's card does not declare %s; the agent will not see the secrets\n", usercontext.URI)
		}
	}
	fmt.Fprintf(e.stderr, "novaos send: sealed %s to kid %s for tenant %s, instance %s, run %s\n",
		strings.Join(slices.Sorted(maps.Keys(s.values)), ", "), s.to.KID, run.TenantID, run.InstanceID, run.RunID)
	return a2aclient.WithExtensions(act.Extensions...), nil
}

// sendAuth applies the SDK's environment to a call of target: with
// $NOVAOS_ALLOWED_HOSTS set, a target it does not cover is refused before
// any request; with keyEnv named, the API key it holds is sent as
// X-API-Key on every call (a variable unset or empty is an error: the
// caller asked for a key). The key is sent only when asked for, so that
// it never goes to an agent by accident.
func sendAuth(target, keyEnv string, e *env) (a2aclient.AuthProvider, error) {
	if err := envconfig.CheckHost(target, envconfig.AllowedHosts(e.lookup)); err != nil {
		return nil, err
	}
	if keyEnv == "" {
		return nil, nil
	}
	key, err := envconfig.APIKey(e.lookup, keyEnv)
	if err != nil {
		return nil, fmt.Errorf("--api-key-env: %w", err)
	}
	return a2aclient.RequireAPIKey("", key)
}
