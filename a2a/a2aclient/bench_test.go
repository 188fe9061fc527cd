package a2aclient_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/internal/benchpair"
	"novaos.dev/novaos/netguard"
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
// an SSE stream of artifact chunks (the common frame of a streamed answer),
// over each binding: JSON-RPC frames wrap each StreamResponse in a
// response envelope, HTTP+JSON frames are the StreamResponse alone.
func BenchmarkStreamParse(b *testing.B) {
	const frames = 1000
	for _, binding := range []string{a2a.BindingJSONRPC, a2a.BindingHTTPJSON} {
		var buf []byte
		for i := 1; i <= frames; i++ {
			f := &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "7b0c4a7e-3d1f-4c55-9a0e-2f8f1f0c9d11", ContextID: "c0d6b1f2-8e43-4a7b-bb1e-0c9a2d3e4f50",
				Artifact: a2a.Artifact{ArtifactID: "answer", Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("token %d of a streamed answer, ", i))}}, Append: i > 1}}
			if i == frames {
				f = &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "7b0c4a7e-3d1f-4c55-9a0e-2f8f1f0c9d11", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}}
			}
			var data []byte
			if binding == a2a.BindingJSONRPC {
				data = []byte(`{"jsonrpc":"2.0","id":1,"result":`)
			}
			data, _ = a2a.AppendStreamResponse(data, f)
			if binding == a2a.BindingJSONRPC {
				data = append(data, '}')
			}
			buf = a2a.AppendEvent(buf, a2a.Event{ID: fmt.Sprint(i), Data: data})
		}
		c, err := a2aclient.NewForURL("http://agent.test", &a2aclient.Options{HTTPClient: &http.Client{Transport: staticTransport{buf}}, Transports: []string{binding}})
		if err != nil {
			b.Fatal(err)
		}
		req := msgReq("m", "x")
		b.Run(binding, func(b *testing.B) {
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
		})
	}
}

// BenchmarkBindings compares the client's cost per binding. Two in-process
// servers answer every request with the same completed task (the scripted
// agent's answer to "hello"), one as a JSON-RPC response and one as an
// HTTP+JSON body, so the server's work is the same and small. Each
// iteration makes one client SendMessage and one raw net/http request of
// the same bytes per binding, in alternating order; it reports each one's
// ns/call, raw ÷ client per binding ("<binding>-ratio", 1 means no client
// overhead), and REST client ÷ JSON-RPC client ("rest÷jsonrpc").
func BenchmarkBindings(b *testing.B) {
	task := `{"id":"id-001","contextId":"id-002","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"id-001-done","contextId":"id-002","taskId":"id-001","role":"ROLE_AGENT","parts":[{"text":"done"}]},"timestamp":"2026-11-30T09:00:00.000Z"},"artifacts":[{"artifactId":"echo","parts":[{"text":"hello"}]}],"history":[{"messageId":"m-1","contextId":"id-002","taskId":"id-001","role":"ROLE_USER","parts":[{"text":"hello"}]}]}`
	static := func(ct, body string) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, body)
		}))
		b.Cleanup(srv.Close)
		return srv
	}
	type side struct {
		name        string
		c           *a2aclient.Client
		url, ct     string
		body        []byte
		client, raw time.Duration
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	rpcSrv := static("application/json", `{"jsonrpc":"2.0","id":1,"result":{"task":`+task+`}}`)
	restSrv := static("application/a2a+json", `{"task":`+task+`}`)
	var sides []*side
	for _, s := range []struct{ name, binding, url, path, ct, body string }{
		{"jsonrpc", a2a.BindingJSONRPC, rpcSrv.URL, "", "application/json",
			`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`},
		{"rest", a2a.BindingHTTPJSON, restSrv.URL, "/message:send", "application/a2a+json",
			`{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hello"}]}}`},
	} {
		c, err := a2aclient.NewForURL(s.url, &a2aclient.Options{HTTPClient: hc, Transports: []string{s.binding}})
		if err != nil {
			b.Fatal(err)
		}
		sides = append(sides, &side{name: s.name, c: c, url: s.url + s.path, ct: s.ct, body: []byte(s.body)})
	}
	req := msgReq("m-1", "hello")
	client := func(s *side) {
		t0 := time.Now()
		if _, err := s.c.SendMessage(b.Context(), req); err != nil {
			b.Fatal(err)
		}
		s.client += time.Since(t0)
	}
	raw := func(s *side) {
		t0 := time.Now()
		r, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, s.url, bytes.NewReader(s.body))
		r.Header.Set("Content-Type", s.ct)
		r.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
		resp, err := hc.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.raw += time.Since(t0)
	}
	i := 0
	for b.Loop() {
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			if i%2 == 0 {
				client(s)
				raw(s)
			} else {
				raw(s)
				client(s)
			}
		}
		i++
	}
	n := float64(b.N)
	for _, s := range sides {
		b.ReportMetric(float64(s.client.Nanoseconds())/n, s.name+"-client-ns/call")
		b.ReportMetric(float64(s.raw.Nanoseconds())/n, s.name+"-raw-ns/call")
		b.ReportMetric(float64(s.raw)/float64(s.client), s.name+"-ratio")
	}
	b.ReportMetric(float64(sides[1].client)/float64(sides[0].client), "rest÷jsonrpc")
}

