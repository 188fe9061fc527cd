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
//  1. The bearer token is verified; identity (tenant, instance, run) comes
//     from it alone. The X-NovaOS-* headers the SDKs add are advisory.
//  2. The body is bounded (MaxBodyBytes, 413) and read strictly: one JSON
//     object, no repeated key; model, messages, stream, stream_options,
//     max_tokens, max_completion_tokens and n (or input) are checked, and
//     every other field goes to the provider as it came.
//  3. The token must grant llm:model:<model> (403 model_not_allowed); the
//     tenant's route of that name, else the platform's, is the call's (404
//     model_not_found).
//  4. An estimate (a token per four bytes of the body, plus max_tokens, or
//     DefaultMaxTokens, for each of n answers) is reserved against the
//     tenant's and the instance's budgets, daily and per run, tokens and
//     cost, in one atomic step of the store on every replica. A budget it
//     would pass refuses the call: 429, type insufficient_quota, code
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
//  7. The reservation is settled with the provider's usage (the answer's
//     usage, the stream's last chunk), priced by the route; a provider
//     that reports none is counted at the estimate. Every call is metered
//     (novaos_llm_requests_total, novaos_llm_tokens_total,
//     novaos_llm_cost_usd_total, novaos_llm_request_duration_seconds,
//     novaos_llm_time_to_first_token_seconds), traced (a span "chat
//     <model>" or "embeddings <model>" with the GenAI attributes), kept in
//     the daily usage, and, made with a run's token, shown in the run as
//     llm.call (model, provider, tokens, cost, duration, outcome; never a
//     prompt).
//
// # Choices
//
//   - Errors on /v1 are OpenAI's: {"error": {"message", "type", "param",
//     "code"}}, so OpenAI clients raise their own error types; the
//     administration answers RFC 9457 problems like the platform's other
//     APIs.
//   - Budgets count UTC days. A reservation outlives its call only when
//     the process dies mid-call; the sweep drops it after ReservationTTL,
//     its estimate counted.
//   - The platform's own model calls (the memory service's embedder and
//     extractor, the gate's judge) may go through the gateway in process
//     (Platform), as the tenant Options.PlatformTenant with every model
//     granted, so they are routed, metered and budgeted too.
//   - Routes, providers and opened keys are cached for ConfigTTL (1s);
//     the administration of this process clears the cache at once.
package llmgw
