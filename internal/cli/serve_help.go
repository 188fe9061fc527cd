package cli

import (
	"flag"
	"fmt"
	"io"
	"slices"
)

// flagGroup is one heading of serve's -h: a service, or the server
// around them.
type flagGroup struct {
	title string
	flags []string
}

// serveGroups arrange serve's flags by service, in the order the server
// is built. Every flag is in exactly one group (TestServeFlagGroups).
var serveGroups = []flagGroup{
	{"Server", []string{"addr", "public-url", "data", "seal-key-file", "admin-token-file", "log-level", "shutdown-timeout"}},
	{"Database", []string{"db", "db-max-conns", "db-statement-timeout", "lease-heartbeat", "lease-expiry", "memory-index-bytes"}},
	{"Connections and limits (every service)", []string{"max-conns", "conn-reserve", "max-inflight-bytes", "max-header-bytes",
		"header-timeout", "body-timeout", "body-min-rate", "idle-timeout", "allow-host", "cors-origin"}},
	{"TLS", []string{"tls-cert", "tls-key", "tls-reload-interval", "insecure-listen"}},
	{"Metrics, traces and logs (/metrics, /debug/pprof/)", []string{"metrics-addr", "otlp-endpoint", "otlp-headers", "trace-sample-ratio", "access-log"}},
	{"Execution tokens (/.well-known/jwks.json)", []string{"token-issuer", "token-audience", "token-alg", "token-ttl", "token-max-ttl", "token-leeway",
		"token-key-file", "token-key-lifetime"}},
	{"Memory service (/api/v1/mcp)", []string{"memory-max-body-bytes", "memory-scratch-ttl", "memory-max-scratch-ttl",
		"memory-consolidate-every", "memory-hint-attempts", "embedding-url", "embedding-model", "embedding-key-file", "embedding-dims",
		"extractor-url", "extractor-model", "extractor-key-file", "model-timeout"}},
	{"Governance gate (/api/v1/gate, /ui/gate)", []string{"gate-max-body-bytes", "gate-hold-window", "gate-hold-indefinite",
		"gate-restart-grace", "gate-claim-timeout", "gate-max-wait", "gate-commitment-version", "gate-rule-cost-limit", "gate-judge-url", "gate-judge-model",
		"gate-judge-key-file", "gate-judge-timeout"}},
	{"Hosted agents (/agents/{name})", []string{"bindings", "a2a-v03", "grpc-addr", "grpc-public-addr", "grpc-max-streams", "card-key",
		"max-body-bytes", "max-id-bytes", "max-extensions", "max-extension-uri-bytes", "artifact-flush-interval", "tck-timeout"}},
	{"Push notifications (hosted agents)", []string{"push-allow-loopback", "push-allow-private", "push-key-file", "push-timeout",
		"push-connect-timeout", "push-max-response-bytes", "push-max-attempts", "push-max-age", "push-backoff-base", "push-backoff-max",
		"push-concurrency", "push-poll-interval", "push-lease", "push-token-ttl"}},
	{"Agent registry (/api/v1/agents); the execution gateway calls agents on the same hosts", []string{"registry-allow-host", "registry-allow-loopback", "registry-allow-private"}},
	{"Execution gateway (/api/v1/instances, /api/v1/execute, /api/v1/events, /api/v1/runs)", []string{"gateway-max-body-bytes",
		"gateway-max-output-bytes", "gateway-token-ttl", "gateway-max-attempts", "gateway-retry-backoff", "gateway-lease",
		"gateway-sweep-every", "gateway-keepalive", "gateway-max-streams", "gateway-max-runs", "gateway-history-turns"}},
	{"Tool gateway (/mcp/v1, /api/v1/tools)", []string{"tools-max-body-bytes", "tools-max-argument-bytes", "tools-max-result-bytes",
		"tools-session-idle", "tools-hold-check-every", "tools-gate-timeout", "tools-audit-delay", "tools-max-inflight", "tools-evidence", "tools-http-allow-domain", "tools-allow-private",
		"tools-allow-http", "tools-fetch-max-bytes", "tools-fetch-timeout", "tools-notify-max-bytes", "tools-notify-timeout",
		"tools-agent-max-hops", "tools-agent-timeout", "tools-connector-url", "tools-connector-token-file", "tools-files-max-bytes",
		"tools-files-quota-bytes", "tools-files-max-files", "tools-knowledge-max-document-bytes", "tools-knowledge-max-collections",
		"tools-knowledge-workers", "tools-stdio-command", "tools-stdio-env", "tools-upstream-allow-private", "tools-upstream-idle", "tools-upstream-lookup-reuse",
		"tools-upstream-max-stdio", "tools-upstream-max-servers"}},
	{"LLM gateway (/v1, /api/v1/llm)", []string{"llm-max-body-bytes", "llm-max-response-bytes", "llm-max-event-bytes", "llm-timeout",
		"llm-stream-idle", "llm-connect-timeout", "llm-default-max-tokens", "llm-max-inflight", "llm-config-ttl", "llm-allow-private",
		"llm-platform-tenant"}},
	{"Heartbeat schedules (/api/v1/agent-ops)", []string{"schedules-max-body-bytes", "schedules-poll-every", "schedules-grace",
		"schedules-lease", "schedules-max-attempts", "schedules-max-concurrent-fires"}},
	{"Pull delivery (/api/v1/delivery)", []string{"delivery-max-body-bytes", "delivery-key-file", "delivery-token-ttl", "delivery-clock-leeway", "delivery-ack-timeout",
		"delivery-heartbeat-interval", "delivery-run-stale-after", "delivery-max-poll-wait", "delivery-resume-window"}},
}

// otherFlags is the heading of the flags no group names, so that none is
// ever left out of -h.
const otherFlags = "Other"

// groupedUsage prints fs's flags under the headings of groups, each flag
// as flag.PrintDefaults would, with its default as declared; flags no
// group names come last, under otherFlags.
func groupedUsage(w io.Writer, synopsis string, fs *flag.FlagSet, groups []flagGroup) {
	fmt.Fprintf(w, "Usage: novaos %s\n", synopsis)
	named := map[string]bool{}
	for _, g := range groups {
		for _, f := range g.flags {
			named[f] = true
		}
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !named[f.Name] {
			rest = append(rest, f.Name)
		}
	})
	if len(rest) > 0 {
		groups = append(slices.Clip(groups), flagGroup{otherFlags, rest})
	}
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		part := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
		part.SetOutput(w)
		for _, name := range g.flags {
			f := fs.Lookup(name)
			if f == nil {
				continue
			}
			part.Var(f.Value, f.Name, f.Usage)
			// The value may have been set by the arguments before -h.
			part.Lookup(name).DefValue = f.DefValue
		}
		part.PrintDefaults()
	}
}
