package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/internal/toolgw/files"
	"novaos.dev/novaos/internal/toolgw/knowledge"
	"novaos.dev/novaos/internal/toolgw/upstream"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/tools"
)

// toolsFlagSet holds serve's flags for the tool gateway and its
// built-in tools.
type toolsFlagSet struct {
	maxBody, maxArgs, maxResult byteSize
	sessionIdle, holdCheck      *time.Duration
	gateTimeout, auditDelay     *time.Duration
	maxInflight, evidence       *int

	fetchDomains                              listFlag
	allowPrivate, allowHTTP                   *bool
	fetchMax, notifyMax                       byteSize
	fetchTimeout, notifyTimeout, agentTimeout *time.Duration
	agentHops                                 *int
	connectorURL, connectorTokenFile          *string

	fileMax, fileQuota      byteSize
	fileCount               *int64
	docMax                  byteSize
	collections, kWorkers   *int
	stdioCommands, stdioEnv listFlag
	upstreamPrivate         *bool
	upstreamIdle, reuse     *time.Duration
	maxStdio, maxServers    *int
}

func toolsFlags(fs *flag.FlagSet) *toolsFlagSet {
	t := &toolsFlagSet{maxBody: byteSize{n: toolgw.DefaultMaxBodyBytes}, maxArgs: byteSize{n: toolgw.DefaultMaxArgumentBytes},
		maxResult: byteSize{n: toolgw.DefaultMaxResultBytes}}
	fs.Var(&t.maxBody, "tools-max-body-bytes", "tools: largest MCP request body `size`; a larger one gets 413")
	fs.Var(&t.maxArgs, "tools-max-argument-bytes", "tools: largest arguments of one tool call; larger ones get -32602 and nothing is called")
	fs.Var(&t.maxResult, "tools-max-result-bytes", "tools: largest result of one tool call the gateway passes back; a larger one fails the call")
	t.sessionIdle = fs.Duration("tools-session-idle", toolgw.DefaultSessionIdle, "tools: how long an MCP session (Mcp-Session-Id) lives unused")
	t.holdCheck = fs.Duration("tools-hold-check-every", 2*time.Second, "tools: how often runs waiting on held write-class calls are checked against the gate's decisions (a decision on this replica is seen at once)")
	t.gateTimeout = fs.Duration("tools-gate-timeout", toolgw.DefaultGateTimeout, "tools: time each step of a write-class call at the gate may take; a slower gate fails the write closed")
	t.auditDelay = fs.Duration("tools-audit-delay", toolgw.DefaultAuditDelay, "tools: how long calls' audit entries gather before one commit writes them to the gate's chain (negative: each at once)")
	t.maxInflight = fs.Int("tools-max-inflight", toolgw.DefaultMaxInflight, "tools: tool calls in flight in this process; more are refused with -31503, to retry")
	t.evidence = fs.Int("tools-evidence", toolgw.DefaultEvidence, "tools: the run's earlier tool calls a write-class call carries to the gate as evidence")
	t.fetchMax, t.notifyMax = byteSize{n: builtin.DefaultMaxFetchBytes}, byteSize{n: builtin.DefaultMaxPayloadBytes}
	fs.Var(&t.fetchDomains, "tools-http-allow-domain", "tools: a `host` novaos.http.fetch may reach (repeatable; \"*.example.com\" matches the names below it); none by default, and then the tool answers SERVICE_DISABLED")
	t.allowPrivate = fs.Bool("tools-allow-private", false, "tools: let novaos.http.fetch and novaos.notify.webhook reach private, shared and loopback addresses (metadata addresses never)")
	t.allowHTTP = fs.Bool("tools-allow-http", false, "tools: let novaos.http.fetch and novaos.notify.webhook use plain http:// URLs")
	fs.Var(&t.fetchMax, "tools-fetch-max-bytes", "tools: largest body novaos.http.fetch reads; the rest is cut and the answer says truncated")
	t.fetchTimeout = fs.Duration("tools-fetch-timeout", builtin.DefaultFetchTimeout, "tools: time novaos.http.fetch waits for a page, redirects included")
	fs.Var(&t.notifyMax, "tools-notify-max-bytes", "tools: largest payload novaos.notify.webhook sends")
	t.notifyTimeout = fs.Duration("tools-notify-timeout", builtin.DefaultNotifyTimeout, "tools: time novaos.notify.webhook waits for the receiver's answer")
	t.agentHops = fs.Int("tools-agent-max-hops", builtin.DefaultMaxAgentHops, "tools: agents one novaos.agents.call chain may pass through")
	t.agentTimeout = fs.Duration("tools-agent-timeout", builtin.DefaultAgentTimeout, "tools: time novaos.agents.call waits for the called agent's answer")
	t.connectorURL = fs.String("tools-connector-url", "", "tools: base `URL` of the connector host novaos.connector.* calls go to (POST /api/v1/connectors/{id}/{op}); empty: connectors answer SERVICE_DISABLED")
	t.connectorTokenFile = fs.String("tools-connector-token-file", "", "tools: `file` holding the token the gateway presents to the connector host (owner-only)")
	t.fileMax, t.fileQuota, t.docMax = byteSize{n: toolgw.DefaultFileBytes}, byteSize{n: files.DefaultTenantQuotaBytes}, byteSize{n: knowledge.DefaultMaxDocumentBytes}
	fs.Var(&t.fileMax, "tools-files-max-bytes", "tools: largest file novaos.files.write keeps (its base64 must fit --tools-max-argument-bytes)")
	fs.Var(&t.fileQuota, "tools-files-quota-bytes", "tools: bytes of files one tenant keeps; a write past it is refused QUOTA_EXCEEDED")
	t.fileCount = fs.Int64("tools-files-max-files", files.DefaultTenantMaxFiles, "tools: files one tenant keeps")
	fs.Var(&t.docMax, "tools-knowledge-max-document-bytes", "tools: largest document novaos.knowledge.ingest takes")
	t.collections = fs.Int("tools-knowledge-max-collections", knowledge.DefaultMaxCollections, "tools: knowledge collections one tenant keeps")
	t.kWorkers = fs.Int("tools-knowledge-workers", knowledge.DefaultWorkers, "tools: ingest and graph jobs this process works on at once")
	fs.Var(&t.stdioCommands, "tools-stdio-command", "tools: a `command` tenants' stdio MCP servers may run (repeatable; an absolute path, or a name looked up in PATH at start); none by default, which turns stdio servers off. Allowing an interpreter lets tenant admins run any code with it")
	fs.Var(&t.stdioEnv, "tools-stdio-env", "tools: a `NAME=value` every stdio MCP server gets (repeatable), such as PATH; they inherit nothing else of the server's environment")
	t.upstreamPrivate = fs.Bool("tools-upstream-allow-private", false, "tools: let tenants register MCP servers on private, shared and loopback addresses (metadata addresses never)")
	t.upstreamIdle = fs.Duration("tools-upstream-idle", upstream.DefaultIdleTimeout, "tools: how long an unused upstream session or stdio process is kept")
	t.reuse = fs.Duration("tools-upstream-lookup-reuse", upstream.DefaultLookupReuse, "tools: how long a call may use the server registration read when its tool was looked up, instead of reading it again")
	t.maxStdio = fs.Int("tools-upstream-max-stdio", upstream.DefaultMaxStdioProcesses, "tools: stdio MCP server processes this process runs at once")
	t.maxServers = fs.Int("tools-upstream-max-servers", upstream.DefaultMaxServersPerTenant, "tools: MCP servers one tenant registers")
	return t
}

