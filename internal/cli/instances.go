package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// maxSecretFile bounds what --secret-file reads of one secret, and
// maxConfigFile what --config @file reads.
const (
	maxSecretFile = 64 << 10
	maxConfigFile = 1 << 20
)

var instancesCommands = []command{
	{"install", "install an agent for the tenant: instances install --name N (--hosted A | --url U | --agent ID | --pull) [flags]", runInstancesInstall},
	{"list", "the tenant's instances, by name", runInstancesList},
	{"show", "one instance, without its secrets' values: instances show ID|NAME", runInstancesShow},
	{"update", "change an instance: instances update ID|NAME [install's flags] [--remove-secret NAME]…", runInstancesUpdate},
	{"remove", "remove an instance (its runs stay): instances remove ID|NAME", runInstancesRemove},
}

func runInstances(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "instances", instancesCommands, args, e)
}

// instanceFlags are the flags install and update share.
type instanceFlags struct {
	name, hosted, url, agent, config *string
	pull                             optBool
	billing, toolClass               *string
	secretFiles, scopes, headers     listFlag
	secretGiven                      flagGiven
	memory, publish                  optBool
	memTokens, memLatency            *int
}

// flagGiven is a flag that only records that it was given: --secret,
// whose value must not be taken (nor echoed in an error), since a flag's
// value shows in the process list.
type flagGiven struct{ given bool }

func (f *flagGiven) String() string     { return "" }
func (f *flagGiven) Set(_ string) error { f.given = true; return nil }

func addInstanceFlags(g *gwFlags) *instanceFlags {
	f := &instanceFlags{}
	fs := g.fs
	f.name = fs.String("name", "", "the instance's `name`: 1 to 64 of a-z 0-9 . _ -, unique in the tenant")
	f.hosted = fs.String("hosted", "", "run the agent the platform hosts under this `name` (such as echo)")
	f.url = fs.String("url", "", "run the A2A agent at this `URL` (registered, its card fetched and, when signed, verified)")
	f.agent = fs.String("agent", "", "run the agent of the registry with this `id`")
	fs.Var(&f.pull, "pull", "the agent connects out and pulls its runs (novaos adapter run); no --hosted, --url or --agent (--pull=false: the platform calls it)")
	f.billing = fs.String("billing-mode", "", "what a pull agent's tokens grant for model calls: `platform` or agent")
	f.toolClass = fs.String("tool-class", "", "the most a pull agent's tools may reach: `chat`, scoped or host")
	f.config = fs.String("config", "", "the configuration every run gets: a JSON object, or @`file` holding one")
	fs.Var(&f.secretFiles, "secret-file", "a secret as `NAME=PATH`: its value is the file's content (repeatable); values never show in output")
	fs.Var(&f.secretGiven, "secret", "refused: a secret's value is never a flag (the process list shows flags); use --secret-file NAME=PATH")
	fs.Var(&f.scopes, "scope", "a `scope` every run's execution token gets (repeatable)")
	fs.Var(&f.memory, "memory", "the agent uses memory (--memory=false: it does not)")
	f.memTokens = fs.Int("memory-tokens", 0, "memory pre-fetch budget in `tokens` (with --memory)")
	f.memLatency = fs.Int("memory-latency-ms", 0, "memory pre-fetch budget in `milliseconds` (with --memory)")
	fs.Var(&f.headers, "custom-header", "a custom `header` name a service account's run may pass to the agent (\"*\": every safe name; repeatable)")
	fs.Var(&f.publish, "publish", "serve the agent's public card at the platform (--publish=false: do not)")
	return f
}

// check reports what is wrong with the flags that no server needs to
// tell, as a usage message ("" when nothing).
func (f *instanceFlags) check() string {
	switch {
	case f.secretGiven.given:
		return "--secret: a secret's value is never given as a flag (the process list shows flags); use --secret-file NAME=PATH"
	case *f.memTokens < 0 || *f.memLatency < 0:
		return "--memory-tokens and --memory-latency-ms must not be negative"
	case (*f.memTokens > 0 || *f.memLatency > 0) && !(f.memory.set && f.memory.v):
		return "--memory-tokens and --memory-latency-ms need --memory"
	}
	return ""
}

// targetCount is how many of --hosted, --url and --agent were given.
func (f *instanceFlags) targetCount() int {
	n := 0
	for _, s := range []string{*f.hosted, *f.url, *f.agent} {
		if s != "" {
			n++
		}
	}
	return n
}

// readConfig reads --config: inline JSON or @file.
func (f *instanceFlags) readConfig() (map[string]any, error) {
	raw := []byte(*f.config)
	if file, ok := strings.CutPrefix(*f.config, "@"); ok {
		b, err := readLimited(file, maxConfigFile)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		raw = b
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("--config: want a JSON object (or @file holding one)")
	}
	return m, nil
}

