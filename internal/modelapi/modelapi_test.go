package modelapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// fakeAPI is an in-process OpenAI-compatible server whose answers a test
// scripts.
type fakeAPI struct {
	t        *testing.T
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
	answer   func(n int, req map[string]any) (status int, body string)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("request is not JSON: %v", err)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	n := len(f.requests)
	f.mu.Unlock()
	status, out := f.answer(n, req)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, out)
}

func (f *fakeAPI) count() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.requests) }

func serve(t *testing.T, answer func(n int, req map[string]any) (int, string)) (*fakeAPI, string) {
	f := &fakeAPI{t: t, answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL + "/v1"
}

// quick retries without sleeping.
func quick(attempts int) Options {
	return Options{Retry: &resilience.Policy{Attempts: attempts, Wait: func(ctx context.Context, d time.Duration) error { return ctx.Err() }}}
}

// echoEmbeddings answers each input with a vector of dims numbers derived
// from its position.
func echoEmbeddings(dims int) func(int, map[string]any) (int, string) {
	return func(_ int, req map[string]any) (int, string) {
		in := req["input"].([]any)
		var data []string
		for i := len(in) - 1; i >= 0; i-- { // out of order on purpose
			vec := make([]string, dims)
			for j := range vec {
				vec[j] = fmt.Sprint(float64(len(in[i].(string))+j) / 10)
			}
			data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%s]}`, i, strings.Join(vec, ",")))
		}
		return 200, `{"object":"list","data":[` + strings.Join(data, ",") + `],"model":"m"}`
	}
}

func TestEmbedderBatchesAndOrders(t *testing.T) {
	api, base := serve(t, echoEmbeddings(3))
	key := secret.New("sk-test-key")
	e := NewEmbedder(base, "text-embed", key, &EmbedderOptions{Batch: 2, Options: quick(1)})
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if api.count() != 3 {
		t.Errorf("%d requests for 5 texts in batches of 2, want 3", api.count())
	}
	for i, v := range vecs {
		if len(v) != 3 || v[0] != float32(len(texts[i]))/10 {
			t.Errorf("vector %d = %v: not the one for %q", i, v, texts[i])
		}
	}
	if e.Dims() != 3 || e.ModelID() != "openai-compatible:text-embed:3" {
		t.Errorf("Dims %d ModelID %q", e.Dims(), e.ModelID())
	}
	if api.auth[0] != "Bearer sk-test-key" {
		t.Errorf("Authorization = %q", api.auth[0])
	}
	if api.requests[0]["model"] != "text-embed" {
		t.Errorf("model = %v", api.requests[0]["model"])
	}
}

func TestEmbedderAsksForDimensions(t *testing.T) {
	api, base := serve(t, echoEmbeddings(4))
	e := NewEmbedder(base, "m", secret.Value{}, &EmbedderOptions{Dims: 4, Options: quick(1)})
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if api.requests[0]["dimensions"] != float64(4) || api.auth[0] != "" {
		t.Errorf("request %v, auth %q: want dimensions 4 and no key", api.requests[0], api.auth[0])
	}
}

func TestEmbedderRefusesMalformedAnswers(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"not JSON", `<html>oops</html>`},
		{"too few", `{"data":[]}`},
		{"index twice", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`},
		{"index out of range", `{"data":[{"index":0,"embedding":[1]},{"index":5,"embedding":[1]}]}`},
		{"width changes", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`},
		{"empty vector", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}`},
		{"beyond float32", `{"data":[{"index":0,"embedding":[1e300]},{"index":1,"embedding":[1]}]}`},
		{"string number", `{"data":[{"index":0,"embedding":["1"]},{"index":1,"embedding":[1]}]}`},
		{"duplicate key", `{"data":[],"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := serve(t, func(int, map[string]any) (int, string) { return 200, tt.body })
			_, err := NewEmbedder(base, "m", secret.Value{}, &EmbedderOptions{Options: quick(1)}).Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestRetriesAndErrors(t *testing.T) {
	// 503 then 429 then success: three attempts.
	api, base := serve(t, func(n int, req map[string]any) (int, string) {
		switch n {
		case 1:
			return 503, `{"error":{"message":"overloaded"}}`
		case 2:
			return 429, `{"error":{"message":"slow down"}}`
		}
		return echoEmbeddings(2)(n, req)
	})
	if _, err := NewEmbedder(base, "m", secret.Value{}, &EmbedderOptions{Options: quick(3)}).Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatalf("after two transient failures: %v", err)
	}
	if api.count() != 3 {
		t.Errorf("%d attempts, want 3", api.count())
	}

	// 401 is the caller's problem: no retry, the API's message, no key.
	key := secret.New("sk-live-SECRETSECRET")
	api, base = serve(t, func(int, map[string]any) (int, string) {
		return 401, `{"error":{"message":"Incorrect API key provided"}}`
	})
	_, err := NewEmbedder(base, "m", key, &EmbedderOptions{Options: quick(3)}).Embed(context.Background(), []string{"a"})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 401 || api.count() != 1 {
		t.Fatalf("err = %v after %d attempts, want one 401", err, api.count())
	}
	if strings.Contains(err.Error(), "SECRETSECRET") || strings.Contains(fmt.Sprintf("%+v", err), "SECRETSECRET") {
		t.Error("the API key leaked into the error")
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	_, base := serve(t, func(int, map[string]any) (int, string) {
		<-release
		return 200, `{}`
	})
	t.Cleanup(func() { close(release) }) // runs before the server's Close, which waits for handlers
	start := time.Now()
	_, err := NewEmbedder(base, "m", secret.Value{}, &EmbedderOptions{Options: Options{Timeout: 50 * time.Millisecond, Retry: &resilience.Policy{Attempts: 2, Base: time.Millisecond}}}).
		Embed(context.Background(), []string{"a"})
	// The server never answers: without the timeout, Embed would not
	// return at all, so a minute only bounds a failure.
	if err == nil || time.Since(start) > time.Minute {
		t.Fatalf("err = %v after %v, want a timeout", err, time.Since(start))
	}
}

func TestResponseSizeLimit(t *testing.T) {
	_, base := serve(t, func(int, map[string]any) (int, string) {
		return 200, `{"data":[{"index":0,"embedding":[` + strings.Repeat("1,", 5000) + `1]}]}`
	})
	_, err := NewEmbedder(base, "m", secret.Value{}, &EmbedderOptions{Options: Options{MaxResponseBytes: 1000, Retry: &resilience.Policy{}}}).
		Embed(context.Background(), []string{"a"})
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("err = %v, want ErrMalformed for an oversized answer", err)
	}
}

func chatAnswer(content string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": content}}}})
	return string(b)
}

func TestExtractor(t *testing.T) {
	api, base := serve(t, func(int, map[string]any) (int, string) {
		return 200, chatAnswer("```json\n{\"facts\":[{\"content\":\"The user lives in Lisbon.\",\"memory_type\":\"semantic\",\"tags\":[\"location\"]}]}\n```")
	})
	facts, err := NewExtractor(base, "gpt-x", secret.New("k"), &Options{Retry: &resilience.Policy{}}).
		Extract(context.Background(), "User said they moved to Lisbon last year.", "support chat")
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[0].Content != "The user lives in Lisbon." || facts[0].Type != "semantic" || facts[0].Tags[0] != "location" {
		t.Fatalf("facts = %+v", facts)
	}
	req := api.requests[0]
	if req["model"] != "gpt-x" || req["response_format"].(map[string]any)["type"] != "json_object" {
		t.Errorf("request = %v", req)
	}
	msgs := req["messages"].([]any)
	if user := msgs[1].(map[string]any)["content"].(string); !strings.Contains(user, "Lisbon") || !strings.Contains(user, "support chat") {
		t.Errorf("user message %q lacks the observation or its context", user)
	}
}