// check reports a flag that cannot work.
func (t *toolsFlagSet) check() string {
	switch {
	case t.maxBody.n <= 0 || t.maxArgs.n <= 0 || t.maxResult.n <= 0:
		return "--tools-max-body-bytes, --tools-max-argument-bytes and --tools-max-result-bytes must be positive"
	case *t.sessionIdle <= 0 || *t.holdCheck <= 0 || *t.gateTimeout <= 0:
		return "--tools-session-idle, --tools-hold-check-every and --tools-gate-timeout must be positive"
	case *t.maxInflight < 1 || *t.evidence < 1 || *t.agentHops < 1:
		return "--tools-max-inflight, --tools-evidence and --tools-agent-max-hops must be at least 1"
	case t.fetchMax.n <= 0 || t.notifyMax.n <= 0 || *t.fetchTimeout <= 0 || *t.notifyTimeout <= 0 || *t.agentTimeout <= 0:
		return "--tools-fetch-max-bytes, --tools-notify-max-bytes and the --tools-*-timeout flags must be positive"
	case t.fileMax.n <= 0 || t.fileMax.n > tools.MaxFileSize || t.fileQuota.n <= 0 || *t.fileCount < 1:
		return "--tools-files-max-bytes must be positive and at most 64MiB, --tools-files-quota-bytes positive, --tools-files-max-files at least 1"
	case t.docMax.n <= 0 || *t.collections < 1 || *t.kWorkers < 1:
		return "--tools-knowledge-max-document-bytes must be positive, --tools-knowledge-max-collections and --tools-knowledge-workers at least 1"
	case *t.upstreamIdle <= 0 || *t.maxStdio < 1 || *t.maxServers < 1:
		return "--tools-upstream-idle must be positive, --tools-upstream-max-stdio and --tools-upstream-max-servers at least 1"
	}
	return ""
}

