package a2asrv_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"novaos.dev/novaos/a2a"
)

// TestBindingEquivalence replays every golden JSON-RPC exchange over the
// HTTP+JSON and gRPC bindings too (TCK BIND-EQUIV): each step whose
// request another binding can express is sent to a handler set up
// identically for that binding, and all must give the same outcome: the
// same result, the same A2A error code, the same stream of frames.
func TestBindingEquivalence(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			opts := goldenOptions(ar.Comment)
			rpc := startScripted(t, opts)
			rest := startScripted(t, opts)
			grpcClient := startGRPC(t, opts)
			compared, comparedGRPC := 0, 0
			for _, f := range ar.Files {
				if !strings.HasSuffix(f.Name, ".request") {
					continue
				}
				step := strings.TrimSuffix(f.Name, ".request")
				rpcResp := doRequest(t, rpc, f.Data)
				if st, ok := grpcEquivalent(f.Data, opts); ok {
					if got, ok := runGRPC(t, grpcClient, st); ok {
						comparedGRPC++
						if want := rpcOutcome(t, rpcResp); !reflect.DeepEqual(want, got) {
							t.Errorf("step %s: JSON-RPC and gRPC differ\n--- JSON-RPC\n%s\n--- gRPC\n%s", step, want, got)
						}
					}
				}
				req, ok := restEquivalent(t, f.Data)
				if !ok {
					continue
				}
				want := rpcOutcome(t, rpcResp)
				got := restOutcome(t, doRequest(t, rest, req))
				compared++
				if !reflect.DeepEqual(want, got) {
					t.Errorf("step %s: JSON-RPC and HTTP+JSON differ\n--- JSON-RPC\n%s\n--- HTTP+JSON\n%s\n--- HTTP+JSON request\n%s", step, want, got, req)
				}
			}
			t.Logf("%d steps compared over HTTP+JSON, %d over gRPC", compared, comparedGRPC)
		})
	}
}

func startScripted(t *testing.T, opts map[string]string) *httptest.Server {
	h := newScriptedHandler(t, opts)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		h.Shutdown(ctx)
		srv.Close()
	})
	return srv
}

// outcome is what a call answered, whatever the binding: a result, an A2A
// error code, or the frames of a stream.
type outcome struct {
	Result any
	Code   int
	Frames []outcome
}

func (o outcome) String() string {
	b, _ := json.Marshal(o)
	return string(b)
}

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// splitResponse splits a recorded response into its status, whether it is
// a stream, and its body.
func splitResponse(resp []byte) (status string, stream bool, body []byte) {
	head, body, _ := bytes.Cut(resp, []byte("\n\n"))
	status, _, _ = strings.Cut(string(head), "\n")
	return status, bytes.Contains(head, []byte("Content-Type: text/event-stream")), body
}

