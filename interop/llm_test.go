package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/llmgw"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// The LLM API against real peers: the official OpenAI Node SDK as a
// client of an OpenAI-compatible base URL (llm/llmtest, and the
// platform's gateway in front of it, which takes the same suite), and our
// llm.Client against openai-mock-api 0.4.0, an OpenAI mock server from
// npm (chat completions with streaming, models, API keys and
// tiktoken-counted usage; it serves no embeddings).

// openAINodeReport is what js/llm_openai_client.mjs prints.
type openAINodeReport struct {
	SDK   string           `json:"sdk"`
	Steps []openAINodeStep `json:"steps"`
}

// openAINodeStep is one step of the report.
type openAINodeStep struct {
	Name   string          `json:"name"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		// Name is the SDK's error class.
		Name    string `json:"name"`
		Status  *int   `json:"status"`
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// runOpenAINode runs js/llm_openai_client.mjs against baseURL, the OpenAI
// base URL, with token as its API key, and spent, when not zero, as the
// key of a last call over its budget.
func runOpenAINode(t *testing.T, baseURL string, token, spent secret.Value) *openAINodeReport {
	t.Helper()
	node, dir := jsPeer(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai")); err != nil {
		t.Fatalf("openai is not installed; run `npm ci` in interop/js (interop/run does): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "llm_openai_client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LLM_GATEWAY_URL="+baseURL, "NOVAOS_EXECUTION_TOKEN="+token.Reveal(),
		"LLM_CHAT_MODEL="+llmtest.ModelChat, "LLM_EMBEDDING_MODEL="+llmtest.ModelEmbedding)
	if !spent.IsZero() {
		cmd.Env = append(cmd.Env, "LLM_SPENT_TOKEN="+spent.Reveal())
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node llm_openai_client.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep openAINodeReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("openai (node) report:\n%s", stdout.String())
	return &rep
}

// checkOpenAINode checks a report of the Node SDK against an API whose
// answers are llm/llmtest's: echoes, one token per word, hashed vectors
// of DefaultDimensions numbers.
func checkOpenAINode(t *testing.T, rep *openAINodeReport, models []string) {
	t.Helper()
	results := map[string]json.RawMessage{}
	for _, s := range rep.Steps {
		if s.Name == "budget spent" {
			// The SDK raises its rate-limit error, whose code says why.
			if s.OK || s.Error == nil || s.Error.Name != "RateLimitError" || s.Error.Status == nil || *s.Error.Status != http.StatusTooManyRequests ||
				s.Error.Code != llm.CodeBudgetExceeded || s.Error.Type != llm.TypeInsufficientQuota || !strings.Contains(s.Error.Message, "budget is spent") {
				t.Errorf("budget spent: %+v", s.Error)
			}
			continue
		}
		if s.Name == "unknown model" {
			if s.OK || s.Error == nil || s.Error.Status == nil || *s.Error.Status != http.StatusNotFound || s.Error.Code != llm.CodeModelNotFound {
				t.Errorf("unknown model: %+v", s.Error)
			}
			continue
		}
		if !s.OK {
			t.Errorf("step %s failed: %+v", s.Name, s.Error)
			continue
		}
		results[s.Name] = s.Result
	}
	type usage struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	}
	var got struct {
		Models struct {
			IDs []string `json:"ids"`
		}
		Chat struct {
			Content string `json:"content"`
			Finish  string `json:"finish_reason"`
			Usage   usage  `json:"usage"`
		}
		Stream struct {
			Deltas []string `json:"deltas"`
			Finish string   `json:"finish_reason"`
			Usage  *usage   `json:"usage"`
		}
		Embeddings, EmbeddingsFloat struct {
			Vectors [][]float32 `json:"vectors"`
		}
	}
	for name, dst := range map[string]any{
		"models": &got.Models, "chat": &got.Chat, "stream": &got.Stream,
		"embeddings": &got.Embeddings, "embeddings float": &got.EmbeddingsFloat,
	} {
		if r, ok := results[name]; ok {
			if err := json.Unmarshal(r, dst); err != nil {
				t.Errorf("step %s: %v", name, err)
			}
		}
	}
	if d := cmp.Diff(models, got.Models.IDs); d != "" {
		t.Errorf("models (-want +got):\n%s", d)
	}
	if got.Chat.Content != "hello from node" || got.Chat.Finish != "stop" || got.Chat.Usage != (usage{5, 3, 8}) {
		t.Errorf("chat %+v", got.Chat)
	}
	if d := cmp.Diff([]string{"stream ", "to ", "node ", "please"}, got.Stream.Deltas); d != "" || got.Stream.Finish != "stop" ||
		got.Stream.Usage == nil || *got.Stream.Usage != (usage{4, 4, 8}) {
		t.Errorf("stream %+v (-want +got deltas):\n%s", got.Stream, d)
	}
	first, second := llmtest.Embed("first text", llmtest.DefaultDimensions), llmtest.Embed("second", llmtest.DefaultDimensions)
	if !cmp.Equal([][]float32{first, second}, got.Embeddings.Vectors) {
		t.Errorf("base64 embeddings %v", got.Embeddings.Vectors)
	}
	if !cmp.Equal([][]float32{first}, got.EmbeddingsFloat.Vectors) {
		t.Errorf("float embeddings %v", got.EmbeddingsFloat.Vectors)
	}
}

func TestOpenAINodeClient(t *testing.T) {
	tok := secret.New("sk-node-interop")
	p := llmtest.NewServer(&llmtest.Options{APIKey: tok.Reveal()})
	defer p.Close()
	checkOpenAINode(t, runOpenAINode(t, p.BaseURL(), tok, secret.Value{}), []string{llmtest.ModelChat, llmtest.ModelChatMini, llmtest.ModelEmbedding})
	if got := p.Calls(llmtest.PathChatCompletions); got != 3 {
		t.Errorf("chat calls = %d, want 3 (the SDK must not retry)", got)
	}
}

// The same suite through the platform's gateway (a real server, llm/llmtest
// behind it): the SDK with an execution token as its API key lists the
// models the token's scopes grant, and gets the provider's answers, its
// stream and its embeddings as they came; a token whose budget is spent
// gets the SDK's RateLimitError with code budget_exceeded.
func TestOpenAINodeClientThroughGateway(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	srv := startApp(t, &app.Options{LLM: llmgw.Options{AllowPrivate: true}})
	admin := func(path string, body any) {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPut, srv.URL()+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		// A server without an admin token takes a caller on its own
		// machine as its operator.
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			data, _ := io.ReadAll(resp.Body)
			t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, data)
		}
	}
	admin(llm.ProvidersPath+"/llmtest", llm.ProviderRequest{BaseURL: p.BaseURL()})
	for _, m := range []string{llmtest.ModelChat, llmtest.ModelChatMini, llmtest.ModelEmbedding} {
		admin(llm.ModelsPath+"/"+m, llm.RouteRequest{Targets: []llm.Target{{Provider: "llmtest", Model: m}}, InputUSDPerMillion: 2.5, OutputUSDPerMillion: 10})
	}
	// Broke's day allows a token: its every call is over it.
	admin(llm.BudgetsPath+"/broke", llm.BudgetRequest{DailyTokens: 1})
	mint := func(c identity.Claims) secret.Value {
		t.Helper()
		tok, err := srv.Issuer().Mint(context.Background(), c, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return secret.New(tok)
	}
	// Granted: two served models, and one no route serves; not gpt-4o-mini.
	tok := mint(identity.Claims{TenantID: "acme", AgentID: "node", InstanceID: "inst-1", RunID: "run-1",
		Scopes: []string{llm.ModelScopePrefix + llmtest.ModelChat, llm.ModelScopePrefix + llmtest.ModelEmbedding, llm.ModelScopePrefix + "no-such-model"}})
	spent := mint(identity.Claims{TenantID: "broke", AgentID: "node", Scopes: []string{"llm:model:*"}})
	rep := runOpenAINode(t, srv.URL()+"/v1", tok, spent)
	checkOpenAINode(t, rep, []string{llmtest.ModelChat, llmtest.ModelEmbedding})
	if !slices.ContainsFunc(rep.Steps, func(s openAINodeStep) bool { return s.Name == "budget spent" }) {
		t.Error("the report has no budget step")
	}
	if got := p.Calls(llmtest.PathChatCompletions); got != 2 {
		t.Errorf("chat calls at the provider = %d, want the chat and the stream (the unknown model and the spent budget are the gateway's)", got)
	}
	if auth := p.LastRequest().Header.Get("Authorization"); strings.Contains(auth, tok.Reveal()) {
		t.Error("the execution token reached the provider")
	}
}

// mockConfig answers every conversation of a user message, with or
// without a system message first, with mockReply.
const (
	mockKey    = "sk-openai-mock-api"
	mockReply  = "hello from the mock"
	mockConfig = `apiKey: '` + mockKey + `'
responses:
  - id: 'echo'
    messages:
      - role: 'user'
        matcher: 'any'
      - role: 'assistant'
        content: '` + mockReply + `'
  - id: 'echo-after-system'
    messages:
      - role: 'system'
        matcher: 'any'
      - role: 'user'
        matcher: 'any'
      - role: 'assistant'
        content: '` + mockReply + `'
`
)

// startOpenAIMockAPI runs openai-mock-api's CLI on a free port and
// returns its OpenAI base URL once it says it listens. Express binds
// every interface; the test only ever dials 127.0.0.1.
func startOpenAIMockAPI(t *testing.T) string {
	t.Helper()
	node, dir := jsPeer(t)
	cli := filepath.Join(dir, "node_modules", "openai-mock-api", "dist", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("openai-mock-api is not installed; run `npm ci` in interop/js (interop/run does): %v", err)
	}
	conf := filepath.Join(t.TempDir(), "openai-mock-api.yaml")
	if err := os.WriteFile(conf, []byte(mockConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command(node, cli, "--config", conf, "--port", port)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.Stderr = io.Discard
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startUntilReady(t, "openai-mock-api", cmd, stdout, "started on port "+port)
	return "http://127.0.0.1:" + port + "/v1"
}

func TestLLMClientAgainstOpenAIMockAPI(t *testing.T) {
	base := startOpenAIMockAPI(t)
	ctx := context.Background()
	c, err := llm.New(base, secret.New(mockKey), nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("models", func(t *testing.T) {
		ids, err := c.AvailableModels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ids, "gpt-4") {
			t.Errorf("models %v", ids)
		}
		if ok, err := c.HasModel(ctx, "gpt-4"); err != nil || !ok {
			t.Errorf("HasModel(gpt-4) = %v, %v", ok, err)
		}
	})

	req := &llm.ChatCompletionRequest{
		Model:    "gpt-4",
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: llm.Text("be kind")}, {Role: llm.RoleUser, Content: llm.Text("hi there")}},
	}
	t.Run("chat", func(t *testing.T) {
		got, err := c.ChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		u := got.Usage
		if got.Text() != mockReply || got.Choices[0].FinishReason != llm.FinishStop || got.Object != llm.ObjectChatCompletion ||
			u == nil || u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("answer %+v, usage %+v", got, u)
		}
	})

	t.Run("stream", func(t *testing.T) {
		s, err := c.ChatCompletionStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var text strings.Builder
		var role string
		var finish llm.FinishReason
		n := 0
		for s.Next() {
			n++
			ch := s.Chunk()
			if ch.Object != llm.ObjectChatCompletionChunk || len(ch.Choices) != 1 {
				t.Fatalf("chunk %+v", ch)
			}
			text.WriteString(ch.Text())
			role += ch.Choices[0].Delta.Role
			if f := ch.Choices[0].FinishReason; f != "" {
				finish = f
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		// A role chunk, one chunk a word, a finish chunk.
		if text.String() != mockReply || role != llm.RoleAssistant || finish != llm.FinishStop || n != 2+len(strings.Fields(mockReply)) {
			t.Errorf("%d chunks: text %q, role %q, finish %q", n, text.String(), role, finish)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		wrong, err := llm.New(base, secret.New("sk-wrong"), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = wrong.ChatCompletion(ctx, req)
		var e *llm.APIError
		if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != llm.CodeInvalidAPIKey {
			t.Errorf("wrong key: %v", err)
		}
		_, err = wrong.ChatCompletionStream(ctx, req)
		if !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
			t.Errorf("wrong key, streaming: %v", err)
		}
		if strings.Contains(err.Error(), "sk-wrong") {
			t.Error("the error shows the key")
		}
		// openai-mock-api serves no embeddings: its refusal is a typed
		// error, not a decoding failure.
		_, err = c.Embeddings(ctx, &llm.EmbeddingRequest{Model: "text-embedding-3-small", Input: llm.EmbeddingInput{Texts: []string{"x"}}})
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || !strings.Contains(e.Message, "/v1/embeddings is not supported") {
			t.Errorf("embeddings: %v", err)
		}
	})
}