func TestExtractorRefusesMalformedFacts(t *testing.T) {
	tests := []struct{ name, content string }{
		{"prose", "The user likes tea."},
		{"no facts member", `{"items":[]}`},
		{"unknown member", `{"facts":[],"note":"x"}`},
		{"duplicate key", `{"facts":[{"content":"a b c","content":"x","memory_type":"semantic"}]}`},
		{"bad type", `{"facts":[{"content":"The user likes tea.","memory_type":"opinion"}]}`},
		{"empty content", `{"facts":[{"content":"  ","memory_type":"semantic"}]}`},
		{"too many", `{"facts":[` + strings.Repeat(`{"content":"a fact here","memory_type":"semantic"},`, MaxFacts) + `{"content":"one more","memory_type":"semantic"}]}`},
		{"huge fact", `{"facts":[{"content":"` + strings.Repeat("x", MaxFactBytes+1) + `","memory_type":"semantic"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := serve(t, func(int, map[string]any) (int, string) { return 200, chatAnswer(tt.content) })
			_, err := NewExtractor(base, "m", secret.Value{}, &Options{Retry: &resilience.Policy{}}).Extract(context.Background(), "obs", "")
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	_, base := serve(t, func(int, map[string]any) (int, string) { return 200, `{"choices":[]}` })
	if _, err := NewExtractor(base, "m", secret.Value{}, &Options{Retry: &resilience.Policy{}}).Extract(context.Background(), "obs", ""); !errors.Is(err, ErrMalformed) {
		t.Fatalf("no choices: err = %v", err)
	}
	_, base = serve(t, func(int, map[string]any) (int, string) { return 200, chatAnswer(`{"facts":[]}`) })
	facts, err := NewExtractor(base, "m", secret.Value{}, &Options{Retry: &resilience.Policy{}}).Extract(context.Background(), "hello", "")
	if err != nil || len(facts) != 0 {
		t.Fatalf("nothing to remember: facts %v err %v", facts, err)
	}
}

func FuzzParseFacts(f *testing.F) {
	for _, s := range []string{`{"facts":[]}`, "```json\n{\"facts\":[]}\n```", `{"facts":[{"content":"x y z","memory_type":"semantic","tags":["a"]}]}`, `[]`, `{"facts":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		facts, err := parseFacts(s)
		if err != nil {
			return
		}
		if len(facts) > MaxFacts {
			t.Fatalf("%d facts", len(facts))
		}
		for _, fc := range facts {
			if fc.Content == "" || len(fc.Content) > MaxFactBytes {
				t.Fatalf("fact %q passed", fc.Content)
			}
		}
	})
}
