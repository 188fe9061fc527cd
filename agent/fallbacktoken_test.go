package agent

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/secret"
)

// seed 000, novaos_client_sdk.execution_context.ExecutionContext.from_headers:
// "If X-NovaOS-Execution-Token is absent from the headers (e.g. the agent
// is running outside the auth-proxy sidecar), the method falls back to
// the NOVAOS_EXECUTION_TOKEN environment variable before returning None."
// The agent takes the variable's value through Options.ExecutionToken (its
// program reads it with envconfig), so a token the request carries still
// wins and the agent never reads the environment.
func TestExecutionTokenFallback(t *testing.T) {
	const fallback = "tok-from-env"
	tests := []struct {
		name     string
		pc       map[string]any
		header   string // X-NovaOS-Execution-Token
		fallback string
		want     string
	}{
		{"no token anywhere: the fallback", nil, "", fallback, fallback},
		{"no token, no fallback", nil, "", "", ""},
		{"the platform context wins", map[string]any{"execution_token": "tok-pc"}, "", fallback, "tok-pc"},
		{"the auth proxy's header wins", nil, "tok-hdr", fallback, "tok-hdr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("x")
			if tt.pc != nil {
				req.Metadata = map[string]any{ContextMetadataKey: tt.pc}
			}
			req.Header = http.Header{}
			if tt.header != "" {
				req.Header.Set(identity.HeaderExecutionToken, tt.header)
			}
			a := New("fb", "1", &Options{ExecutionToken: secret.New(tt.fallback)})
			c := capture(t, a, req)
			tok, err := c.ExecutionToken()
			if tok.Reveal() != tt.want || (tt.want == "") != errors.Is(err, identity.ErrNoToken) {
				t.Fatalf("token set %v (want set %v), err %v", !tok.IsZero(), tt.want != "", err)
			}
			if s := fmt.Sprintf("%v %+v", c.Execution(), a.opts); strings.Contains(s, fallback) {
				t.Error("the fallback token shows in fmt output")
			}
		})
	}
}
