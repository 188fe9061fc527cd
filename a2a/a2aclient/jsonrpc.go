package a2aclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// jsonrpcTransport speaks the JSON-RPC 2.0 binding: every call is a POST of
// one envelope to the interface URL; streams answer with SSE events whose
// data are JSON-RPC responses.
//
// An interface that states protocol version 0.3 gets the same wire in A2A
// 0.3's dialect (v03): each call goes out as its 0.3 method and params
// (a2av03.EncodeRequest), without A2A-Version (0.3 has none) and with the
// extensions in X-A2A-Extensions, and each result and stream frame is read
// with a2av03.DecodeResult into the v1 type the Client returns. Errors
// need no conversion: 0.3's JSON-RPC error objects and codes are v1's.
type jsonrpcTransport struct {
	httpWire
	url    string
	nextID atomic.Int64
	v03    bool
}

var _ Transport = (*jsonrpcTransport)(nil)

// headerExtensions03 is the header A2A 0.3 lists extensions in.
const headerExtensions03 = "X-A2A-Extensions"

// NewJSONRPCTransport is the TransportFactory of the JSON-RPC binding
// (a2a.BindingJSONRPC). It speaks A2A 0.3 to an interface whose
// ProtocolVersion is 0.3 or 0.3.x, and v1 otherwise.
func NewJSONRPCTransport(cfg *TransportConfig) (Transport, error) {
	w, err := newHTTPWire(a2a.BindingJSONRPC, cfg)
	if err != nil {
		return nil, err
	}
	return &jsonrpcTransport{httpWire: w, url: cfg.Interface.URL, v03: isV03(cfg.Interface.ProtocolVersion)}, nil
}

// isV03 reports whether a protocol version is A2A 0.3.
func isV03(v string) bool { return v == "0.3" || strings.HasPrefix(v, "0.3.") }

// envelope encodes the request in the interface's dialect; for 0.3 it also
// moves call.Header's service parameters where 0.3 carries them, so
// interceptors' After sees what was sent.
func (t *jsonrpcTransport) envelope(call *Call) ([]byte, error) {
	method, params := call.Method, call.Params
	if t.v03 {
		var err error
		if method, params, err = a2av03.EncodeRequest(call.Method, call.Params); err != nil {
			// ListTasks: an *a2a.Error (UnsupportedOperation), so
			// errors.Is(err, a2a.ErrUnsupportedOperation) holds.
			return nil, fmt.Errorf("a2aclient: %s: the agent speaks A2A 0.3: %w", call.Method, err)
		}
		call.Header.Del(a2a.HeaderVersion)
		if ext := call.Header.Values(a2a.HeaderExtensions); len(ext) > 0 {
			call.Header.Del(a2a.HeaderExtensions)
			call.Header[headerExtensions03] = ext
		}
	}
	id := t.nextID.Add(1)
	body := make([]byte, 0, 512)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":"`...)
	body = append(body, method...)
	body = append(body, '"')
	// 0.3's agent/getAuthenticatedExtendedCard takes no params.
	if params != nil {
		body = append(body, `,"params":`...)
		var err error
		if body, err = appendParams(body, params); err != nil {
			return nil, fmt.Errorf("a2aclient: %s: encode params: %w", call.Method, err)
		}
	}
	return append(body, '}'), nil
}

// appendParams encodes params, through the a2a package's encoder for the
// messages every call to an agent carries.
func appendParams(b []byte, params any) ([]byte, error) {
	if r, ok := params.(*a2a.SendMessageRequest); ok {
		return a2a.AppendSendMessageRequest(b, r)
	}
	p, err := json.Marshal(params)
	return append(b, p...), err
}

func (t *jsonrpcTransport) Unary(ctx context.Context, call *Call, out any) error {
	body, err := t.envelope(call)
	if err != nil {
		return err
	}
	resp, err := t.do(ctx, call, http.MethodPost, t.url, body, "application/json", "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := t.read(ctx, call.Method, resp)
	if err != nil {
		return err
	}
	return t.decode(call.Method, resp.StatusCode, b, out)
}

func (t *jsonrpcTransport) Stream(ctx context.Context, call *Call, activity func()) (FrameStream, error) {
	body, err := t.envelope(call)
	if err != nil {
		return nil, permanent{err}
	}
	resp, err := t.do(ctx, call, http.MethodPost, t.url, body, "application/json", "text/event-stream")
	if err != nil {
		return nil, err
	}
	if mediaType(resp.Header) != "text/event-stream" {
		// A refusal (or a whole answer) as plain JSON.
		defer resp.Body.Close()
		b, err := t.read(ctx, call.Method, resp)
		if err != nil {
			return nil, err
		}
		var f a2a.StreamResponse
		if err := t.decode(call.Method, resp.StatusCode, b, &f); err != nil {
			return nil, err
		}
		if err := checkFrame(call.Method, &f); err != nil {
			return nil, err
		}
		return &oneFrame{f: &f}, nil
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		return nil, &HTTPError{Method: call.Method, StatusCode: resp.StatusCode}
	}
	return newSSEStream(ctx, call.Method, resp, t.maxEvent, activity, t.decodeFrame), nil
}

// decodeFrame parses one SSE event of a JSON-RPC stream: a JSON-RPC
// response whose result is a StreamResponse.
func (t *jsonrpcTransport) decodeFrame(method string, ev a2a.Event) (*a2a.StreamResponse, error) {
	var f a2a.StreamResponse
	if err := t.decode(method, http.StatusOK, ev.Data, &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// decode reads a JSON-RPC response body into out, in the interface's
// dialect.
func (t *jsonrpcTransport) decode(method string, status int, body []byte, out any) error {
	if t.v03 {
		return decodeResult03(method, status, body, out)
	}
	return decodeResult(method, status, body, out)
}

// decodeResult reads a JSON-RPC response body into out; a JSON-RPC error
// becomes a *CallError. A response without a result member (a2a-go's
// answer to DeleteTaskPushNotificationConfig) leaves out unchanged.
func decodeResult(method string, status int, body []byte, out any) error {
	if out == nil {
		out = new(json.RawMessage)
	}
	rpcErr, err := a2a.DecodeResult(body, out)
	switch {
	case rpcErr != nil:
		return &CallError{Method: method, Err: rpcErr}
	case status/100 != 2:
		return &HTTPError{Method: method, StatusCode: status, Body: snippet(body)}
	case err != nil:
		return fmt.Errorf("a2aclient: %s: %w: %v", method, ErrInvalidResponse, err)
	}
	return nil
}

// decodeResult03 is decodeResult for an A2A 0.3 agent: the result is read
// with a2av03.DecodeResult as the result of the v1 method, whose type out
// points to. Unlike v1, a missing or null result is invalid except for
// DeleteTaskPushNotificationConfig, which has none.
func decodeResult03(method string, status int, body []byte, out any) error {
	var raw json.RawMessage
	if err := decodeResult(method, status, body, &raw); err != nil {
		return err
	}
	v, err := a2av03.DecodeResult(method, raw)
	if err != nil {
		return fmt.Errorf("a2aclient: %s: %w: %v", method, ErrInvalidResponse, err)
	}
	if out == nil || v == nil {
		return nil
	}
	dst, src := reflect.ValueOf(out), reflect.ValueOf(v)
	if dst.Kind() != reflect.Pointer || dst.IsNil() || src.Type() != dst.Type() || src.IsNil() {
		// Only a Transport used with the wrong out type gets here.
		return fmt.Errorf("a2aclient: %s: an A2A 0.3 result reads as %T, not %T", method, v, out)
	}
	dst.Elem().Set(src.Elem())
	return nil
}
