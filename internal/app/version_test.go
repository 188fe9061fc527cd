package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/app"
)

// A hosted agent's URL serves A2A 0.3 too: a call without A2A-Version is
// read as 0.3, and one whose method 0.3 lacks is answered for what it
// most likely is.
func TestHostedAgentVersionlessCalls(t *testing.T) {
	srv := start(t, &app.Options{DataDir: t.TempDir()})
	tests := []struct {
		name, method, params string
		want                 rpcAnswer
	}{
		{"v1 method", a2a.MethodSendMessage, `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}`,
			rpcAnswer{a2a.CodeVersionNotSupported, `the A2A-Version header is missing: a request without it is A2A 0.3, which has no method "SendMessage"; send A2A-Version: 1.0`}},
		{"unknown method", "bogus/method", `{}`, rpcAnswer{a2a.CodeMethodNotFound, `method "bogus/method" not found`}},
		{"0.3 method", "tasks/get", `{"id":"no-such-task"}`, rpcAnswer{a2a.CodeTaskNotFound, "task not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+"/agents/echo",
				strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+tc.method+`","params":`+tc.params+`}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			r, err := a2a.DecodeResponse(b)
			if err != nil || r.Error == nil {
				t.Fatalf("answer %d %s: %v", resp.StatusCode, b, err)
			}
			if diff := cmp.Diff(tc.want, rpcAnswer{r.Error.Code, r.Error.Message}, cmp.AllowUnexported(rpcAnswer{})); diff != "" {
				t.Errorf("answer (-want +got)\n%s", diff)
			}
		})
	}
}

// rpcAnswer is a JSON-RPC error's code and message.
type rpcAnswer struct {
	code int
	msg  string
}
