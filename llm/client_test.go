package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

const token = "tok-5ecret-execution-token"

// once is a client option of one attempt: the test sees each failure.
var once = &resilience.Policy{}

func newClient(t *testing.T, baseURL string, o *llm.Options) *llm.Client {
	t.Helper()
	c, err := llm.New(baseURL, secret.New(token), o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userMessage(s string) []llm.Message {
	return []llm.Message{{Role: llm.RoleUser, Content: llm.Text(s)}}
}

// noToken fails the test when err, or its %v and %+v, shows the token.
func noToken(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, token) {
			t.Fatal("an error shows the token")
		}
	}
}

func spanContext(t *testing.T) (context.Context, string) {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	return trace.ContextWithSpanContext(context.Background(), sc), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
}

func TestChatCompletion(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{APIKey: token})
	defer p.Close()
	headers := http.Header{}
	headers.Set("X-NovaOS-Run-Id", "run-1")
	headers.Set("X-NovaOS-Execution-Token", "must-not-be-sent")
	headers.Set("Authorization", "Bearer must-not-be-sent")
	c := newClient(t, p.BaseURL()+"/", &llm.Options{Headers: headers, Traceparent: "00-11111111111111111111111111111111-2222222222222222-01"})
	ctx, traceparent := spanContext(t)
	temp := 0.0
	got, err := c.ChatCompletion(ctx, &llm.ChatCompletionRequest{
		Model: llmtest.ModelChat, Messages: userMessage("hello gateway"), Temperature: &temp,
		Extra: map[string]json.RawMessage{"seed": json.RawMessage("42")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Text() != "hello gateway" || got.Choices[0].FinishReason != llm.FinishStop ||
		!cmp.Equal(got.Usage, &llm.Usage{PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4}) {
		t.Errorf("answer %+v", got)
	}
	last := p.LastRequest()
	want := map[string]string{
		"Authorization": "Bearer " + token, "X-Novaos-Run-Id": "run-1", "X-Novaos-Execution-Token": "",
		"Traceparent": traceparent, "Content-Type": "application/json", "Accept": "application/json",
	}
	for k, v := range want {
		if got := last.Header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if body := string(last.Body); !strings.Contains(body, `"seed":42`) || !strings.Contains(body, `"temperature":0`) {
		t.Errorf("body %s", body)
	}

	// Without a span in the context, Options.Traceparent goes.
	if _, err := c.ChatCompletion(context.Background(), &llm.ChatCompletionRequest{Model: llmtest.ModelChat, Messages: userMessage("x")}); err != nil {
		t.Fatal(err)
	}
	if tp := p.LastRequest().Header.Get("traceparent"); tp != "00-11111111111111111111111111111111-2222222222222222-01" {
		t.Errorf("fallback traceparent %q", tp)
	}

	if _, err := c.ChatCompletion(ctx, &llm.ChatCompletionRequest{Model: llmtest.ModelChat, Messages: userMessage("x"), Stream: true}); err == nil {
		t.Error("ChatCompletion took a streaming request")
	}
}

func TestStreamChunkByChunk(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	// The timeout only turns a client that waited for the whole answer
	// into a failure instead of a hang.
	c := newClient(t, p.BaseURL(), &llm.Options{Timeout: time.Minute})
	hold := p.HoldNextStream()
	defer hold.Release()
	req := &llm.ChatCompletionRequest{
		Model: llmtest.ModelChat, Messages: userMessage("one two three"),
		StreamOptions: &llm.StreamOptions{IncludeUsage: true},
	}
	s, err := c.ChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if req.Stream {
		t.Error("ChatCompletionStream changed the caller's request")
	}
	// The provider holds everything after the first chunk: reading it
	// must not wait for the rest.
	if !s.Next() {
		t.Fatalf("no first chunk: %v", s.Err())
	}
	if got := s.Chunk(); got.Text() != "one " || got.Choices[0].Delta.Role != llm.RoleAssistant {
		t.Errorf("first chunk %+v", got)
	}
	<-hold.Held()
	hold.Release()
	var text strings.Builder
	var finish llm.FinishReason
	for s.Next() {
		ch := s.Chunk()
		text.WriteString(ch.Text())
		if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			finish = ch.Choices[0].FinishReason
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != "two three" || finish != llm.FinishStop {
		t.Errorf("rest %q, finish %q", text.String(), finish)
	}
	if !cmp.Equal(s.Usage(), &llm.Usage{PromptTokens: 3, CompletionTokens: 3, TotalTokens: 6}) {
		t.Errorf("usage %+v", s.Usage())
	}
	if s.Next() {
		t.Error("Next after [DONE]")
	}
	if got := p.LastRequest().Header.Get("Accept"); got != "text/event-stream" {
		t.Errorf("Accept %q", got)
	}
}

func TestStreamBreaks(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	req := &llm.ChatCompletionRequest{Model: llmtest.ModelChat, Messages: userMessage("one two three")}

	t.Run("cut mid-way", func(t *testing.T) {
		p.CutNextStream()
		s, err := newClient(t, p.BaseURL(), nil).ChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := 0
		for s.Next() {
			n++
		}
		if n != 1 || !errors.Is(s.Err(), llm.ErrStreamTruncated) {
			t.Errorf("%d chunks, err %v; want 1 and ErrStreamTruncated", n, s.Err())
		}
	})
	t.Run("stalls", func(t *testing.T) {
		hold := p.HoldNextStream()
		defer hold.Release()
		s, err := newClient(t, p.BaseURL(), &llm.Options{Timeout: 50 * time.Millisecond, Retry: once}).ChatCompletionStream(context.Background(), req)
		if err == nil {
			for s.Next() {
			}
			err = s.Err()
			s.Close()
		}
		if !errors.Is(err, llm.ErrTimeout) {
			t.Errorf("err %v, want ErrTimeout", err)
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		hold := p.HoldNextStream()
		defer hold.Release()
		ctx, cancel := context.WithCancel(context.Background())
		s, err := newClient(t, p.BaseURL(), nil).ChatCompletionStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if !s.Next() {
			t.Fatal(s.Err())
		}
		<-hold.Held()
		cancel()
		if s.Next() || !errors.Is(s.Err(), context.Canceled) {
			t.Errorf("after cancel: err %v, want context.Canceled", s.Err())
		}
	})
	t.Run("closed by the reader", func(t *testing.T) {
		hold := p.HoldNextStream()
		defer hold.Release()
		s, err := newClient(t, p.BaseURL(), nil).ChatCompletionStream(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Next() {
			t.Fatal(s.Err())
		}
		s.Close()
		s.Close()
		if s.Next() {
			t.Error("Next after Close")
		}
	})
}

func TestEmbeddings(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	c := newClient(t, p.BaseURL(), nil)
	for _, format := range []string{"", llm.EncodingFloat, llm.EncodingBase64} {
		got, err := c.Embeddings(context.Background(), &llm.EmbeddingRequest{
			Model: llmtest.ModelEmbedding, Input: llm.EmbeddingInput{Texts: []string{"alpha", "beta gamma"}},
			EncodingFormat: format, Dimensions: 4,
		})
		if err != nil {
			t.Fatal(err)
		}
		want := &llm.EmbeddingResponse{Object: "list", Model: llmtest.ModelEmbedding, Usage: llm.EmbeddingUsage{PromptTokens: 3, TotalTokens: 3},
			Data: []llm.Embedding{
				{Object: "embedding", Index: 0, Embedding: llmtest.Embed("alpha", 4)},
				{Object: "embedding", Index: 1, Embedding: llmtest.Embed("beta gamma", 4)},
			}}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("format %q (-want +got):\n%s", format, d)
		}
	}
}

func TestModels(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{Models: []string{"gpt-4o", "gpt-4o-mini"}})
	defer p.Close()
	c := newClient(t, p.BaseURL(), nil)
	ids, err := c.AvailableModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"gpt-4o", "gpt-4o-mini"}, ids); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for model, want := range map[string]bool{"gpt-4o": true, "gpt-4": false, "": false} {
		if got, err := c.HasModel(context.Background(), model); err != nil || got != want {
			t.Errorf("HasModel(%q) = %v, %v; want %v", model, got, err, want)
		}
	}
}

func TestAPIErrors(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	c := newClient(t, p.BaseURL(), &llm.Options{Retry: once})
	budget := &llm.APIError{Status: 429, Type: llm.TypeInsufficientQuota, Code: llm.CodeBudgetExceeded, Message: "the run's token budget is spent", After: 30 * time.Second}
	tests := []struct {
		name   string
		setup  func()
		model  string
		status int
		code   string
		want   func(*llm.APIError) bool
	}{
		{"rate limited", func() { p.FailNext(1, 429) }, llmtest.ModelChat, 429, llm.CodeRateLimit, (*llm.APIError).Temporary},
		{"server error", func() { p.FailNext(1, 500) }, llmtest.ModelChat, 500, "", func(e *llm.APIError) bool { return !e.Temporary() }},
		{"unavailable", func() { p.FailNext(1, 503) }, llmtest.ModelChat, 503, "", (*llm.APIError).Temporary},
		{"unknown model", func() {}, "gpt-9", 404, llm.CodeModelNotFound, func(e *llm.APIError) bool { return !e.Temporary() }},
		{"budget spent", func() { p.FailNextWith(1, budget) }, llmtest.ModelChat, 429, llm.CodeBudgetExceeded, func(e *llm.APIError) bool {
			return e.BudgetExceeded() && !e.Temporary() && e.After == 30*time.Second
		}},
	}
	calls := []struct {
		name string
		do   func(model string) error
	}{
		{"chat", func(model string) error {
			_, err := c.ChatCompletion(context.Background(), &llm.ChatCompletionRequest{Model: model, Messages: userMessage("x")})
			return err
		}},
		{"stream", func(model string) error {
			s, err := c.ChatCompletionStream(context.Background(), &llm.ChatCompletionRequest{Model: model, Messages: userMessage("x")})
			if err == nil {
				s.Close()
			}
			return err
		}},
		{"embeddings", func(model string) error {
			if model == llmtest.ModelChat {
				model = llmtest.ModelEmbedding
			}
			_, err := c.Embeddings(context.Background(), &llm.EmbeddingRequest{Model: model, Input: llm.EmbeddingInput{Texts: []string{"x"}}})
			return err
		}},
	}
	for _, call := range calls {
		for _, tt := range tests {
			t.Run(call.name+"/"+tt.name, func(t *testing.T) {
				tt.setup()
				err := call.do(tt.model)
				var e *llm.APIError
				if !errors.As(err, &e) {
					t.Fatalf("err %v is not an *APIError", err)
				}
				if e.Status != tt.status || e.Code != tt.code || e.Message == "" || !tt.want(e) {
					t.Errorf("got %+v", e)
				}
				noToken(t, err)
			})
		}
	}
}

// raw is a server that answers every request with status, content type
// and body.
func raw(t *testing.T, status int, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

const sse = "text/event-stream"

func chunkEvent(text string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + text + `"},"finish_reason":null}]}` + "\n\n"
}

func TestBadAnswers(t *testing.T) {
	req := &llm.ChatCompletionRequest{Model: "m", Messages: userMessage("x")}
	opts := &llm.Options{MaxResponseBytes: 256, MaxEventBytes: 256, Retry: once}
	t.Run("chat", func(t *testing.T) {
		tests := []struct {
			name    string
			status  int
			body    string
			is      error
			status2 int
		}{
			{"not JSON", 200, `<html>`, llm.ErrMalformedResponse, 0},
			{"wrong shape", 200, `{"choices":"many"}`, llm.ErrMalformedResponse, 0},
			{"too large", 200, `{"id":"` + strings.Repeat("x", 300) + `"}`, llm.ErrResponseTooLarge, 0},
			{"proxy page", 502, `<html>bad gateway</html>`, nil, 502},
			{"error as a string", 400, `{"error":"no such thing"}`, nil, 400},
			{"numeric code", 429, `{"error":{"message":"slow down","type":"requests","code":429}}`, nil, 429},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := newClient(t, raw(t, tt.status, "application/json", tt.body), opts)
				_, err := c.ChatCompletion(context.Background(), req)
				noToken(t, err)
				if tt.is != nil {
					if !errors.Is(err, tt.is) {
						t.Fatalf("err %v, want %v", err, tt.is)
					}
					return
				}
				var e *llm.APIError
				if !errors.As(err, &e) || e.Status != tt.status2 || e.Message == "" {
					t.Fatalf("err %v, want an *APIError of %d", err, tt.status2)
				}
			})
		}
	})
	t.Run("stream", func(t *testing.T) {
		tests := []struct {
			name   string
			ctype  string
			body   string
			chunks int
			is     error
			api    string // an *APIError's code or message
		}{
			{"ends without DONE", sse, chunkEvent("a") + chunkEvent("b"), 2, llm.ErrStreamTruncated, ""},
			{"ends inside an event", sse, chunkEvent("a") + `data: {"id"`, 1, llm.ErrStreamTruncated, ""},
			{"malformed chunk", sse, chunkEvent("a") + "data: {nope\n\n", 1, llm.ErrMalformedResponse, ""},
			{"event too large", sse, chunkEvent("a") + "data: " + strings.Repeat("x", 300) + "\n\n", 1, llm.ErrEventTooLarge, ""},
			{"line too large", sse, ": " + strings.Repeat("x", 300) + "\n\n", 0, llm.ErrEventTooLarge, ""},
			{"data lines add up", sse, strings.Repeat("data: "+strings.Repeat("x", 50)+"\n", 6) + "\n", 0, llm.ErrEventTooLarge, ""},
			{"error object", sse, chunkEvent("a") + `data: {"error":{"message":"provider failed","type":"server_error","code":"upstream"}}` + "\n\n", 1, nil, "upstream"},
			{"error event", sse, "event: error\ndata: overloaded\n\n", 0, nil, "overloaded"},
			{"JSON error instead of a stream", "application/json", `{"error":{"message":"nope","type":"invalid_request_error","code":"bad"}}`, 0, nil, "bad"},
			{"JSON answer instead of a stream", "application/json", `{"id":"c","choices":[]}`, 0, llm.ErrMalformedResponse, ""},
			{"comments, CRLF and DONE", sse, ": keep-alive\r\n\r\n" + strings.ReplaceAll(chunkEvent("a"), "\n", "\r\n") + "data: [DONE]\r\n\r\n" + chunkEvent("ignored"), 1, nil, ""},
			{"labelled text/plain", "text/plain; charset=utf-8", chunkEvent("a") + "data: [DONE]\n\n", 1, nil, ""},
			{"lone CR", sse, strings.ReplaceAll(chunkEvent("a")+"data: [DONE]\n\n", "\n", "\r"), 1, nil, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := newClient(t, raw(t, 200, tt.ctype, tt.body), opts)
				s, err := c.ChatCompletionStream(context.Background(), req)
				n := 0
				if err == nil {
					for s.Next() {
						n++
					}
					err = s.Err()
					s.Close()
				}
				noToken(t, err)
				if n != tt.chunks {
					t.Errorf("%d chunks, want %d", n, tt.chunks)
				}
				switch {
				case tt.is != nil:
					if !errors.Is(err, tt.is) {
						t.Errorf("err %v, want %v", err, tt.is)
					}
				case tt.api != "":
					var e *llm.APIError
					if !errors.As(err, &e) || (e.Code != tt.api && e.Message != tt.api) {
						t.Errorf("err %v, want an *APIError with %q", err, tt.api)
					}
				case err != nil:
					t.Errorf("err %v", err)
				}
			})
		}
	})
}

