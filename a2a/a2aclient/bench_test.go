package a2aclient_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
)

// BenchmarkSendMessage compares a client SendMessage with a raw net/http
// POST of the same body against the same in-process server; the ratio
// raw ns/op ÷ client ns/op is the client's relative throughput.
func BenchmarkSendMessage(b *testing.B) {
	for _, text := range []string{"reply hi", "hello"} {
		a := newAgent(b, nil)
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		c, err := a2aclient.New(a.card, &a2aclient.Options{HTTPClient: hc})
		if err != nil {
			b.Fatal(err)
		}
		req := msgReq("m-1", text)
		name := map[string]string{"reply hi": "message", "hello": "task"}[text]
		b.Run(name+"/client", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.SendMessage(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}}}`)
		b.Run(name+"/raw", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := http.NewRequestWithContext(b.Context(), http.MethodPost, a.srv.URL, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
				resp, err := hc.Do(r)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || bytes.Contains(out, []byte(`"error"`)) {
					b.Fatalf("%d %s", resp.StatusCode, out)
				}
			}
		})
	}
}

// BenchmarkSendMessageRatio interleaves one client SendMessage and one raw
// POST of the same body per iteration, so load on the machine affects both
// alike, and reports raw-ns/call ÷ client-ns/call as "ratio" (1 means no
// client overhead; the goal is at least 0.8).
func BenchmarkSendMessageRatio(b *testing.B) {
	for _, text := range []string{"reply hi", "hello"} {
		a := newAgent(b, nil)
		hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		c, err := a2aclient.New(a.card, &a2aclient.Options{HTTPClient: hc})
		if err != nil {
			b.Fatal(err)
		}
		req := msgReq("m-1", text)
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"` + text + `"}]}}}`)
		name := map[string]string{"reply hi": "message", "hello": "task"}[text]
		b.Run(name, func(b *testing.B) {
			var clientT, rawT time.Duration
			client := func() {
				t0 := time.Now()
				if _, err := c.SendMessage(b.Context(), req); err != nil {
					b.Fatal(err)
				}
				clientT += time.Since(t0)
			}
			raw := func() {
				t0 := time.Now()
				r, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, a.srv.URL, bytes.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
				resp, err := hc.Do(r)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				rawT += time.Since(t0)
			}
			i := 0
			for b.Loop() {
				// Alternate the order: work the server does after
				// answering lands on whichever call comes next.
				if i%2 == 0 {
					client()
					raw()
				} else {
					raw()
					client()
				}
				i++
			}
			b.ReportMetric(float64(clientT.Nanoseconds())/float64(b.N), "client-ns/call")
			b.ReportMetric(float64(rawT.Nanoseconds())/float64(b.N), "raw-ns/call")
			b.ReportMetric(float64(rawT)/float64(clientT), "ratio")
		})
	}
}

// staticTransport answers every request with the same SSE body, so the
// benchmark measures the client's stream parsing alone.
type staticTransport struct{ body []byte }

func (s staticTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(s.body))}, nil
}

// BenchmarkStreamParse reports the frames per second the client reads from
// an SSE stream of artifact chunks (the common frame of a streamed answer).
func BenchmarkStreamParse(b *testing.B) {
	const frames = 1000
	var buf []byte
	for i := 1; i <= frames; i++ {
		f := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "7b0c4a7e-3d1f-4c55-9a0e-2f8f1f0c9d11", ContextID: "c0d6b1f2-8e43-4a7b-bb1e-0c9a2d3e4f50",
			Artifact: a2a.Artifact{ArtifactID: "answer", Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("token %d of a streamed answer, ", i))}}, Append: i > 1}}
		if i == frames {
			f = &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "7b0c4a7e-3d1f-4c55-9a0e-2f8f1f0c9d11", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}}
		}
		data := []byte(`{"jsonrpc":"2.0","id":1,"result":`)
		data, _ = a2a.AppendStreamResponse(data, f)
		data = append(data, '}')
		buf = a2a.AppendEvent(buf, a2a.Event{ID: fmt.Sprint(i), Data: data})
	}
	c, err := a2aclient.NewForURL("http://agent.test", &a2aclient.Options{HTTPClient: &http.Client{Transport: staticTransport{buf}}})
	if err != nil {
		b.Fatal(err)
	}
	req := msgReq("m", "x")
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, err := range c.SendStreamingMessage(b.Context(), req) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "frames/s")
}