// readSecrets reads the --secret-file values. Errors name the file, never
// its content.
func (f *instanceFlags) readSecrets() (map[string]secret.Value, error) {
	out := make(map[string]secret.Value, len(f.secretFiles))
	for _, s := range f.secretFiles {
		name, path, ok := strings.Cut(s, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--secret-file %q: want NAME=PATH", s)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--secret-file: %s is given twice", name)
		}
		b, err := readLimited(path, maxSecretFile)
		if err != nil {
			return nil, fmt.Errorf("--secret-file %s: %w", name, err)
		}
		// A file's final newline is not part of the secret.
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return nil, fmt.Errorf("--secret-file %s: %s is empty", name, path)
		}
		out[name] = secret.New(v)
	}
	return out, nil
}

// budget returns the memory budget the flags give, nil for none.
func (f *instanceFlags) budget() *gateway.MemoryBudget {
	if *f.memTokens == 0 && *f.memLatency == 0 {
		return nil
	}
	return &gateway.MemoryBudget{TokenBudget: *f.memTokens, LatencyBudgetMS: *f.memLatency}
}

// readLimited reads file, refusing one larger than limit bytes.
func readLimited(file string, limit int64) ([]byte, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d KiB", file, limit>>10)
	}
	return b, nil
}

func runInstancesInstall(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("instances install", "--name N (--hosted A | --url U | --agent ID | --pull [--billing-mode M] [--tool-class C]) [--config JSON|@FILE] [--secret-file NAME=PATH]… [--scope S]… [--memory [--memory-tokens N --memory-latency-ms N]] [--custom-header H]… [--publish]", e)
	f := addInstanceFlags(g)
	if _, code, ok := g.parse(args, 0, 0, ""); !ok {
		return code
	}
	if msg := f.check(); msg != "" {
		return usageError(g.fs, "%s", msg)
	}
	if *f.name == "" {
		return usageError(g.fs, "--name is required")
	}
	switch {
	case f.pull.v && f.targetCount() != 0:
		return usageError(g.fs, "a --pull agent connects out: give none of --hosted, --url and --agent")
	case !f.pull.v && f.targetCount() != 1:
		return usageError(g.fs, "give exactly one of --hosted, --url and --agent (what the instance runs), or --pull")
	}
	req := gateway.InstallRequest{Name: *f.name, Hosted: *f.hosted, URL: *f.url, AgentID: *f.agent,
		Memory: f.memory.v, MemoryBudget: f.budget(), Scopes: f.scopes, CustomHeaders: f.headers, Published: f.publish.v,
		BillingMode: *f.billing, ToolClass: *f.toolClass}
	if f.pull.v {
		req.Delivery = gateway.DeliveryPull
	}
	var err error
	if *f.config != "" {
		if req.Config, err = f.readConfig(); err != nil {
			return usageError(g.fs, "%v", err)
		}
	}
	if req.Secrets, err = f.readSecrets(); err != nil {
		return usageError(g.fs, "%v", err)
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	inst, err := c.Install(ctx, req)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, inst)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "installed %s (id %s) running %s\n", inst.Name, inst.ID, instanceTarget(inst))
	if inst.Pulls() {
		fmt.Fprintf(e.stderr, "Connect its agent: novaos adapter token --agent %s --dpop-key agent.key --out agent.token%s,\n"+
			"then, where the agent runs: novaos adapter run --agent %s --token-file agent.token --dpop-key agent.key -- PROGRAM\n",
			inst.ID, g.followFlags(), inst.ID)
	}
	return exitOK
}

func runInstancesUpdate(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("instances update", "ID|NAME [--name N] [--hosted A | --url U | --agent ID] [--config JSON|@FILE] [--secret-file NAME=PATH]… [--remove-secret NAME]… [--scope S]… [--memory[=false] [--memory-tokens N --memory-latency-ms N]] [--custom-header H]… [--publish[=false]]", e)
	f := addInstanceFlags(g)
	var remove listFlag
	g.fs.Var(&remove, "remove-secret", "remove the secret with this `name` (repeatable)")
	pos, code, ok := g.parse(args, 1, 1, "the instance's id or name")
	if !ok {
		return code
	}
	if msg := f.check(); msg != "" {
		return usageError(g.fs, "%s", msg)
	}
	if f.targetCount() > 1 {
		return usageError(g.fs, "give at most one of --hosted, --url and --agent")
	}
	var u gateway.InstanceUpdate
	set := func(p *string) *string {
		if *p == "" {
			return nil
		}
		return p
	}
	u.Name, u.Hosted, u.URL, u.AgentID = set(f.name), set(f.hosted), set(f.url), set(f.agent)
	var err error
	if *f.config != "" {
		if u.Config, err = f.readConfig(); err != nil {
			return usageError(g.fs, "%v", err)
		}
	}
	secrets, err := f.readSecrets()
	if err != nil {
		return usageError(g.fs, "%v", err)
	}
	if len(secrets) > 0 {
		u.SetSecrets = secrets
	}
	u.RemoveSecrets = remove
	if f.memory.set {
		u.Memory = &f.memory.v
	}
	u.MemoryBudget = f.budget()
	if len(f.scopes) > 0 {
		u.Scopes = f.scopes
	}
	if len(f.headers) > 0 {
		u.CustomHeaders = f.headers
	}
	if f.publish.set {
		u.Published = &f.publish.v
	}
	if f.pull.set {
		d := gateway.DeliveryPush
		if f.pull.v {
			d = gateway.DeliveryPull
		}
		u.Delivery = &d
	}
	u.BillingMode, u.ToolClass = set(f.billing), set(f.toolClass)
	if u.Name == nil && u.Hosted == nil && u.URL == nil && u.AgentID == nil && u.Config == nil && u.SetSecrets == nil &&
		u.RemoveSecrets == nil && u.Memory == nil && u.MemoryBudget == nil && u.Scopes == nil && u.CustomHeaders == nil && u.Published == nil &&
		u.Delivery == nil && u.BillingMode == nil && u.ToolClass == nil {
		return usageError(g.fs, "nothing to change: give a flag of install's, or --remove-secret")
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	id, err := resolveInstance(ctx, c, pos[0])
	if err != nil {
		return g.fail(err)
	}
	inst, err := c.UpdateInstance(ctx, id, u)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, inst)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "updated %s (id %s, version %d) running %s\n", inst.Name, inst.ID, inst.Version, instanceTarget(inst))
	return exitOK
}

