package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/execgw"
)

// gatewayFlagSet holds serve's flags for the execution gateway.
type gatewayFlagSet struct {
	maxBody, maxOutput                           byteSize
	tokenTTL, retryBackoff, lease, sweep, keepAl *time.Duration
	maxAttempts, maxStreams, maxRuns, history    *int
}

func gatewayFlags(fs *flag.FlagSet) *gatewayFlagSet {
	g := &gatewayFlagSet{maxBody: byteSize{n: execgw.DefaultMaxBodyBytes}, maxOutput: byteSize{n: execgw.DefaultMaxOutputBytes}}
	fs.Var(&g.maxBody, "gateway-max-body-bytes", "gateway: largest request body `size` (an execute request with its attachments); a larger one gets 413")
	fs.Var(&g.maxOutput, "gateway-max-output-bytes", "gateway: largest answer (text and artifacts) one turn of a run may produce; past it the run fails")
	g.tokenTTL = fs.Duration("gateway-token-ttl", execgw.DefaultTokenTTL, "gateway: lifetime of the execution token minted for each delivery of a run")
	g.maxAttempts = fs.Int("gateway-max-attempts", execgw.DefaultMaxAttempts, "gateway: deliveries of one turn whose stream ends without an ending before the run fails")
	g.retryBackoff = fs.Duration("gateway-retry-backoff", execgw.DefaultRetryBackoff, "gateway: wait before the second delivery of a turn; it doubles for each later one")
	g.lease = fs.Duration("gateway-lease", execgw.DefaultLease, "gateway: how long a replica's claim on a run lasts unrenewed; a replica that dies has its runs taken over after it")
	g.sweep = fs.Duration("gateway-sweep-every", execgw.DefaultSweepEvery, "gateway: how often queued runs and runs whose replica died are looked for")
	g.keepAl = fs.Duration("gateway-keepalive", execgw.DefaultKeepAlive, "gateway: interval of keep-alive comments on an idle event stream")
	g.maxStreams = fs.Int("gateway-max-streams", execgw.DefaultMaxStreams, "gateway: event streams open at once; more get 503 with Retry-After")
	g.maxRuns = fs.Int("gateway-max-runs", execgw.DefaultMaxConcurrentRuns, "gateway: runs this process delivers at once; more wait queued")
	g.history = fs.Int("gateway-history-turns", execgw.DefaultHistoryTurns, "gateway: earlier runs of a thread whose turns a run carries as history")
	return g
}

// check reports a flag that cannot work.
func (g *gatewayFlagSet) check() string {
	switch {
	case g.maxBody.n <= 0 || g.maxOutput.n <= 0:
		return "--gateway-max-body-bytes and --gateway-max-output-bytes must be positive"
	case *g.tokenTTL <= 0 || *g.retryBackoff <= 0 || *g.lease <= 0 || *g.sweep <= 0 || *g.keepAl <= 0:
		return "--gateway-token-ttl, --gateway-retry-backoff, --gateway-lease, --gateway-sweep-every and --gateway-keepalive must be positive"
	case *g.maxAttempts < 1 || *g.maxStreams < 1 || *g.maxRuns < 1 || *g.history < 0:
		return "--gateway-max-attempts, --gateway-max-streams and --gateway-max-runs must be at least 1, --gateway-history-turns not negative"
	}
	return ""
}

// options builds the gateway's options; it calls agents on the hosts the
// registry accepts.
func (g *gatewayFlagSet) options(reg app.RegistryOptions) app.GatewayOptions {
	return app.GatewayOptions{MaxBodyBytes: g.maxBody.n, MaxOutputBytes: int(g.maxOutput.n), TokenTTL: *g.tokenTTL,
		MaxAttempts: *g.maxAttempts, RetryBackoff: *g.retryBackoff, Lease: *g.lease, SweepEvery: *g.sweep,
		KeepAlive: *g.keepAl, MaxStreams: *g.maxStreams, MaxConcurrentRuns: *g.maxRuns, HistoryTurns: *g.history,
		URLPolicy: reg.Policy, LoopbackIfLocal: reg.LoopbackIfLocal}
}