// BenchmarkConnectGuard compares SendMessage from a client with
// Options.ConnectGuard (loopback allowed, as for a local agent) with the
// same call from a client without one, against the same in-process agent,
// interleaved; it reports guarded÷plain (1 means the guard costs
// nothing). The guard checks where a connection goes when it is dialled,
// so "keepalive" (connections reused, the usual case) shows what it costs
// a call and "dial" (a new connection per call) what it costs a dial.
func BenchmarkConnectGuard(b *testing.B) {
	a := newAgent(b, nil)
	req := msgReq("m-1", "reply hi")
	for _, tt := range []struct {
		name      string
		keepAlive bool
	}{{"keepalive", true}, {"dial", false}} {
		b.Run(tt.name, func(b *testing.B) {
			client := func(guard *netguard.Policy) *a2aclient.Client {
				tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableKeepAlives: !tt.keepAlive}
				b.Cleanup(tr.CloseIdleConnections)
				c, err := a2aclient.New(a.card, &a2aclient.Options{HTTPClient: &http.Client{Transport: tr}, ConnectGuard: guard})
				if err != nil {
					b.Fatal(err)
				}
				return c
			}
			guarded, plain := client(&netguard.Policy{AllowLoopback: true}), client(nil)
			send := func(c *a2aclient.Client) func() {
				return func() {
					if _, err := c.SendMessage(b.Context(), req); err != nil {
						b.Fatal(err)
					}
				}
			}
			benchpair.Run(b, "guarded", send(guarded), "plain", send(plain))
		})
	}
}

// BenchmarkStreamingFallback compares SendStreamingMessage to an agent
// whose card says capabilities.streaming is false (the client calls
// SendMessage and yields its answer as the one frame) with SendMessage
// of the same request on the same client, interleaved; it reports
// fallback÷send (1 means the fallback costs nothing over the call it
// makes).
func BenchmarkStreamingFallback(b *testing.B) {
	a := newAgent(b, nil)
	card := *a.card
	card.Capabilities.Streaming = a2a.Bool(false)
	c, err := a2aclient.New(&card, &a2aclient.Options{HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}})
	if err != nil {
		b.Fatal(err)
	}
	req := msgReq("m-1", "hello")
	benchpair.Run(b, "fallback", func() {
		frames := 0
		for f, err := range c.SendStreamingMessage(b.Context(), req) {
			if err != nil {
				b.Fatal(err)
			}
			if !f.Final() {
				b.Fatal("the fallback's one frame is not final")
			}
			frames++
		}
		if frames != 1 {
			b.Fatalf("%d frames, want the fallback's one", frames)
		}
	}, "send", func() {
		if _, err := c.SendMessage(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	})
}
