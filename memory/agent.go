package memory

import (
	"cmp"
	"context"
	"log/slog"
	"os"

	"novaos.dev/novaos/secret"
)

// Execution is what From reads of the execution a skill serves.
// *agent.Context satisfies it; memory declares it rather than importing
// agent, so the stores built on memory's contract do not link the agent
// SDK.
type Execution interface {
	// ExecutionToken returns the execution token, or an error when the
	// execution carries none.
	ExecutionToken() (secret.Value, error)
	// GatewayURL is the platform's base URL, "" when unknown.
	GatewayURL() string
	// WriteKey returns the idempotency key of the execution's next write.
	WriteKey() string
	ContextID() string
	RunID() string
	TraceID() string
}

// Turn is what Prefetch uses of a skill's turn: its execution, its input,
// its logger, its platform events and the memory budget of its request.
// *agent.Context satisfies it.
type Turn interface {
	context.Context
	Execution
	Input() string
	Logger() *slog.Logger
	PlatformEvent(name string, fields map[string]any) error
	// MemoryBudget returns the request's pre-fetch budget; ok is false
	// when it carries none.
	MemoryBudget() (tokens, latencyMS int, ok bool)
}

// From returns a Client bound to the execution c serves (a skill passes
// its *agent.Context), so a skill calls the memory service as its agent:
//   - with the execution token the platform gave it (c.ExecutionToken());
//   - at o's base URL, else $MEMORY_SERVICE_URL, else the platform
//     context's gateway_url (the platform serves memory beside its
//     gateway);
//   - a write or forget without an idempotency key takes c.WriteKey()
//     ("<idempotency_key>:<n>", n counted per execution), so a retried
//     execution replays its writes instead of repeating them;
//   - a hint without a conversation id takes the task's context id, and an
//     assemble's request and trace ids default to the run and trace ids.
//
// It fails when the execution carries no token. o may be nil.
func From(c Execution, o *FromOptions) (*Client, error) {
	tok, err := c.ExecutionToken()
	if err != nil {
		return nil, err
	}
	if o == nil {
		o = &FromOptions{}
	}
	base := cmp.Or(o.BaseURL, os.Getenv(ServiceURLEnv), c.GatewayURL())
	cl, err := NewClient(base, tok, &o.ClientOptions)
	if err != nil {
		return nil, err
	}
	cl.exec = c
	return cl, nil
}

// FromOptions configure From.
type FromOptions struct {
	ClientOptions
	// BaseURL is the service's base URL; "" finds it as From says.
	BaseURL string
}

// EventAssembled is the platform event Prefetch raises.
const EventAssembled = "memory.assembled"

type prefetchedKey struct{}

// Prefetch returns the hook (for agent.Options.BeforeSkill, with C
// *agent.Context: memory.Prefetch[*agent.Context](nil)) that runs the
// NovaOS memory guide's pre-fetch: when a request carries a memory budget
// (agent.PlatformContext.MemoryBudget: default 4,000 tokens and 800 ms), one
// assemble before the skill, with the turn's input as the query, under the
// budget. The skill reads the result with Prefetched(c), also when it is
// partial. It raises a memory.assembled platform event (retrieval_id,
// partial, sources_consulted, sources_skipped): a WORKING status frame on a
// streaming request, folded into the final message otherwise. Any failure
// (no token, service unreachable, call refused) is logged and swallowed;
// the skill runs with Prefetched(c) nil. o may be nil.
func Prefetch[C Turn](o *FromOptions) func(c C) context.Context {
	return func(c C) context.Context {
		tokens, latencyMS, ok := c.MemoryBudget()
		if !ok {
			return nil
		}
		cl, err := From(c, o)
		if err != nil {
			c.Logger().WarnContext(c, "memory: pre-fetch skipped", "err", err)
			return nil
		}
		res, err := cl.Assemble(c, &AssembleRequest{Query: clip(c.Input(), MaxQueryBytes),
			TokenBudget: &tokens, LatencyBudgetMS: &latencyMS})
		if err != nil {
			c.Logger().WarnContext(c, "memory: pre-fetch failed", "err", err)
			return nil
		}
		fields := map[string]any{"partial": res.Partial, "sources_consulted": res.SourcesConsulted, "sources_skipped": res.SourcesSkipped}
		if res.RetrievalID != nil {
			fields["retrieval_id"] = *res.RetrievalID
		}
		if err := c.PlatformEvent(EventAssembled, fields); err != nil {
			c.Logger().WarnContext(c, "memory: pre-fetch event not sent", "err", err)
		}
		return context.WithValue(c, prefetchedKey{}, res)
	}
}

// Prefetched returns what Prefetch assembled for this execution, nil when
// it did not run or failed.
func Prefetched(ctx context.Context) *AssembleResult {
	res, _ := ctx.Value(prefetchedKey{}).(*AssembleResult)
	return res
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
