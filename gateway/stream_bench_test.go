package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// BenchmarkParseSSE parses one frame of each common kind.
func BenchmarkParseSSE(b *testing.B) {
	frames := map[string]string{
		"delta":  `{"type":"message.delta","payload":{"content":"The quick brown fox jumps over the lazy dog."},"run_id":"0193a5b2-7c1d-7e3f-9a4b-5c6d7e8f9a0b","sequence":42,"timestamp":1733371200123}`,
		"status": `{"type":"status","payload":{"status":"FAILED","reason":"the agent's stream ended without a terminal state"},"run_id":"0193a5b2-7c1d-7e3f-9a4b-5c6d7e8f9a0b","sequence":43,"timestamp":1733371200124}`,
		"hitl":   `{"type":"hitl","payload":{"hitl":{"question":"Which city?","actions":[{"id":"a1","label":"Paris"},{"id":"a2","label":"Rome"}]}},"run_id":"0193a5b2-7c1d-7e3f-9a4b-5c6d7e8f9a0b","sequence":44,"timestamp":1733371200125}`,
	}
	for name, data := range frames {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseSSE("message", data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadEvents reads a run's stream of n frames from memory: the
// client's whole per-event path but the network.
func BenchmarkReadEvents(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		var stream bytes.Buffer
		for i := 1; i < n; i++ {
			stream.Write(frame(Event{RunID: "r1", Sequence: int64(i), Type: EventMessageDelta, Payload: json.RawMessage(`{"content":"The quick brown fox jumps over the lazy dog."}`)}))
		}
		stream.Write(frame(Event{RunID: "r1", Sequence: int64(n), Type: EventDone, Payload: json.RawMessage(`{"status":"COMPLETED"}`)}))
		data := stream.Bytes()
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				got := 0
				_, err := readEvents(bytes.NewReader(data), "r1", func(StreamEvent) bool { got++; return true })
				if err != nil || got != n {
					b.Fatalf("%d events, %v", got, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
		})
	}
}
