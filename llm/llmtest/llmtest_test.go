package llmtest_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
)

func post(t *testing.T, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestChat(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	resp, body := post(t, p.BaseURL()+"/chat/completions",
		`{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there world"}],"max_tokens":2,"seed":7}`,
		"Authorization", "Bearer k", "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got llm.ChatCompletion
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := llm.ChatCompletion{
		ID: "chatcmpl-llmtest-1", Object: llm.ObjectChatCompletion, Created: 1704067200, Model: "gpt-4o",
		Choices: []llm.Choice{{Message: llm.Message{Role: llm.RoleAssistant, Content: llm.Text("hello there ")}, FinishReason: llm.FinishLength}},
		Usage:   &llm.Usage{PromptTokens: 5, CompletionTokens: 2, TotalTokens: 7}, SystemFingerprint: "fp_llmtest",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("answer (-want +got):\n%s", d)
	}
	last := p.LastRequest()
	if last.Header.Get("traceparent") == "" || last.Header.Get("Authorization") != "Bearer k" || !strings.Contains(string(last.Body), `"seed":7`) {
		t.Errorf("last request not recorded: %+v", last)
	}
	if n := p.Calls(llmtest.PathChatCompletions); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
}

// events reads a server-sent event stream's data lines.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestStream(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	_, body := post(t, p.BaseURL()+"/chat/completions",
		`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a b c"}]}`)
	ev := events(t, strings.NewReader(string(body)))
	want := []string{
		`{"id":"chatcmpl-llmtest-1","object":"chat.completion.chunk","created":1704067200,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"a "},"finish_reason":null}],"system_fingerprint":"fp_llmtest"}`,
		`{"id":"chatcmpl-llmtest-1","object":"chat.completion.chunk","created":1704067200,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"b "},"finish_reason":null}],"system_fingerprint":"fp_llmtest"}`,
		`{"id":"chatcmpl-llmtest-1","object":"chat.completion.chunk","created":1704067200,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"c"},"finish_reason":null}],"system_fingerprint":"fp_llmtest"}`,
		`{"id":"chatcmpl-llmtest-1","object":"chat.completion.chunk","created":1704067200,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"system_fingerprint":"fp_llmtest"}`,
		`{"id":"chatcmpl-llmtest-1","object":"chat.completion.chunk","created":1704067200,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6},"system_fingerprint":"fp_llmtest"}`,
		`[DONE]`,
	}
	if d := cmp.Diff(want, ev); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestRefusals(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{APIKey: "sk-test", MaxBodyBytes: 512})
	defer p.Close()
	auth := []string{"Authorization", "Bearer sk-test"}
	tests := []struct {
		name   string
		path   string
		body   string
		header []string
		status int
		param  string
		code   string
	}{
		{"malformed JSON", "/chat/completions", `{"model":`, auth, 400, "", ""},
		{"trailing data", "/chat/completions", `{"model":"gpt-4o"} {}`, auth, 400, "", ""},
		{"member twice", "/chat/completions", `{"model":"gpt-4o","model":"x","messages":[{"role":"user","content":"a"}]}`, auth, 400, "", ""},
		{"not an object", "/chat/completions", `[]`, auth, 400, "", ""},
		{"wrong type", "/chat/completions", `{"model":"gpt-4o","messages":"hi"}`, auth, 400, "messages", ""},
		{"no model", "/chat/completions", `{"messages":[{"role":"user","content":"a"}]}`, auth, 400, "model", ""},
		{"unknown model", "/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"a"}]}`, auth, 404, "model", llm.CodeModelNotFound},
		{"no messages", "/chat/completions", `{"model":"gpt-4o","messages":[]}`, auth, 400, "messages", ""},
		{"bad role", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"robot","content":"a"}]}`, auth, 400, "messages[0].role", ""},
		{"tool without id", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"tool","content":"a"}]}`, auth, 400, "messages[0].tool_call_id", ""},
		{"stream options without stream", "/chat/completions", `{"model":"gpt-4o","stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a"}]}`, auth, 400, "stream_options", ""},
		{"temperature", "/chat/completions", `{"model":"gpt-4o","temperature":3,"messages":[{"role":"user","content":"a"}]}`, auth, 400, "temperature", ""},
		{"too large", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("a", 600) + `"}]}`, auth, 413, "", ""},
		{"no key", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"a"}]}`, nil, 401, "", llm.CodeInvalidAPIKey},
		{"wrong key", "/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"a"}]}`, []string{"Authorization", "Bearer sk-other"}, 401, "", llm.CodeInvalidAPIKey},
		{"empty embedding input", "/embeddings", `{"model":"text-embedding-3-small","input":""}`, auth, 400, "input", ""},
		{"no embedding input", "/embeddings", `{"model":"text-embedding-3-small","input":[]}`, auth, 400, "input", ""},
		{"bad encoding", "/embeddings", `{"model":"text-embedding-3-small","input":"a","encoding_format":"hex"}`, auth, 400, "encoding_format", ""},
		{"bad dimensions", "/embeddings", `{"model":"text-embedding-3-small","input":"a","dimensions":100000}`, auth, 400, "dimensions", ""},
		{"unknown path", "/completions", `{}`, auth, 404, "", ""},
		{"wrong method", "/models", ``, auth, 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, p.BaseURL()+tt.path, tt.body, tt.header...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			var wire struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &wire); err != nil || wire.Error.Message == "" || wire.Error.Type == "" {
				t.Fatalf("not an OpenAI error body: %s", body)
			}
			e := llm.ParseError(resp.StatusCode, body)
			if e.Param != tt.param || e.Code != tt.code {
				t.Errorf("param %q code %q, want %q %q", e.Param, e.Code, tt.param, tt.code)
			}
			if strings.Contains(string(body), "sk-other") {
				t.Error("the error shows the key it refused")
			}
		})
	}
}

