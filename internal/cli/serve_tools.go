package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/toolgw"
)

// toolsFlagSet holds serve's flags for the tool gateway.
type toolsFlagSet struct {
	maxBody, maxArgs, maxResult byteSize
	sessionIdle, holdCheck      *time.Duration
	maxInflight, evidence       *int
}

func toolsFlags(fs *flag.FlagSet) *toolsFlagSet {
	t := &toolsFlagSet{maxBody: byteSize{n: toolgw.DefaultMaxBodyBytes}, maxArgs: byteSize{n: toolgw.DefaultMaxArgumentBytes},
		maxResult: byteSize{n: toolgw.DefaultMaxResultBytes}}
	fs.Var(&t.maxBody, "tools-max-body-bytes", "tools: largest MCP request body `size`; a larger one gets 413")
	fs.Var(&t.maxArgs, "tools-max-argument-bytes", "tools: largest arguments of one tool call; larger ones get -32602 and nothing is called")
	fs.Var(&t.maxResult, "tools-max-result-bytes", "tools: largest result of one tool call the gateway passes back; a larger one fails the call")
	t.sessionIdle = fs.Duration("tools-session-idle", toolgw.DefaultSessionIdle, "tools: how long an MCP session (Mcp-Session-Id) lives unused")
	t.holdCheck = fs.Duration("tools-hold-check-every", 2*time.Second, "tools: how often runs waiting on held write-class calls are checked against the gate's decisions (a decision on this replica is seen at once)")
	t.maxInflight = fs.Int("tools-max-inflight", toolgw.DefaultMaxInflight, "tools: tool calls in flight in this process; more are refused with -31503, to retry")
	t.evidence = fs.Int("tools-evidence", toolgw.DefaultEvidence, "tools: the run's earlier tool calls a write-class call carries to the gate as evidence")
	return t
}

// check reports a flag that cannot work.
func (t *toolsFlagSet) check() string {
	switch {
	case t.maxBody.n <= 0 || t.maxArgs.n <= 0 || t.maxResult.n <= 0:
		return "--tools-max-body-bytes, --tools-max-argument-bytes and --tools-max-result-bytes must be positive"
	case *t.sessionIdle <= 0 || *t.holdCheck <= 0:
		return "--tools-session-idle and --tools-hold-check-every must be positive"
	case *t.maxInflight < 1 || *t.evidence < 1:
		return "--tools-max-inflight and --tools-evidence must be at least 1"
	}
	return ""
}

func (t *toolsFlagSet) options() app.ToolsOptions {
	return app.ToolsOptions{MaxBodyBytes: t.maxBody.n, MaxArgumentBytes: t.maxArgs.n, MaxResultBytes: t.maxResult.n,
		SessionIdle: *t.sessionIdle, HoldCheckEvery: *t.holdCheck, MaxInflight: *t.maxInflight, Evidence: *t.evidence}
}
