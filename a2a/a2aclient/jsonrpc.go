package a2aclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"

	"novaos.dev/novaos/a2a"
)

// jsonrpcTransport speaks the JSON-RPC 2.0 binding: every call is a POST of
// one envelope to the interface URL; streams answer with SSE events whose
// data are JSON-RPC responses.
type jsonrpcTransport struct {
	httpWire
	url    string
	nextID atomic.Int64
}

var _ Transport = (*jsonrpcTransport)(nil)

// NewJSONRPCTransport is the TransportFactory of the JSON-RPC binding
// (a2a.BindingJSONRPC).
func NewJSONRPCTransport(cfg *TransportConfig) (Transport, error) {
	w, err := newHTTPWire(a2a.BindingJSONRPC, cfg)
	if err != nil {
		return nil, err
	}
	return &jsonrpcTransport{httpWire: w, url: cfg.Interface.URL}, nil
}

// envelope encodes the request.
func (t *jsonrpcTransport) envelope(call *Call) ([]byte, error) {
	id := t.nextID.Add(1)
	body := make([]byte, 0, 512)
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = strconv.AppendInt(body, id, 10)
	body = append(body, `,"method":"`...)
	body = append(body, call.Method...)
	body = append(body, `","params":`...)
	body, err := appendParams(body, call.Params)
	if err != nil {
		return nil, fmt.Errorf("a2aclient: %s: encode params: %w", call.Method, err)
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
	return decodeResult(call.Method, resp.StatusCode, b, out)
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
		if err := decodeResult(call.Method, resp.StatusCode, b, &f); err != nil {
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
	return newSSEStream(ctx, call.Method, resp, t.maxEvent, activity, decodeRPCFrame), nil
}

// decodeRPCFrame parses one SSE event of a JSON-RPC stream: a JSON-RPC
// response whose result is a StreamResponse.
func decodeRPCFrame(method string, ev a2a.Event) (*a2a.StreamResponse, error) {
	var f a2a.StreamResponse
	if err := decodeResult(method, http.StatusOK, ev.Data, &f); err != nil {
		return nil, err
	}
	return &f, nil
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