func TestNewRefuses(t *testing.T) {
	for _, base := range []string{"", "gateway/v1", "ftp://h/v1", "http://user:pw@h/v1", "http://h/v1?x=1", "http://[::1"} {
		_, err := llm.New(base, secret.New(token), nil)
		if err == nil {
			t.Errorf("New(%q) took it", base)
			continue
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): the error shows the URL's password: %v", base, err)
		}
	}
}

func TestNoTokenInOutput(t *testing.T) {
	c := newClient(t, "http://127.0.0.1:1/v1", &llm.Options{Retry: once})
	for _, s := range []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", *c)} {
		if strings.Contains(s, token) {
			t.Fatal("printing a client shows the token")
		}
	}
	// A refused connection names the URL, not the request's headers.
	_, err := c.Models(context.Background())
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	noToken(t, err)
}

// waits is a retry policy that records its waits instead of sleeping.
func waits() (*resilience.Policy, *[]time.Duration) {
	var got []time.Duration
	return &resilience.Policy{Attempts: 3, NoJitter: true, Wait: func(ctx context.Context, d time.Duration) error {
		got = append(got, d)
		return ctx.Err()
	}}, &got
}

func TestRetries(t *testing.T) {
	chat := &llm.ChatCompletionRequest{Model: llmtest.ModelChat, Messages: userMessage("again")}
	tests := []struct {
		name      string
		setup     func(p *llmtest.Server)
		stream    bool
		calls     int
		waits     []time.Duration
		wantError bool
	}{
		{"503 twice", func(p *llmtest.Server) { p.FailNext(2, 503) }, false, 3, []time.Duration{time.Second, 2 * time.Second}, false},
		{"Retry-After is honoured", func(p *llmtest.Server) {
			p.FailNextWith(1, &llm.APIError{Status: 429, Type: "requests", Code: llm.CodeRateLimit, Message: "slow down", After: 7 * time.Second})
		}, false, 2, []time.Duration{7 * time.Second}, false},
		{"spent budget is final", func(p *llmtest.Server) {
			p.FailNextWith(1, &llm.APIError{Status: 429, Type: llm.TypeInsufficientQuota, Code: llm.CodeBudgetExceeded, Message: "spent", After: time.Hour})
		}, false, 1, nil, true},
		{"500 is an answer", func(p *llmtest.Server) { p.FailNext(1, 500) }, false, 1, nil, true},
		{"attempts run out", func(p *llmtest.Server) { p.FailNext(3, 502) }, false, 3, []time.Duration{time.Second, 2 * time.Second}, true},
		{"stream opens on a retry", func(p *llmtest.Server) { p.FailNext(1, 429) }, true, 2, []time.Duration{time.Second}, false},
		{"a broken stream is not retried", func(p *llmtest.Server) { p.CutNextStream() }, true, 1, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := llmtest.NewServer(nil)
			defer p.Close()
			policy, got := waits()
			c := newClient(t, p.BaseURL(), &llm.Options{Retry: policy})
			tt.setup(p)
			var err error
			if tt.stream {
				var s *llm.Stream
				if s, err = c.ChatCompletionStream(context.Background(), chat); err == nil {
					for s.Next() {
					}
					err = s.Err()
					s.Close()
				}
			} else {
				_, err = c.ChatCompletion(context.Background(), chat)
			}
			if (err != nil) != tt.wantError {
				t.Fatalf("err %v, want error %v", err, tt.wantError)
			}
			noToken(t, err)
			if n := p.Calls(llmtest.PathChatCompletions); n != tt.calls {
				t.Errorf("calls = %d, want %d", n, tt.calls)
			}
			if d := cmp.Diff(tt.waits, *got); d != "" {
				t.Errorf("waits (-want +got):\n%s", d)
			}
		})
	}
}
