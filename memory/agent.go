package memory

import (
	"cmp"
	"context"
	"os"

	"novaos.dev/novaos/agent"
)

// From returns a Client bound to the execution c serves, so a skill calls
// the memory service as its agent:
//   - with the execution token the platform gave it (c.Execution());
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
func From(c *agent.Context, o *FromOptions) (*Client, error) {
	tok, err := c.Execution().RequireToken()
	if err != nil {
		return nil, err
	}
	if o == nil {
		o = &FromOptions{}
	}
	base := cmp.Or(o.BaseURL, os.Getenv(ServiceURLEnv), c.Platform().GatewayURL)
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

// Prefetch returns the hook (for agent.Options.BeforeSkill) that runs the
// NovaOS memory guide's pre-fetch: when a request carries a memory budget
// (agent.PlatformContext.MemoryBudget: default 4,000 tokens and 800 ms), one
// assemble before the skill, with the turn's input as the query, under the
// budget. The skill reads the result with Prefetched(c), also when it is
// partial. It raises a memory.assembled platform event (retrieval_id,
// partial, sources_consulted, sources_skipped): a WORKING status frame on a
// streaming request, folded into the final message otherwise. Any failure
// (no token, service unreachable, call refused) is logged and swallowed;
// the skill runs with Prefetched(c) nil. o may be nil.
func Prefetch(o *FromOptions) func(c *agent.Context) context.Context {
	return func(c *agent.Context) context.Context {
		budget := c.Platform().MemoryBudget
		if budget == nil {
			return nil
		}
		cl, err := From(c, o)
		if err != nil {
			c.Logger().WarnContext(c, "memory: pre-fetch skipped", "err", err)
			return nil
		}
		res, err := cl.Assemble(c, &AssembleRequest{Query: clip(c.Input(), MaxQueryBytes),
			TokenBudget: &budget.TokenBudget, LatencyBudgetMS: &budget.LatencyBudgetMS})
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
		return context.WithValue(c.Context, prefetchedKey{}, res)
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
