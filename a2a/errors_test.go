package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type wireErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

type wireError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    []wireErrorInfo `json:"data"`
}

func TestErrorCodes(t *testing.T) {
	tests := []struct {
		sentinel *Error
		code     int
		reason   string
		http     int
	}{
		{ErrParse, -32700, "PARSE_ERROR", 400},
		{ErrInvalidRequest, -32600, "INVALID_REQUEST", 400},
		{ErrMethodNotFound, -32601, "METHOD_NOT_FOUND", 404},
		{ErrInvalidParams, -32602, "INVALID_PARAMS", 400},
		{ErrInternal, -32603, "INTERNAL_ERROR", 500},
		{ErrTaskNotFound, -32001, "TASK_NOT_FOUND", 404},
		{ErrTaskNotCancelable, -32002, "TASK_NOT_CANCELABLE", 400},
		{ErrPushNotificationNotSupported, -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", 400},
		{ErrUnsupportedOperation, -32004, "UNSUPPORTED_OPERATION", 400},
		{ErrContentTypeNotSupported, -32005, "CONTENT_TYPE_NOT_SUPPORTED", 400},
		{ErrInvalidAgentResponse, -32006, "INVALID_AGENT_RESPONSE", 500},
		{ErrExtendedAgentCardNotConfigured, -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400},
		{ErrExtensionSupportRequired, -32008, "EXTENSION_SUPPORT_REQUIRED", 400},
		{ErrVersionNotSupported, -32009, "VERSION_NOT_SUPPORTED", 400},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			e := NewError(tc.code, "detail %d", 1)
			if tc.sentinel.Code != tc.code || e.Reason() != tc.reason || e.HTTPStatus() != tc.http {
				t.Fatalf("code %d: sentinel %d, reason %s, http %d", tc.code, tc.sentinel.Code, e.Reason(), e.HTTPStatus())
			}
			if !errors.Is(e, tc.sentinel) || !errors.Is(fmt.Errorf("wrapped: %w", e), tc.sentinel) {
				t.Fatal("errors.Is does not match the sentinel")
			}
			for _, other := range tests {
				if other.code != tc.code && errors.Is(e, other.sentinel) {
					t.Fatalf("errors.Is matches %s", other.reason)
				}
			}
			var got wireError
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := wireError{Code: tc.code, Message: "detail 1", Data: []wireErrorInfo{{Type: ErrorInfoType, Reason: tc.reason, Domain: ErrorDomain}}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("wire error (-want +got):\n%s", diff)
			}
			// The sentinel itself, with no message, sends the standard text.
			b, _ = json.Marshal(tc.sentinel)
			if !strings.Contains(string(b), `"message":"`+codes[tc.code].message+`"`) {
				t.Fatalf("sentinel encodes as %s", b)
			}
		})
	}
}

func TestErrorUnknownCodes(t *testing.T) {
	tests := []struct {
		code   int
		reason string
	}{
		{-32050, "A2A_ERROR"},
		{-32099, "A2A_ERROR"},
		{-32000, "A2A_ERROR"},
		{-32650, "JSONRPC_ERROR"},
		{-31402, "UNKNOWN"},
		{7, "UNKNOWN"},
	}
	for _, tc := range tests {
		e := &Error{Code: tc.code}
		if e.Reason() != tc.reason || e.HTTPStatus() != 500 || e.Text() != "Error" {
			t.Errorf("code %d: reason %s, http %d, text %q", tc.code, e.Reason(), e.HTTPStatus(), e.Text())
		}
	}
}

func TestErrorMetadataInErrorInfo(t *testing.T) {
	e := NewError(CodeVersionNotSupported, "no")
	e.Metadata = map[string]string{"z": "1", "a": "<2>"}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"code":-32009,"message":"no","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"VERSION_NOT_SUPPORTED","domain":"a2a-protocol.org","metadata":{"a":"\u003c2\u003e","z":"1"}}]}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestErrorPeerDataKeptVerbatim(t *testing.T) {
	tests := []struct {
		name, in, wantData string
	}{
		{"error info with extras", `{"code":-32001,"message":"gone","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"x","metadata":{"taskId":"t"}},{"@type":"other","v":1}]}`,
			`[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"x","metadata":{"taskId":"t"}},{"@type":"other","v":1}]`},
		{"string data", `{"code":-32603,"message":"m","data":"stack trace"}`, `"stack trace"`},
		{"object data", `{"code":-31401,"message":"m","data":{"k":[1,2]}}`, `{"k":[1,2]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Error
			if err := json.Unmarshal([]byte(tc.in), &e); err != nil {
				t.Fatal(err)
			}
			if string(e.Data) != tc.wantData {
				t.Fatalf("Data = %s, want %s", e.Data, tc.wantData)
			}
			out, err := json.Marshal(&e)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.in {
				t.Fatalf("re-encoded\n got %s\nwant %s", out, tc.in)
			}
			if !errors.Is(&e, &Error{Code: e.Code}) {
				t.Fatal("peer error does not match its code")
			}
		})
	}
	var e Error
	if err := json.Unmarshal([]byte(`{"code":"x"}`), &e); err == nil {
		t.Fatal("non-numeric code accepted")
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		e    *Error
		want string
	}{
		{NewError(CodeTaskNotFound, "task %q not found", "t1"), `a2a: task "t1" not found (-32001)`},
		{ErrTaskNotCancelable, `a2a: Task cannot be canceled (-32002)`},
		{&Error{Code: 1}, `a2a:  (1)`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestAsError(t *testing.T) {
	nf := NewError(CodeTaskNotFound, "x")
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantSame bool
	}{
		{"a2a error", nf, CodeTaskNotFound, true},
		{"wrapped a2a error", fmt.Errorf("store: %w", nf), CodeTaskNotFound, true},
		{"other error", errors.New("db password=hunter2 rejected"), CodeInternalError, false},
		{"io error", io.ErrUnexpectedEOF, CodeInternalError, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AsError(tc.err)
			if got.Code != tc.wantCode || (got == nf) != tc.wantSame {
				t.Fatalf("AsError = %+v", got)
			}
			if !tc.wantSame {
				b, _ := json.Marshal(got)
				if strings.Contains(string(b), "hunter2") || strings.Contains(got.Error(), "hunter2") {
					t.Fatalf("internal error leaks its cause: %s", b)
				}
			}
		})
	}
}
