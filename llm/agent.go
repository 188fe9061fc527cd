package llm

import (
	"cmp"
	"fmt"
	"net/http"
	"os"
	"strings"

	"novaos.dev/novaos/secret"
)

// GatewayURLEnv names the environment variable From reads the gateway's
// OpenAI base URL from, as the NovaOS Python SDK's LLMClient does.
const GatewayURLEnv = "LLM_GATEWAY_URL"

// Execution is what From uses of the execution a skill serves.
// *agent.Context satisfies it; llm declares it rather than importing the
// agent SDK or the token verifier, so the stores built on this package's
// contracts link neither.
type Execution interface {
	// ExecutionToken returns the execution token, or an error when the
	// execution carries none.
	ExecutionToken() (secret.Value, error)
	// GatewayURL is the platform's base URL, "" when unknown.
	GatewayURL() string
	// CorrelationHeaders are the X-NovaOS-* headers of the ids the
	// execution acts under, without the token.
	CorrelationHeaders() map[string]string
	// Traceparent is the execution's W3C trace context, "" when none.
	Traceparent() string
}

// FromOptions configure From; nil or zero fields mean the defaults.
type FromOptions struct {
	// Options configure the client; Headers gain the execution's
	// X-NovaOS-* headers, and Traceparent defaults to the execution's.
	Options
	// BaseURL is the gateway's OpenAI base URL; "" finds it as From says.
	BaseURL string
}

// From returns a client of the platform's LLM gateway for the execution
// c serves (a skill passes its *agent.Context), calling as the run:
//   - at o's BaseURL, else LLM_GATEWAY_URL, else the platform context's
//     gateway_url + "/v1" (the gateway serves the OpenAI API under /v1,
//     so LLM_GATEWAY_URL, like an OpenAI base URL, ends in /v1);
//   - with the execution token as its bearer token, which the gateway
//     checks, and whose llm:model:* scopes decide the models the run may
//     use and whose run, instance and tenant budgets each call is
//     charged to;
//   - with the execution's X-NovaOS-* headers (user, tenant, run, agent,
//     instance, conversation; never the token) for correlation, and its
//     traceparent when the call's context carries no span.
//
// o may be nil.
func From(c Execution, o *FromOptions) (*Client, error) {
	tok, err := c.ExecutionToken()
	if err != nil {
		return nil, fmt.Errorf("llm: no token to call the gateway with: %w", err)
	}
	if o == nil {
		o = &FromOptions{}
	}
	base := cmp.Or(o.BaseURL, os.Getenv(GatewayURLEnv))
	if base == "" {
		if g := c.GatewayURL(); g != "" {
			base = strings.TrimRight(g, "/") + "/v1"
		}
	}
	if base == "" {
		return nil, fmt.Errorf("llm: no gateway URL: set FromOptions.BaseURL or %s, or run under the platform (gateway_url)", GatewayURLEnv)
	}
	opts := o.Options
	opts.Headers = opts.Headers.Clone()
	if opts.Headers == nil {
		opts.Headers = http.Header{}
	}
	for k, v := range c.CorrelationHeaders() {
		if opts.Headers.Get(k) == "" {
			opts.Headers.Set(k, v)
		}
	}
	opts.Traceparent = cmp.Or(opts.Traceparent, c.Traceparent())
	return New(base, tok, &opts)
}
