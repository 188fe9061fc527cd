// Package llmgw is the LLM gateway: models behind the platform's tokens,
// routes and budgets.
//
// `novaos serve` serves OpenAI's API at /v1, so agents call models with
// any OpenAI SDK, the execution token as the API key (the NovaOS SDKs'
// LLMClient does that):
//
//	POST /v1/chat/completions   answered whole, or streamed as server-sent events
//	POST /v1/embeddings
//	GET  /v1/models             the models the token's llm:model:<name> scopes grant
//	GET  /v1/models/{model}
//
// and its administration under /api/v1/llm (package llm names the paths
// and bodies): the providers (any OpenAI-compatible base URL, the API key
// sealed at rest with the server's sealing key and never shown again),
// the model routes (a public name, its providers in order, its price per
// million tokens), budgets, and daily usage.
//
// # A call's path
//
//  1. The bearer token is verified; identity (tenant, instance, run) and
//     the run's own limit, if it has one, come from it alone. The
//     X-NovaOS-* headers the SDKs add are advisory.
//  2. The body is bounded (MaxBodyBytes, 413) and read strictly: one JSON
//     object, no repeated key; model, messages, stream, stream_options,
//     max_tokens, max_completion_tokens and n (or input) are checked, and
//     every other field goes to the provider as it came.
//  3. The token must grant llm:model:<model> (403 model_not_allowed); the
//     tenant's route of that name, else the platform's, is the call's (404
//     model_not_found).
//  4. An estimate (a token per four bytes of the body, plus max_tokens, or
//     DefaultMaxTokens, for each of n answers) is held against the budgets
//     that apply (the tenant's and the instance's; daily and per run;
//     tokens and cost; and the run's own limit), from this replica's
//     budget leases, in memory (see Budgets). A budget it would pass
//     refuses the call: 429, type insufficient_quota, code
//     budget_exceeded, its message naming the budget.
//  5. The route's targets are called in order. One that answers 429 or
//     5xx, refuses the gateway's key (401, 403) or cannot be reached in
//     time is left for the next, as long as nothing was sent to the
//     caller; once a byte was, the call ends with that provider. Another
//     4xx is the caller's, passed on in OpenAI's shape. Providers are
//     dialled through the SSRF guard (public addresses only, unless
//     AllowPrivate), redirects are not followed, and the W3C traceparent
//     of the call's span goes along.
//  6. A stream is passed on event by event, each flushed as it arrives,
//     never gathered. The gateway asks the provider for the stream's usage
//     (stream_options.include_usage) and drops that chunk again when the
//     caller did not ask for it.
//  7. The call is settled with the provider's usage (the answer's usage,
//     the stream's last chunk), priced by the route; a provider that
//     reports none is counted at the estimate. Every call is metered
//     (novaos_llm_requests_total, novaos_llm_tokens_total,
//     novaos_llm_cost_usd_total, novaos_llm_request_duration_seconds,
//     novaos_llm_time_to_first_token_seconds), traced (a span "chat
//     <model>" or "embeddings <model>" with the GenAI attributes), kept in
//     the daily usage, and, made with a run's token, shown in the run as
//     llm.call (model, provider, tokens, cost, duration, outcome; never a
//     prompt). Usage is written in batches every FlushEvery, not by the
//     call; a run event is written before the call's answer ends (a
//     stream's [DONE] waits for it), one write for the calls ending
//     together, since a run that has ended takes no more events.
//
// # Budgets
//
// A budget counter (a tenant's UTC day, an instance's, a run) that a
// budget limits is spent through leases. A replica leases a slice of the
// counter's free allowance in one atomic write of the store
// (llm.Store.Lease: the store checks the limit against what the
// counter's calls used and all the replicas' leases hold, together),
// sized for LeaseAhead of the counter's recent spending and at least four
// calls, and at most LeaseShare of what is free beyond a call's need.
// Calls take their estimates from it in memory: no write, no wait, on
// their path. The background loop grows a lease before it runs short,
// writes what calls used every FlushEvery in one batch (llm.Store.Commit),
// renews leases, and returns the allowance of those unused for LeaseIdle,
// and of all at Shutdown. A counter no budget limits needs no lease: its
// usage is written in the batches too.
//
// What that guarantees:
//
//   - The replicas never overspend a budget together. A call is let
//     through only when its estimate fits in allowance the store granted
//     this replica, and the store grants no more than is free. As with a
//     single process, a budget is passed only by what calls use beyond
//     their estimates (a provider's answer longer than max_tokens allows,
//     a prompt of more tokens than a token per four bytes).
//   - A replica that dies does not free what it may have spent: its leases
//     expire after LeaseTTL and the sweep leaves their allowance counted as
//     used, so the others never give it out twice. The cost is that, until
//     the counter's window ends, up to one lease slice per counter the dead
//     replica was spending is withheld. Its calls of the last FlushEvery
//     are missing from the usage report; their use beyond their estimates,
//     if any, is missing from the counters.
//   - A budget changed on any replica applies on every replica within
//     twice ConfigTTL, the cache of budgets: a lease taken under the old
//     limit is then retired (its rest returned) and the next is decided
//     by the new one. Until then a replica may spend what its lease
//     holds.
//   - Near a limit, a call may be refused while another replica's lease
//     still holds allowance it has not spent (under five estimates per
//     replica and counter); it comes back when that lease is next used
//     up, returned after LeaseIdle, or at that replica's shutdown.
//   - A replica that cannot write to the store serves calls from its
//     leases until they run short or expire (LeaseTTL), and then refuses
//     them (500) rather than spend unchecked.
//   - The first call of a counter on a replica (a tenant's day, an
//     instance's day, a run, when a budget limits it) waits for the lease
//     write, as does a call that finds its lease short: a write the
//     background growth mostly spares them.
//
// # Choices
//
//   - Errors on /v1 are OpenAI's: {"error": {"message", "type", "param",
//     "code"}}, so OpenAI clients raise their own error types; the
//     administration answers RFC 9457 problems like the platform's other
//     APIs.
//   - Budgets count UTC days.
//   - A run may have a limit of its own (tokens, cost): the platform gives
//     one to a run a schedule starts, what the schedule's daily budget has
//     left. It bounds the run's counter with the per-run budgets, the
//     tightest applying, through the same leases (the store decides each
//     lease with it, llm.LeaseAsk.RunLimit), so it holds across replicas
//     as exactly as they do; a refusal names it as the run's schedule
//     limit. The limit rides in the run's execution token
//     (identity.Claims.LLMMaxTokens, LLMMaxCostUSD), which the execution
//     gateway mints from the run record for each turn and for each agent
//     the run calls: the gateway verifies that token on every call anyway,
//     so it learns the limit with no read of the run, and the agent cannot
//     change it without breaking the signature.
//   - The platform's own model calls (the memory service's embedder and
//     extractor, the gate's judge) may go through the gateway in process
//     (Platform), as the tenant Options.PlatformTenant with every model
//     granted, so they are routed, metered and budgeted too.
//   - Routes, providers, budgets and opened keys are cached: fresh for
//     ConfigTTL (1s), then answered while one read of them runs in the
//     background for ConfigTTL more, so that a call does not wait for the
//     store; the administration of this process clears the cache at once.
package llmgw
