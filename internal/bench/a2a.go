package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"novaos.dev/novaos/a2a"
)

// Names of the scenarios this package defines.
const (
	ScenarioSend     = "send"
	ScenarioStream   = "stream"
	ScenarioBaseline = "baseline"
)

// The request every A2A scenario sends, split around its message id so
// each request carries a fresh one without re-encoding the rest.
const (
	sendPrefix   = `{"jsonrpc":"2.0","id":1,"method":"`
	paramsPrefix = `","params":{"message":{"messageId":"`
	bodySuffix   = `","role":"ROLE_USER","parts":[{"text":"hello from novaos bench"}]}}}`
)

func messageBody(method string) func([]byte) []byte {
	return func(buf []byte) []byte {
		buf = append(buf, sendPrefix...)
		buf = append(buf, method...)
		buf = append(buf, paramsPrefix...)
		buf = append(buf, a2a.NewID()...)
		return append(buf, bodySuffix...)
	}
}

// restBody is the HTTP+JSON binding's SendMessageRequest: the params of
// the JSON-RPC body without the envelope.
func restBody(buf []byte) []byte {
	buf = append(buf, `{"message":{"messageId":"`...)
	buf = append(buf, a2a.NewID()...)
	return append(buf, bodySuffix[:len(bodySuffix)-1]...)
}

func a2aHeader(accept string) http.Header {
	return http.Header{
		"Content-Type":    {"application/json"},
		"Accept":          {accept},
		a2a.HeaderVersion: {a2a.ProtocolVersion},
	}
}

// SendMessage is a SendMessage call with a fresh message id per request to
// the A2A endpoint at url; a response fails the check unless it is a
// JSON-RPC result holding a task or a message.
func SendMessage(url string) Scenario {
	return Scenario{
		Name:   ScenarioSend,
		URL:    url,
		Header: a2aHeader("application/json"),
		Body:   messageBody(a2a.MethodSendMessage),
		Check:  checkSend,
	}
}

// The checks look at the start of a response first, because the load
// generator shares the CPUs with the server and should cost it as little as
// possible: a response that begins the way a NovaOS success begins passes
// at once, and anything else is decoded in full to say what is wrong. A
// different server that orders its members otherwise is judged by the
// full decode.
var (
	resultPrefix  = []byte(`{"jsonrpc":"2.0","id":1,"result":`)
	taskPrefix    = []byte(`{"task":`)
	messagePrefix = []byte(`{"message":`)
)

func checkSend(_ http.Header, body []byte) error {
	if rest, ok := bytes.CutPrefix(body, resultPrefix); ok && (bytes.HasPrefix(rest, taskPrefix) || bytes.HasPrefix(rest, messagePrefix)) {
		return nil
	}
	resp, err := a2a.DecodeResponse(body)
	if err != nil {
		return err
	}
	if resp.Error != nil {
		return resp.Error
	}
	var r struct {
		Task    json.RawMessage `json:"task"`
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if r.Task == nil && r.Message == nil {
		return errors.New("result holds neither task nor message")
	}
	return nil
}

// SendMessageREST is SendMessage over the HTTP+JSON binding: a POST to
// /message:send below the agent's url, answered with the response message
// itself.
func SendMessageREST(url string) Scenario {
	return Scenario{
		Name:   ScenarioSend,
		URL:    url + "/message:send",
		Header: restHeader("application/a2a+json"),
		Body:   restBody,
		Check:  checkSendREST,
	}
}

// SendStreamingMessageREST is SendStreamingMessage over the HTTP+JSON
// binding: SSE frames whose data is the StreamResponse itself.
func SendStreamingMessageREST(url string) Scenario {
	return Scenario{
		Name:   ScenarioStream,
		URL:    url + "/message:stream",
		Header: restHeader("text/event-stream"),
		Body:   restBody,
		Check:  checkStreamREST,
	}
}

func restHeader(accept string) http.Header {
	return http.Header{
		"Content-Type":    {"application/a2a+json"},
		"Accept":          {accept},
		a2a.HeaderVersion: {a2a.ProtocolVersion},
	}
}

func checkSendREST(_ http.Header, body []byte) error {
	if bytes.HasPrefix(body, taskPrefix) || bytes.HasPrefix(body, messagePrefix) {
		return nil
	}
	var r a2a.SendMessageResponse
	if err := a2a.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("decode result: %w", err)
	}
	if r.Task == nil && r.Message == nil {
		return errors.New("result holds neither task nor message")
	}
	return nil
}

