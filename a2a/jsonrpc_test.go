package a2a

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeRequestEchoesID(t *testing.T) {
	ids := []struct {
		name string
		id   string // as written in the request; "" means absent
		want string // as echoed
	}{
		{"string", `"abc"`, `"abc"`},
		{"empty string", `""`, `""`},
		{"unicode string", `"héllo 日本 🚀"`, `"héllo 日本 🚀"`},
		{"escaped string", `"a\u00e9\"b\\"`, `"a\u00e9\"b\\"`},
		{"zero", `0`, `0`},
		{"negative", `-5`, `-5`},
		{"fraction", `1.5`, `1.5`},
		{"exponent", `1e3`, `1e3`},
		{"big number beyond int64", `123456789012345678901234567890`, `123456789012345678901234567890`},
		{"big number beyond float64 precision", `9007199254740993`, `9007199254740993`},
		{"null", `null`, `null`},
		{"absent", ``, `null`},
	}
	for _, tc := range ids {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"t"}}`
			if tc.id != "" {
				body = `{"jsonrpc":"2.0", "id" : ` + tc.id + ` ,"method":"GetTask","params":{"id":"t"}}`
			}
			req, rpcErr := DecodeRequest([]byte(body))
			if rpcErr != nil {
				t.Fatalf("DecodeRequest: %v", rpcErr)
			}
			if string(req.ID) != tc.want {
				t.Fatalf("ID = %s, want %s", req.ID, tc.want)
			}
			if req.Method != MethodGetTask || string(req.Params) != `{"id":"t"}` {
				t.Fatalf("Method = %q, Params = %s", req.Method, req.Params)
			}
			resp := AppendResult(nil, req.ID, []byte(`{"id":"t"}`))
			if want := `{"jsonrpc":"2.0","id":` + tc.want + `,"result":{"id":"t"}}`; string(resp) != want {
				t.Fatalf("AppendResult = %s, want %s", resp, want)
			}
		})
	}
}

func TestDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantID   string
	}{
		{"empty body", ``, CodeParseError, `null`},
		{"whitespace", " \n", CodeParseError, `null`},
		{"truncated", `{"jsonrpc":"2.0","id":1,`, CodeParseError, `null`},
		{"not json", `hello`, CodeParseError, `null`},
		{"trailing garbage", `{"jsonrpc":"2.0","id":1,"method":"x"} {}`, CodeParseError, `null`},
		{"single quotes", `{'jsonrpc':'2.0'}`, CodeParseError, `null`},
		{"invalid batch", `[{"jsonrpc":"2.0",`, CodeParseError, `null`},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]`, CodeInvalidRequest, `null`},
		{"empty batch", ` [ ] `, CodeInvalidRequest, `null`},
		{"top-level string", `"x"`, CodeInvalidRequest, `null`},
		{"top-level number", `5`, CodeInvalidRequest, `null`},
		{"top-level null", `null`, CodeInvalidRequest, `null`},
		{"empty object", `{}`, CodeInvalidRequest, `null`},
		{"missing jsonrpc", `{"id":1,"method":"GetTask"}`, CodeInvalidRequest, `1`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"GetTask"}`, CodeInvalidRequest, `1`},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":"a","method":"GetTask"}`, CodeInvalidRequest, `"a"`},
		{"jsonrpc null", `{"jsonrpc":null,"id":1,"method":"GetTask"}`, CodeInvalidRequest, `1`},
		{"missing method", `{"jsonrpc":"2.0","id":1}`, CodeInvalidRequest, `1`},
		{"empty method", `{"jsonrpc":"2.0","id":1,"method":""}`, CodeInvalidRequest, `1`},
		{"method number", `{"jsonrpc":"2.0","id":1,"method":5}`, CodeInvalidRequest, `1`},
		{"method null", `{"jsonrpc":"2.0","id":1,"method":null}`, CodeInvalidRequest, `1`},
		{"method object", `{"jsonrpc":"2.0","id":1,"method":{}}`, CodeInvalidRequest, `1`},
		{"method array before id", `{"jsonrpc":"2.0","method":[],"id":"x"}`, CodeInvalidRequest, `"x"`},
		{"id true", `{"jsonrpc":"2.0","id":true,"method":"GetTask"}`, CodeInvalidRequest, `null`},
		{"id object", `{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}`, CodeInvalidRequest, `null`},
		{"id array", `{"jsonrpc":"2.0","id":[1],"method":"GetTask"}`, CodeInvalidRequest, `null`},
		{"bad id and bad method", `{"jsonrpc":"2.0","id":{},"method":1}`, CodeInvalidRequest, `null`},
		{"params array", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}`, CodeInvalidParams, `1`},
		{"params string", `{"jsonrpc":"2.0","id":"s","method":"GetTask","params":"x"}`, CodeInvalidParams, `"s"`},
		{"params number", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":3}`, CodeInvalidParams, `1`},
		{"params bool", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":true}`, CodeInvalidParams, `1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, rpcErr := DecodeRequest([]byte(tc.body))
			if rpcErr == nil {
				t.Fatalf("DecodeRequest(%s) succeeded: %+v", tc.body, req)
			}
			if rpcErr.Code != tc.wantCode {
				t.Fatalf("code = %d (%v), want %d", rpcErr.Code, rpcErr, tc.wantCode)
			}
			if req == nil || string(req.ID) != tc.wantID {
				t.Fatalf("ID = %s, want %s", req.ID, tc.wantID)
			}
			resp := AppendErrorResponse(nil, req.ID, rpcErr)
			var env struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(resp, &env); err != nil {
				t.Fatalf("error response is not JSON: %s", resp)
			}
			if env.JSONRPC != "2.0" || string(env.ID) != tc.wantID || env.Error.Code != tc.wantCode {
				t.Fatalf("error response = %s", resp)
			}
		})
	}
}

