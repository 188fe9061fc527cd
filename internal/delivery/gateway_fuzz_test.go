package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/coder/websocket"

	"novaos.dev/novaos/delivery"
)

// FuzzGatewayFrames hands any two frames to a connection of the real
// gateway (its socket left out: what it would write stays queued): no
// frame panics, every frame the platform answers is one of its own ops
// and names no API token, and a close is a code of the table.
func FuzzGatewayFrames(f *testing.F) {
	h := newGWHarness(f, nil)
	a := h.agent(h.inst, false)
	h.trigger(h.inst, "hello")
	identify, _ := gwEncode(delivery.OpIdentify, delivery.GatewayIdentify{APIToken: a.token, Consumer: "alpha", ProtocolVersion: "1"})
	for _, second := range []string{
		`{"op":"ack","d":{"seq":1}}`,
		`{"op":"ack","d":{"seq":-1}}`,
		`{"op":"heartbeat","d":{"last_seq":1,"agent":{"status":"ok","details":{"active_runs":["r1"]}}}}`,
		`{"op":"run.update","d":{"ref":"u","run_id":"r","invocation_token":"t","base_version":1,"ops":[{"op":"add","path":"/status_line","value":"x"}]}}`,
		`{"op":"command.autocomplete_result","d":{"ref":"x","choices":[]}}`,
		`{"op":"identify","d":{}}`,
		`{"op":"resume","d":{"gateway_session_id":"s","cursor":3}}`,
	} {
		f.Add(identify, []byte(second))
	}
	f.Add([]byte(`{"op":"resume","d":{"gateway_session_id":"nope","api_token":"x","cursor":0}}`), []byte(`{}`))
	f.Add([]byte(`[]`), []byte(`null`))
	f.Add([]byte(`{"op":"identify","d":"x"}`), []byte(`{"op":"ack"}`))
	known := map[string]bool{delivery.OpHello: true, delivery.OpReady: true, delivery.OpResumed: true, delivery.OpEvent: true,
		delivery.OpHeartbeatAck: true, delivery.OpCatchupComplete: true, delivery.OpError: true}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		c := h.svc.gw.fuzzConn()
		c.handle(websocket.MessageText, first)
		if !c.closing() {
			c.handle(websocket.MessageText, second)
		}
		c.finish(gwEnd{reason: "fuzz"})
		if c.pumped != nil {
			<-c.pumped
		}
		c.mu.Lock()
		end, queue := *c.end, c.queue
		c.mu.Unlock()
		h.svc.gw.remove(c, end)
		if end.send {
			if _, ok := delivery.CloseCodes[end.code]; !ok {
				t.Fatalf("closed with %d", end.code)
			}
		}
		for _, frame := range queue {
			var fr delivery.Frame
			if err := json.Unmarshal(frame, &fr); err != nil || !known[fr.Op] {
				t.Fatalf("frame %s", frame)
			}
			if bytes.Contains(frame, []byte(a.token)) {
				t.Fatalf("a frame names the API token: %s", fr.Op)
			}
		}
	})
}

// fuzzConn is a connection without a socket: its frames stay queued.
func (h *gwHub) fuzzConn() *gwConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &gwConn{hub: h, s: h.s, opened: h.s.o.Now(), ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), kick: make(chan struct{}, 1), room: make(chan struct{})}
	c.last.Store(c.opened.UnixNano())
	return c
}

// TestGatewayEncode: a frame is written as delivery.Frame marshals it.
func TestGatewayEncode(t *testing.T) {
	for _, d := range []any{delivery.GatewayAck{Seq: 3}, delivery.Event{ID: "e1", Seq: 1, Type: delivery.EventInvocation,
		Payload: json.RawMessage(`{"run_id":"r<1>"}`), InvocationToken: "a.b.c"}, map[string]string{}} {
		got, err := gwEncode(delivery.OpEvent, d)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(d)
		want, _ := json.Marshal(delivery.Frame{Op: delivery.OpEvent, D: raw})
		if !bytes.Equal(got, want) {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}