// builtins builds the built-in tools' options, reading the connector
// host's token file.
func (t *toolsFlagSet) builtins() (app.BuiltinToolsOptions, error) {
	tok, err := readAPIKey(*t.connectorTokenFile, "--tools-connector-token-file")
	if err != nil {
		return app.BuiltinToolsOptions{}, err
	}
	policy := &netguard.Policy{AllowPrivate: *t.allowPrivate, AllowLoopback: *t.allowPrivate}
	return app.BuiltinToolsOptions{
		Notify: builtin.NotifyOptions{Policy: policy, AllowHTTP: *t.allowHTTP, Timeout: *t.notifyTimeout, MaxPayloadBytes: t.notifyMax.n},
		HTTP: builtin.HTTPOptions{AllowedDomains: t.fetchDomains, Policy: policy, AllowHTTP: *t.allowHTTP, Timeout: *t.fetchTimeout,
			MaxFetchBytes: t.fetchMax.n},
		Connectors: builtin.ConnectorOptions{ConnectorHostURL: *t.connectorURL, ConnectorToken: tok},
		Agents:     builtin.AgentsOptions{Timeout: *t.agentTimeout, MaxAgentHops: *t.agentHops},
		Files:      files.Options{MaxFileBytes: t.fileMax.n, TenantQuotaBytes: t.fileQuota.n, TenantMaxFiles: *t.fileCount},
		Knowledge:  knowledge.Options{MaxDocumentBytes: int(t.docMax.n), MaxCollections: *t.collections, Workers: *t.kWorkers},
		Upstream: upstream.Options{AllowedCommands: t.stdioCommands, StdioEnv: t.stdioEnv, AllowPrivate: *t.upstreamPrivate,
			IdleTimeout: *t.upstreamIdle, MaxStdioProcesses: *t.maxStdio, MaxServersPerTenant: *t.maxServers, LookupReuse: *t.reuse},
	}, nil
}

func (t *toolsFlagSet) options() app.ToolsOptions {
	return app.ToolsOptions{MaxBodyBytes: t.maxBody.n, MaxArgumentBytes: t.maxArgs.n, MaxResultBytes: t.maxResult.n,
		SessionIdle: *t.sessionIdle, HoldCheckEvery: *t.holdCheck, GateTimeout: *t.gateTimeout, AuditDelay: *t.auditDelay, MaxInflight: *t.maxInflight, Evidence: *t.evidence}
}