func TestFailNext(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	p.FailNext(2, http.StatusServiceUnavailable)
	p.FailNextWith(1, &llm.APIError{Status: 429, Type: llm.TypeInsufficientQuota, Code: llm.CodeBudgetExceeded, Message: "spent"})
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"a"}]}`
	var got []int
	for range 4 {
		resp, _ := post(t, p.BaseURL()+"/chat/completions", body)
		got = append(got, resp.StatusCode)
	}
	if d := cmp.Diff([]int{503, 503, 429, 200}, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
	if n := p.Calls(llmtest.PathChatCompletions); n != 4 {
		t.Errorf("calls = %d, want 4", n)
	}
}

func TestHoldAndCut(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	h := p.HoldNextStream()
	req, _ := http.NewRequest(http.MethodPost, p.BaseURL()+"/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"one two"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-h.Held()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, `"content":"one "`) {
		t.Fatalf("first chunk %q, %v", line, err)
	}
	h.Release()
	rest, _ := io.ReadAll(br)
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || !strings.Contains(string(rest), `"two"`) {
		t.Errorf("rest of the stream: %q", rest)
	}

	p.CutNextStream()
	resp2, err := http.Post(p.BaseURL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"one two"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	b, err := io.ReadAll(resp2.Body)
	if err == nil {
		t.Errorf("a cut stream read to the end: %q", b)
	}
	if strings.Contains(string(b), "[DONE]") || !strings.Contains(string(b), `"one "`) {
		t.Errorf("cut stream: %q", b)
	}
}

func TestEmbeddings(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	for _, format := range []string{"", "float", "base64"} {
		t.Run("format "+format, func(t *testing.T) {
			body := `{"model":"text-embedding-3-small","input":["hello world","bye"],"dimensions":5`
			if format != "" {
				body += `,"encoding_format":"` + format + `"`
			}
			resp, b := post(t, p.BaseURL()+"/embeddings", body+"}")
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			var got llm.EmbeddingResponse
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			want := llm.EmbeddingResponse{
				Object: "list", Model: "text-embedding-3-small", Usage: llm.EmbeddingUsage{PromptTokens: 3, TotalTokens: 3},
				Data: []llm.Embedding{
					{Object: "embedding", Index: 0, Embedding: llmtest.Embed("hello world", 5)},
					{Object: "embedding", Index: 1, Embedding: llmtest.Embed("bye", 5)},
				},
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	resp, b := post(t, p.BaseURL()+"/embeddings", `{"model":"text-embedding-3-small","input":[[1,2],[3]]}`)
	var got llm.EmbeddingResponse
	if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil || len(got.Data) != 2 || got.Usage.PromptTokens != 3 ||
		!cmp.Equal(got.Data[0].Embedding, llmtest.Embed("1 2", llmtest.DefaultDimensions)) {
		t.Errorf("token input: %d %s", resp.StatusCode, b)
	}
}

func TestModels(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{Models: []string{"m1", "m2"}})
	defer p.Close()
	resp, err := http.Get(p.BaseURL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var got llm.ModelList
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := llm.ModelList{Object: "list", Data: []llm.Model{
		{ID: "m1", Object: "model", Created: 1704067200, OwnedBy: "llmtest"},
		{ID: "m2", Object: "model", Created: 1704067200, OwnedBy: "llmtest"},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for path, status := range map[string]int{"/models/m2": 200, "/models/nope": 404} {
		resp, err := http.Get(p.BaseURL() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, status)
		}
	}
	if n := p.Calls(llmtest.PathModels); n != 3 {
		t.Errorf("calls = %d, want 3", n)
	}
}

// With NoUsage, neither an answer nor a stream that asks for it carries
// the usage.
func TestNoUsage(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{NoUsage: true})
	defer p.Close()
	const msgs = `"messages":[{"role":"user","content":"hi there"}]`
	resp, body := post(t, p.BaseURL()+"/chat/completions", `{"model":"gpt-4o",`+msgs+`}`)
	var got llm.ChatCompletion
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || got.Usage != nil || got.Text() != "hi there" {
		t.Errorf("answer %d %s (%v), want one without usage", resp.StatusCode, body, err)
	}
	_, body = post(t, p.BaseURL()+"/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},`+msgs+`}`)
	evs := events(t, strings.NewReader(string(body)))
	if len(evs) == 0 || evs[len(evs)-1] != "[DONE]" || strings.Contains(string(body), `"usage":{`) {
		t.Errorf("stream %q, want one without a usage chunk", evs)
	}
}