func events(body []byte) []a2a.Event {
	var out []a2a.Event
	er := a2a.NewEventReader(bytes.NewReader(body), 0)
	for {
		ev, err := er.Next()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

func rpcOutcome(t *testing.T, resp []byte) outcome {
	one := func(b []byte) outcome {
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return outcome{Result: "not JSON-RPC: " + string(b)}
		}
		if r.Error != nil {
			return outcome{Code: r.Error.Code}
		}
		return outcome{Result: decodeAny(t, r.Result)}
	}
	status, stream, body := splitResponse(resp)
	if status == "204" {
		return outcome{Result: "no content"}
	}
	if !stream {
		return one(body)
	}
	var o outcome
	for _, ev := range events(body) {
		o.Frames = append(o.Frames, one(ev.Data))
	}
	if len(o.Frames) == 1 && o.Frames[0].Code != 0 {
		// A streaming call refused before its stream started: one error
		// event here, a plain error on HTTP+JSON.
		return o.Frames[0]
	}
	return o
}

// codeOfReason maps an ErrorInfo reason back to its code.
var codeOfReason = func() map[string]int {
	m := map[string]int{}
	for _, c := range []int{a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound, a2a.CodeInvalidParams,
		a2a.CodeInternalError, a2a.CodeTaskNotFound, a2a.CodeTaskNotCancelable, a2a.CodePushNotificationNotSupported,
		a2a.CodeUnsupportedOperation, a2a.CodeContentTypeNotSupported, a2a.CodeInvalidAgentResponse,
		a2a.CodeExtendedAgentCardNotConfigured, a2a.CodeExtensionSupportRequired, a2a.CodeVersionNotSupported, a2a.CodeUnauthenticated} {
		m[(&a2a.Error{Code: c}).Reason()] = c
	}
	return m
}()

// restErrorCode reads the A2A code out of an HTTP+JSON error body, and
// checks the body's shape on the way.
func restErrorCode(t *testing.T, status string, body []byte) int {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Status  string `json:"status"`
			Message string `json:"message"`
			Details []struct {
				Type   string `json:"@type"`
				Reason string `json:"reason"`
				Domain string `json:"domain"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || len(e.Error.Details) == 0 {
		t.Errorf("HTTP+JSON error body: %v\n%s", err, body)
		return 0
	}
	d := e.Error.Details[0]
	if d.Type != a2a.ErrorInfoType || d.Domain != a2a.ErrorDomain || e.Error.Status == "" || e.Error.Message == "" ||
		(status != "" && fmt.Sprint(e.Error.Code) != status) {
		t.Errorf("HTTP+JSON error body (status %s) malformed:\n%s", status, body)
	}
	return codeOfReason[d.Reason]
}

func restOutcome(t *testing.T, resp []byte) outcome {
	status, stream, body := splitResponse(resp)
	if !stream {
		if status != "200" {
			return outcome{Code: restErrorCode(t, status, body)}
		}
		if v := decodeAny(t, body); !reflect.DeepEqual(v, map[string]any{}) {
			return outcome{Result: v}
		}
		return outcome{Result: nil} // Empty, which JSON-RPC writes as null
	}
	var o outcome
	for _, ev := range events(body) {
		if ev.Event == "error" {
			o.Frames = append(o.Frames, outcome{Code: restErrorCode(t, "", ev.Data)})
			continue
		}
		o.Frames = append(o.Frames, outcome{Result: decodeAny(t, ev.Data)})
	}
	return o
}

// restEquivalent writes the HTTP+JSON request equivalent to a recorded
// JSON-RPC request, or says that binding cannot express it (an envelope
// error, a notification, params that a path or query cannot carry).
func restEquivalent(t *testing.T, raw []byte) ([]byte, bool) {
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	if lines[0] != "POST /" {
		return nil, false
	}
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if _, err := a2a.DecodeRequest(bytes.TrimSpace(body)); err != nil || json.Unmarshal(body, &env) != nil || env.ID == nil || len(env.ID) > 256 {
		return nil, false
	}
	jsonBody := false
	for _, l := range lines[1:] {
		if k, v, _ := strings.Cut(l, ":"); strings.EqualFold(k, "Content-Type") {
			v = strings.TrimSpace(v)
			jsonBody = strings.HasPrefix(v, "application/json") || strings.Contains(v, "+json")
		}
	}
	var params map[string]any
	if len(env.Params) > 0 {
		if err := json.Unmarshal(env.Params, &params); err != nil {
			return nil, false
		}
	}
	str := func(k string) (string, bool) {
		s, ok := params[k].(string)
		return s, ok && s != ""
	}
	prefix := ""
	if tenant, ok := str("tenant"); ok {
		prefix = "/" + url.PathEscape(tenant)
	}
	var verb, path string
	withBody, query := false, url.Values{}
	addQuery := func(keys ...string) bool {
		for _, k := range keys {
			switch v := params[k].(type) {
			case nil:
			case string:
				query.Set(k, v)
			case float64, bool:
				query.Set(k, fmt.Sprint(v))
			default:
				return false
			}
		}
		return true
	}
	needs := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := str(k); !ok {
				return false
			}
		}
		return true
	}
	switch env.Method {
	case a2a.MethodSendMessage:
		verb, path, withBody = "POST", "/message:send", true
	case a2a.MethodSendStreamingMessage:
		verb, path, withBody = "POST", "/message:stream", true
	case a2a.MethodGetTask:
		if !needs("id") || !addQuery("historyLength") {
			return nil, false
		}
		verb, path = "GET", "/tasks/"+url.PathEscape(params["id"].(string))
	case a2a.MethodListTasks:
		if !addQuery("contextId", "status", "pageSize", "pageToken", "historyLength", "statusTimestampAfter", "includeArtifacts") {
			return nil, false
		}
		verb, path = "GET", "/tasks"
	case a2a.MethodCancelTask:
		if !needs("id") {
			return nil, false
		}
		verb, path, withBody = "POST", "/tasks/"+url.PathEscape(params["id"].(string))+":cancel", true
	case a2a.MethodSubscribeToTask:
		if !needs("id") {
			return nil, false
		}
		verb, path, withBody = "POST", "/tasks/"+url.PathEscape(params["id"].(string))+":subscribe", true
	case a2a.MethodCreateTaskPushNotificationConfig:
		if !needs("taskId") {
			return nil, false
		}
		verb, path, withBody = "POST", "/tasks/"+url.PathEscape(params["taskId"].(string))+"/pushNotificationConfigs", true
	case a2a.MethodGetTaskPushNotificationConfig, a2a.MethodDeleteTaskPushNotificationConfig:
		if !needs("taskId", "id") {
			return nil, false
		}
		verb = "GET"
		if env.Method == a2a.MethodDeleteTaskPushNotificationConfig {
			verb = "DELETE"
		}
		path = "/tasks/" + url.PathEscape(params["taskId"].(string)) + "/pushNotificationConfigs/" + url.PathEscape(params["id"].(string))
	case a2a.MethodListTaskPushNotificationConfigs:
		if !needs("taskId") || !addQuery("pageSize", "pageToken") {
			return nil, false
		}
		verb, path = "GET", "/tasks/"+url.PathEscape(params["taskId"].(string))+"/pushNotificationConfigs"
	case a2a.MethodGetExtendedAgentCard:
		verb, path = "GET", "/extendedAgentCard"
	default:
		return nil, false
	}
	if !withBody && !jsonBody {
		// The JSON-RPC request is refused for its Content-Type, which a
		// request without a body does not have.
		return nil, false
	}
	if !withBody {
		// Only what the path and query carry reaches the server: params
		// with anything else (a typo the strict decoder refuses) have no
		// equivalent.
		allowed := map[string]bool{"tenant": true, "id": true, "taskId": true}
		for k := range query {
			allowed[k] = true
		}
		for k := range params {
			if !allowed[k] {
				return nil, false
			}
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s%s", verb, prefix, path)
	if len(query) > 0 {
		b.WriteString("?" + query.Encode())
	}
	b.WriteByte('\n')
	for _, l := range lines[1:] {
		if !withBody && strings.HasPrefix(strings.ToLower(l), "content-type:") {
			continue
		}
		b.WriteString(l + "\n")
	}
	b.WriteByte('\n')
	if withBody {
		p := bytes.TrimSpace(env.Params)
		if len(p) == 0 {
			p = []byte("{}")
		}
		b.Write(p)
		b.WriteByte('\n')
	}
	return b.Bytes(), true
}
