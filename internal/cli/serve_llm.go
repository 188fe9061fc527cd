package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/llmgw"
)

// llmFlagSet holds serve's flags for the LLM gateway.
type llmFlagSet struct {
	maxBody, maxResponse, maxEvent       byteSize
	timeout, streamIdle, connect, cfgTTL *time.Duration
	maxTokens                            *int64
	maxInflight                          *int
	allowPrivate                         *bool
	platformTenant                       *string
	// platform carries the platform's own model calls (--embedding-url,
	// --extractor-url, --gate-judge-url gateway) to the gateway in
	// process.
	platform *llmgw.Platform
}

// gatewayURL is the value of a model URL flag that sends the platform's
// own calls through the LLM gateway.
const gatewayURL = "gateway"

func llmFlags(fs *flag.FlagSet) *llmFlagSet {
	l := &llmFlagSet{maxBody: byteSize{n: llmgw.DefaultMaxBodyBytes}, maxResponse: byteSize{n: llmgw.DefaultMaxResponseBytes},
		maxEvent: byteSize{n: llmgw.DefaultMaxEventBytes}, platform: &llmgw.Platform{}}
	fs.Var(&l.maxBody, "llm-max-body-bytes", "llm: largest request body `size` of /v1/chat/completions and /v1/embeddings; a larger one gets 413")
	fs.Var(&l.maxResponse, "llm-max-response-bytes", "llm: largest answer a provider may give to a call that is not streamed; a larger one fails the call (502)")
	fs.Var(&l.maxEvent, "llm-max-event-bytes", "llm: largest event of a provider's stream; a larger one ends the stream")
	l.timeout = fs.Duration("llm-timeout", llmgw.DefaultTimeout, "llm: time a call that is not streamed, or a stream's first event, may take at a provider that names no timeout of its own")
	l.streamIdle = fs.Duration("llm-stream-idle", llmgw.DefaultStreamIdle, "llm: longest wait for a stream's next event")
	l.connect = fs.Duration("llm-connect-timeout", llmgw.DefaultConnectTimeout, "llm: time connecting to a provider may take (then its route's next provider is tried)")
	l.maxTokens = fs.Int64("llm-default-max-tokens", llmgw.DefaultMaxTokens, "llm: answer `tokens` a chat call that names no max_tokens is assumed to take when its budget is reserved")
	l.maxInflight = fs.Int("llm-max-inflight", llmgw.DefaultMaxInflight, "llm: model calls in flight in this process; more get 503, to retry")
	l.cfgTTL = fs.Duration("llm-config-ttl", llmgw.DefaultConfigTTL, "llm: how long a model route, a provider, its key and a budget are reused before they are read again, in the background (another replica's change shows within twice it)")
	l.allowPrivate = fs.Bool("llm-allow-private", false, "llm: let providers be on loopback and private addresses (a local vLLM or Ollama); metadata addresses never")
	l.platformTenant = fs.String("llm-platform-tenant", llmgw.DefaultPlatformTenant, "llm: `tenant` the platform's own model calls (--embedding-url, --extractor-url or --gate-judge-url "+gatewayURL+") are counted and budgeted to")
	return l
}

// check reports a flag that cannot work.
func (l *llmFlagSet) check() string {
	switch {
	case l.maxBody.n <= 0 || l.maxResponse.n <= 0 || l.maxEvent.n <= 0:
		return "--llm-max-body-bytes, --llm-max-response-bytes and --llm-max-event-bytes must be positive"
	case *l.timeout <= 0 || *l.streamIdle <= 0 || *l.connect <= 0 || *l.cfgTTL <= 0:
		return "--llm-timeout, --llm-stream-idle, --llm-connect-timeout and --llm-config-ttl must be positive"
	case *l.maxTokens < 1 || *l.maxInflight < 1:
		return "--llm-default-max-tokens and --llm-max-inflight must be at least 1"
	case *l.platformTenant == "":
		return "--llm-platform-tenant must not be empty"
	}
	return ""
}

func (l *llmFlagSet) options() app.LLMOptions {
	return app.LLMOptions{MaxBodyBytes: l.maxBody.n, MaxResponseBytes: l.maxResponse.n, MaxEventBytes: int(l.maxEvent.n),
		Timeout: *l.timeout, StreamIdle: *l.streamIdle, ConnectTimeout: *l.connect, DefaultMaxTokens: *l.maxTokens,
		MaxInflight: *l.maxInflight, ConfigTTL: *l.cfgTTL, AllowPrivate: *l.allowPrivate, PlatformTenant: *l.platformTenant,
		Platform: l.platform}
}
