package llmtest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
)

// The official OpenAI Go SDK is a client of the fake provider as it is of
// OpenAI: what the fake answers is what a provider answers.

func sdkClient(p *llmtest.Server, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(p.BaseURL() + "/"), option.WithAPIKey("sk-sdk"),
	}, opts...)...)
}

func TestOpenAISDKChat(t *testing.T) {
	p := llmtest.NewServer(&llmtest.Options{APIKey: "sk-sdk"})
	defer p.Close()
	c := sdkClient(p)
	got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    llmtest.ModelChat,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello from the sdk")},
		Seed:     openai.Int(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "hello from the sdk" || got.Choices[0].FinishReason != "stop" ||
		got.Usage.PromptTokens != 6 || got.Usage.CompletionTokens != 4 || got.Usage.TotalTokens != 10 || got.Model != llmtest.ModelChat {
		t.Errorf("answer %s", got.RawJSON())
	}
}

func TestOpenAISDKStream(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	c := sdkClient(p)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         llmtest.ModelChatMini,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream these four words")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	acc := openai.ChatCompletionAccumulator{}
	var deltas []string
	for stream.Next() {
		ch := stream.Current()
		if !acc.AddChunk(ch) {
			t.Fatalf("the accumulator refused chunk %s", ch.RawJSON())
		}
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
			deltas = append(deltas, ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"stream ", "these ", "four ", "words"}, deltas); d != "" {
		t.Errorf("deltas (-want +got):\n%s", d)
	}
	if acc.Choices[0].Message.Content != "stream these four words" || acc.Choices[0].FinishReason != "stop" {
		t.Errorf("accumulated %+v", acc.Choices[0])
	}
	if acc.Usage.PromptTokens != 4 || acc.Usage.CompletionTokens != 4 || acc.Usage.TotalTokens != 8 {
		t.Errorf("usage %+v", acc.Usage)
	}
}

func TestOpenAISDKEmbeddings(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	c := sdkClient(p)
	got, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:      llmtest.ModelEmbedding,
		Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"first text", "second"}},
		Dimensions: openai.Int(6),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Data) != 2 || got.Usage.PromptTokens != 3 {
		t.Fatalf("answer %s", got.RawJSON())
	}
	for i, text := range []string{"first text", "second"} {
		want := llmtest.Embed(text, 6)
		if int(got.Data[i].Index) != i || len(got.Data[i].Embedding) != len(want) {
			t.Fatalf("embedding %d: %s", i, got.Data[i].RawJSON())
		}
		for j, f := range got.Data[i].Embedding {
			if float32(f) != want[j] {
				t.Errorf("embedding %d[%d] = %v, want %v", i, j, f, want[j])
			}
		}
	}
}

func TestOpenAISDKModels(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	c := sdkClient(p)
	var ids []string
	iter := c.Models.ListAutoPaging(context.Background())
	for iter.Next() {
		ids = append(ids, iter.Current().ID)
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{llmtest.ModelChat, llmtest.ModelChatMini, llmtest.ModelEmbedding}, ids); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	m, err := c.Models.Get(context.Background(), llmtest.ModelChatMini)
	if err != nil || m.ID != llmtest.ModelChatMini || m.OwnedBy != "llmtest" {
		t.Errorf("get: %+v, %v", m, err)
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	p := llmtest.NewServer(nil)
	defer p.Close()
	params := openai.ChatCompletionNewParams{Model: "gpt-9", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
	noRetry := sdkClient(p, option.WithMaxRetries(0))
	_, err := noRetry.Chat.Completions.New(context.Background(), params)
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != http.StatusNotFound || e.Code != llm.CodeModelNotFound || e.Param != "model" ||
		!strings.Contains(e.Message, "gpt-9") {
		t.Fatalf("unknown model: %v", err)
	}

	// The SDK retries a 503 the fake sends as a provider does.
	p.FailNext(1, http.StatusServiceUnavailable)
	params.Model = llmtest.ModelChat
	oneRetry := sdkClient(p, option.WithMaxRetries(1))
	if _, err := oneRetry.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatalf("after a retry: %v", err)
	}
	if n := p.Calls(llmtest.PathChatCompletions); n != 3 {
		t.Errorf("calls = %d, want 3 (the 404, the 503 and its retry)", n)
	}
}