func checkStreamREST(h http.Header, body []byte) error {
	if !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		return fmt.Errorf("not an event stream: %.200s", body)
	}
	last, err := lastEvent(body, func(ev a2a.Event) error {
		if ev.Event == "error" {
			return fmt.Errorf("stream error: %s", ev.Data)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return finalFrame(last)
}

// lastEvent reads a stream's events, checking each, and returns the data
// of the last one.
func lastEvent(body []byte, check func(a2a.Event) error) ([]byte, error) {
	er := a2a.NewEventReader(bytes.NewReader(body), 0)
	var last []byte
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read stream: %w", err)
		}
		if err := check(ev); err != nil {
			return nil, err
		}
		last = ev.Data
	}
	if last == nil {
		return nil, errors.New("stream carried no frame")
	}
	return last, nil
}

// finalFrame checks that a stream's last frame ends it.
func finalFrame(data []byte) error {
	var frame a2a.StreamResponse
	if err := a2a.Unmarshal(data, &frame); err != nil {
		return fmt.Errorf("decode frame: %w", err)
	}
	if !frame.Final() {
		return errors.New("stream ended before a final frame")
	}
	return nil
}

// SendStreamingMessage is a SendStreamingMessage call to the A2A endpoint
// at url, read to the end of its event stream; the check fails a stream
// that carries a JSON-RPC error, or whose last frame does not end it (a
// message, or a task or status in a final state).
func SendStreamingMessage(url string) Scenario {
	return Scenario{
		Name:   ScenarioStream,
		URL:    url,
		Header: a2aHeader("text/event-stream"),
		Body:   messageBody(a2a.MethodSendStreamingMessage),
		Check:  checkStream,
	}
}

func checkStream(h http.Header, body []byte) error {
	if !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		return checkSendError(body)
	}
	// Every frame is checked for an error; only the last one, which
	// decides whether the stream ended properly, is decoded in full.
	last, err := lastEvent(body, func(ev a2a.Event) error {
		if bytes.HasPrefix(ev.Data, resultPrefix) {
			return nil
		}
		resp, err := a2a.DecodeResponse(ev.Data)
		if err != nil {
			return err
		}
		if resp.Error != nil {
			return resp.Error
		}
		return nil
	})
	if err != nil {
		return err
	}
	resp, err := a2a.DecodeResponse(last)
	if err != nil {
		return err
	}
	if resp.Error != nil {
		return resp.Error
	}
	return finalFrame(resp.Result)
}

// checkSendError reports the JSON-RPC error a server answers a streaming
// call with instead of opening a stream.
func checkSendError(body []byte) error {
	resp, err := a2a.DecodeResponse(body)
	if err != nil {
		return fmt.Errorf("not an event stream: %w", err)
	}
	if resp.Error != nil {
		return resp.Error
	}
	return errors.New("not an event stream")
}

// Baseline posts the same body as SendMessage to an [EchoHandler] at url
// and checks that valid JSON came back.
func Baseline(url string) Scenario {
	return Scenario{
		Name:   ScenarioBaseline,
		URL:    url,
		Header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}},
		Body:   messageBody(a2a.MethodSendMessage),
		Check: func(_ http.Header, body []byte) error {
			if !json.Valid(body) {
				return errors.New("echo answered invalid JSON")
			}
			return nil
		},
	}
}