func runInstancesList(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("instances list", "", e)
	if _, code, ok := g.parse(args, 0, 0, ""); !ok {
		return code
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	var all []gateway.Instance
	after := ""
	for {
		page, err := c.ListInstances(ctx, gateway.InstanceListOptions{After: after})
		if err != nil {
			return g.fail(err)
		}
		all = append(all, page.Instances...)
		if page.NextCursor == "" || page.NextCursor == after || len(page.Instances) == 0 {
			break
		}
		after = page.NextCursor
	}
	if *g.json {
		printJSON(e.stdout, struct {
			Instances []gateway.Instance `json:"instances"`
		}{append([]gateway.Instance{}, all...)})
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tRUNS\tMEMORY\tPUBLISHED\tSECRETS")
	for i := range all {
		in := &all[i]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%t\t%s\n", in.Name, in.ID, instanceTarget(in), in.Memory, in.Published, orDash(strings.Join(in.SecretNames, ",")))
	}
	tw.Flush()
	return exitOK
}

// instanceTarget says what an instance runs.
func instanceTarget(in *gateway.Instance) string {
	switch {
	case in.Pulls():
		return "a pull agent (it connects out)"
	case in.Hosted != "":
		return "hosted " + in.Hosted
	case in.URL != "":
		return in.URL
	}
	return "agent " + in.AgentID
}

func runInstancesShow(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("instances show", "ID|NAME", e)
	pos, code, ok := g.parse(args, 1, 1, "the instance's id or name")
	if !ok {
		return code
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	id, err := resolveInstance(ctx, c, pos[0])
	if err != nil {
		return g.fail(err)
	}
	in, err := c.GetInstance(ctx, id)
	if err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, in)
		return exitOK
	}
	w := e.stdout
	fmt.Fprintf(w, "name            %s\n", in.Name)
	fmt.Fprintf(w, "id              %s\n", in.ID)
	fmt.Fprintf(w, "tenant          %s\n", in.TenantID)
	fmt.Fprintf(w, "runs            %s\n", instanceTarget(in))
	if in.AgentID != "" {
		fmt.Fprintf(w, "agent           %s\n", in.AgentID)
	}
	if len(in.Config) > 0 {
		b, _ := json.Marshal(in.Config)
		fmt.Fprintf(w, "config          %s\n", b)
	}
	fmt.Fprintf(w, "secrets         %s\n", orDash(strings.Join(in.SecretNames, ", ")))
	fmt.Fprintf(w, "memory          %t", in.Memory)
	if b := in.MemoryBudget; b != nil {
		fmt.Fprintf(w, " (budget %d tokens, %d ms)", b.TokenBudget, b.LatencyBudgetMS)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "scopes          %s\n", orDash(strings.Join(in.Scopes, " ")))
	fmt.Fprintf(w, "custom headers  %s\n", orDash(strings.Join(in.CustomHeaders, ", ")))
	fmt.Fprintf(w, "published       %t\n", in.Published)
	fmt.Fprintf(w, "version         %d\n", in.Version)
	fmt.Fprintf(w, "updated         %s\n", in.UpdatedAt.UTC().Format(time.RFC3339))
	return exitOK
}

func runInstancesRemove(ctx context.Context, args []string, e *env) int {
	g := newGWFlags("instances remove", "ID|NAME", e)
	pos, code, ok := g.parse(args, 1, 1, "the instance's id or name")
	if !ok {
		return code
	}
	c, code, ok := g.client()
	if !ok {
		return code
	}
	id, err := resolveInstance(ctx, c, pos[0])
	if err != nil {
		return g.fail(err)
	}
	if err := c.RemoveInstance(ctx, id); err != nil {
		return g.fail(err)
	}
	if *g.json {
		printJSON(e.stdout, map[string]any{"instance_id": id, "removed": true})
		return exitOK
	}
	fmt.Fprintf(e.stdout, "removed instance %s (its runs stay)\n", pos[0])
	return exitOK
}