func TestDecodeRequestParams(t *testing.T) {
	tests := []struct {
		name   string
		params string // "" means absent
	}{
		{"absent", ""},
		{"null", `null`},
		{"empty object", `{}`},
		{"object with spaces", ` { "id" : "t" } `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`
			if tc.params != "" {
				body = `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard","params":` + tc.params + `}`
			}
			req, rpcErr := DecodeRequest([]byte(body))
			if rpcErr != nil {
				t.Fatal(rpcErr)
			}
			var p GetExtendedAgentCardRequest
			if e := DecodeParams(req.Params, &p); e != nil {
				t.Fatal(e)
			}
		})
	}
}

func TestDecodeParams(t *testing.T) {
	tests := []struct {
		name     string
		params   string
		want     GetTaskRequest
		wantMsg  string // substring of the error message; "" means success
		wantCode int
	}{
		{name: "camel", params: `{"id":"t","historyLength":2}`, want: GetTaskRequest{ID: "t", HistoryLength: ptr(int32(2))}},
		{name: "snake", params: `{"id":"t","history_length":0,"tenant":"x"}`, want: GetTaskRequest{ID: "t", HistoryLength: ptr(int32(0)), Tenant: "x"}},
		{name: "null", params: `null`, want: GetTaskRequest{}},
		{name: "absent", params: ``, want: GetTaskRequest{}},
		{name: "wrong type", params: `{"id":5}`, wantMsg: "field id: want string", wantCode: CodeInvalidParams},
		{name: "overflow", params: `{"id":"t","historyLength":99999999999}`, wantMsg: "historyLength", wantCode: CodeInvalidParams},
		{name: "malformed", params: `{"id":`, wantMsg: "malformed JSON", wantCode: CodeInvalidParams},
		{name: "not an object", params: `[1]`, wantMsg: "want", wantCode: CodeInvalidParams},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got GetTaskRequest
			e := DecodeParams(json.RawMessage(tc.params), &got)
			if tc.wantMsg != "" {
				if e == nil {
					t.Fatalf("DecodeParams(%s) = %+v, want error", tc.params, got)
				}
				if e.Code != tc.wantCode || !strings.Contains(e.Message, tc.wantMsg) {
					t.Fatalf("error = %d %q, want %d containing %q", e.Code, e.Message, tc.wantCode, tc.wantMsg)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeParamsPartError(t *testing.T) {
	var req SendMessageRequest
	e := DecodeParams(json.RawMessage(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":"b"}]}}`), &req)
	if e == nil || e.Code != CodeInvalidParams || !strings.Contains(e.Message, "exactly one") {
		t.Fatalf("DecodeParams = %v, want invalid params naming the oneof", e)
	}
}

func TestAppendResponses(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"result", AppendResult([]byte("x"), json.RawMessage(`"id"`), []byte(`{"a":1}`)), `x{"jsonrpc":"2.0","id":"id","result":{"a":1}}`},
		{"null result", AppendResult(nil, json.RawMessage(`7`), []byte(`null`)), `{"jsonrpc":"2.0","id":7,"result":null}`},
		{"nil id", AppendResult(nil, nil, []byte(`1`)), `{"jsonrpc":"2.0","id":null,"result":1}`},
		{"error", AppendErrorResponse(nil, json.RawMessage(`1`), NewError(CodeTaskNotFound, "task %s not found", "t")),
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"task t not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`},
		{"error with bad peer data falls back to internal", AppendErrorResponse(nil, nil, &Error{Code: CodeTaskNotFound, Data: json.RawMessage(`{`)}),
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"INTERNAL_ERROR","domain":"a2a-protocol.org"}]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if string(tc.got) != tc.want {
				t.Fatalf("got  %s\nwant %s", tc.got, tc.want)
			}
		})
	}
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantResult string
		wantCode   int
		wantData   string
		wantErr    bool
	}{
		{name: "result", body: `{"jsonrpc":"2.0","id":1,"result":{"id":"t"}}`, wantResult: `{"id":"t"}`},
		{name: "null result", body: `{"jsonrpc":"2.0","id":1,"result":null}`, wantResult: `null`},
		{name: "error with ErrorInfo", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"nope","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]}}`,
			wantCode: CodeTaskNotFound, wantData: `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org"}]`},
		{name: "error with odd data", body: `{"jsonrpc":"2.0","id":null,"error":{"code":-31401,"message":"auth","data":{"x": 1}}}`, wantCode: -31401, wantData: `{"x": 1}`},
		// a2a-go leaves "result" out for an Empty result.
		{name: "neither reads as null result", body: `{"jsonrpc":"2.0","id":1}`, wantResult: `null`},
		{name: "invalid", body: `{"jsonrpc":`, wantErr: true},
		{name: "error not an object", body: `{"jsonrpc":"2.0","id":1,"error":"x"}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeResponse([]byte(tc.body))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("DecodeResponse succeeded: %+v", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Result) != tc.wantResult {
				t.Errorf("Result = %s, want %s", r.Result, tc.wantResult)
			}
			if tc.wantCode != 0 {
				if r.Error == nil || r.Error.Code != tc.wantCode || string(r.Error.Data) != tc.wantData {
					t.Fatalf("Error = %+v, want code %d data %s", r.Error, tc.wantCode, tc.wantData)
				}
			}
		})
	}
}
