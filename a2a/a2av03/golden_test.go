package a2av03_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current conversions")

// goldenResults names the v1 method whose result each response example
// holds (a response does not say which call it answers).
var goldenResults = map[string]string{
	"send-joke-response":        a2a.MethodSendMessage,
	"send-message-response":     a2a.MethodSendMessage,
	"input-required-response":   a2a.MethodSendMessage,
	"input-answer-response":     a2a.MethodSendMessage,
	"push-send-response":        a2a.MethodSendMessage,
	"file-result-response":      a2a.MethodSendMessage,
	"data-response":             a2a.MethodSendMessage,
	"data-non-object-response":  a2a.MethodSendMessage,
	"stream-frame-1":            a2a.MethodSendStreamingMessage,
	"stream-frame-2":            a2a.MethodSendStreamingMessage,
	"stream-frame-3":            a2a.MethodSendStreamingMessage,
	"stream-frame-4":            a2a.MethodSendStreamingMessage,
	"stream-frame-5":            a2a.MethodSendStreamingMessage,
	"status-update-frame":       a2a.MethodSubscribeToTask,
	"tasks-cancel-response":     a2a.MethodCancelTask,
	"push-set-response":         a2a.MethodCreateTaskPushNotificationConfig,
	"push-list-response":        a2a.MethodListTaskPushNotificationConfigs,
	"push-delete-response":      a2a.MethodDeleteTaskPushNotificationConfig,
	"push-notification-body":    a2a.MethodSubscribeToTask, // a 0.3 webhook body is a bare event
	"card-sample":               "card",
	"extended-card-request":     "",
	"send-joke-request":         "",
	"send-message-request":      "",
	"stream-request":            "",
	"input-required-request":    "",
	"input-answer-request":      "",
	"push-send-request":         "",
	"file-upload-request":       "",
	"data-request":              "",
	"tasks-get-request":         "",
	"tasks-cancel-request":      "",
	"tasks-resubscribe-request": "",
	"push-set-request":          "",
	"push-get-request":          "",
	"push-get-by-task-request":  "",
	"push-list-request":         "",
	"push-delete-request":       "",
}

// TestGolden reads every 0.3 example (testdata/spec from the 0.3
// specification, testdata/schema written from its JSON schema), converts
// it to v1 and back, and compares both with testdata/golden/NAME.txt. A
// request goes through DecodeRequest and EncodeRequest, a result through
// DecodeResult and EncodeResult, the card through ParseCard and
// CardFromV1. Examples the conversion refuses record the error.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/s[cp][he]*/*.json")
	if err != nil || len(files) < 30 {
		t.Fatalf("found %d examples (%v), want the 37 in testdata/spec and testdata/schema", len(files), err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			method, ok := goldenResults[name]
			if !ok {
				t.Fatalf("no entry in goldenResults for %s", name)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := convertExample(t, data, method)
			golden := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (run go test -update and review the diff):\n%s", name, golden, got)
			}
		})
	}
	for name := range goldenResults {
		if !seen[name] {
			t.Errorf("goldenResults names %s, which has no example file", name)
		}
	}
}

func convertExample(t *testing.T, data []byte, method string) string {
	var b strings.Builder
	switch {
	case method == "card":
		card, err := a2av03.ParseCard(data)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		writeJSON(t, &b, "v1", card)
		back, err := a2av03.CardFromV1(card)
		if err != nil {
			return b.String() + "error: " + err.Error() + "\n"
		}
		writeJSON(t, &b, "0.3 again", back)
	case method == "":
		req, rpcErr := a2a.DecodeRequest(data)
		if rpcErr != nil {
			t.Fatalf("envelope: %v", rpcErr)
		}
		v1Method, v1Req, e := a2av03.DecodeRequest(req.Method, req.Params)
		if e != nil {
			return fmt.Sprintf("error: %d %s\n", e.Code, e.Message)
		}
		fmt.Fprintf(&b, "method: %s -> %s\n", req.Method, v1Method)
		writeJSON(t, &b, "v1", v1Req)
		m, params, err := a2av03.EncodeRequest(v1Method, v1Req)
		if err != nil {
			return b.String() + "error: " + err.Error() + "\n"
		}
		fmt.Fprintf(&b, "method again: %s\n", m)
		writeJSON(t, &b, "0.3 again", params)
	default:
		result := data
		if bytes.Contains(data, []byte(`"jsonrpc"`)) {
			resp, err := a2a.DecodeResponse(data)
			if err != nil {
				t.Fatalf("envelope: %v", err)
			}
			result = resp.Result
		}
		v1, err := a2av03.DecodeResult(method, result)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		writeJSON(t, &b, "v1 "+method, v1)
		back, err := a2av03.EncodeResult(v1)
		if err != nil {
			return b.String() + "error: " + err.Error() + "\n"
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, back, "", "  "); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "0.3 again:\n%s\n", indented.String())
	}
	return b.String()
}

func writeJSON(t *testing.T, b *strings.Builder, label string, v any) {
	t.Helper()
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	fmt.Fprintf(b, "%s:\n%s\n", label, out)
}
