package a2asrv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// FuzzREST sends arbitrary verbs, paths, queries and bodies to the
// HTTP+JSON binding: it must never panic, and every answer it gives as the
// binding is a well-formed error body or a 200.
func FuzzREST(f *testing.F) {
	for _, seed := range []struct{ verb, target, body string }{
		{"POST", "/message:send", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"complete"}]}}`},
		{"POST", "/t1/message:stream", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"chunks"}]}}`},
		{"GET", "/tasks/x?historyLength=3", ""},
		{"GET", "/tasks?status=TASK_STATE_WORKING&pageSize=2&statusTimestampAfter=2026-01-01T00:00:00Z&includeArtifacts=true", ""},
		{"POST", "/tasks/a%2Fb:cancel", `{"metadata":{"k":1}}`},
		{"GET", "/tasks/x:subscribe", ""},
		{"POST", "/tasks/x/pushNotificationConfigs", `{"url":"https://h.example/x"}`},
		{"DELETE", "/acme/tasks/x/pushNotificationConfigs/c", ""},
		{"GET", "/extendedAgentCard?A2A-Version=1.0", ""},
		{"GET", "/%zz/tasks", ""},
		{"PUT", "/tasks", "{}"},
	} {
		f.Add(seed.verb, seed.target, seed.body)
	}
	// An executor that never waits: a fuzzed message must not park a
	// worker (scripted's "wait" would).
	done := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	})
	h := a2asrv.NewHandler(testCard(), done, &a2asrv.Options{
		PushConfigStore: a2asrv.NewMemoryPushConfigStore(nil), MaxBodyBytes: 4096,
	})
	f.Cleanup(func() { h.Shutdown(f.Context()) })
	f.Fuzz(func(t *testing.T, verb, target, body string) {
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		req, err := http.NewRequest(verb, "http://agent"+target, strings.NewReader(body))
		if err != nil || req.URL.Path == "/" || req.URL.Path == a2a.WellKnownCardPath {
			return
		}
		req.Header.Set("Content-Type", "application/a2a+json")
		req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		ct := rec.Header().Get("Content-Type")
		if rec.Code == http.StatusOK || !strings.HasPrefix(ct, "application/a2a+json") {
			return
		}
		var e struct {
			Error struct {
				Code    int               `json:"code"`
				Status  string            `json:"status"`
				Details []json.RawMessage `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != rec.Code || e.Error.Status == "" ||
			len(e.Error.Details) == 0 || !bytes.Contains(e.Error.Details[0], []byte(a2a.ErrorInfoType)) {
			t.Fatalf("%s %s: status %d, error body %s", verb, target, rec.Code, rec.Body.Bytes())
		}
	})
}
