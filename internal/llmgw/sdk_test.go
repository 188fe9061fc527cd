package llmgw

import (
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
)

// The official OpenAI Go SDK is a client of the gateway as of OpenAI:
// chat, a stream, embeddings, the models list, and its typed errors,
// with the execution token as its API key.
func TestOpenAISDK(t *testing.T) {
	h := newHarness(t, nil, Deps{})
	p := newProvider(t)
	h.provider("openai", p.BaseURL(), "sk-upstream")
	h.route("gpt-4o", llm.Target{Provider: "openai", Model: "gpt-4o"})
	h.route("text-embedding-3-small", llm.Target{Provider: "openai", Model: "text-embedding-3-small"})
	h.route("gpt-4o-mini", llm.Target{Provider: "openai", Model: "gpt-4o-mini"})
	tok := h.token(claims("llm:model:gpt-4o", "llm:model:text-embedding-3-small"))
	client := openai.NewClient(option.WithBaseURL(h.srv.URL+"/v1/"), option.WithAPIKey(tok), option.WithMaxRetries(0),
		option.WithHTTPClient(h.srv.Client()))
	ctx := t.Context()

	chat, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")}})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if len(chat.Choices) != 1 || chat.Choices[0].Message.Content != chatAnswer || chat.Usage.TotalTokens != chatPrompt+chatCompletion {
		t.Errorf("chat answer %+v", chat)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	var text strings.Builder
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != chatAnswer || acc.Usage.PromptTokens != chatPrompt {
		t.Errorf("stream text %q, usage %+v", text.String(), acc.Usage)
	}

	emb, err := client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("word")}})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if len(emb.Data) != 1 || len(emb.Data[0].Embedding) != llmtest.DefaultDimensions || emb.Usage.PromptTokens != embedTokens {
		t.Errorf("embeddings %+v", emb)
	}

	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "gpt-4o,text-embedding-3-small" {
		t.Errorf("models %v, want the two the token grants", ids)
	}

	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 403 || apiErr.Code != llm.CodeModelNotAllowed {
		t.Errorf("a model outside the scopes: %v, want a 403 *openai.Error with code %s", err, llm.CodeModelNotAllowed)
	}
	bad := openai.NewClient(option.WithBaseURL(h.srv.URL+"/v1/"), option.WithAPIKey("sk-wrong"), option.WithMaxRetries(0))
	_, err = bad.Models.List(ctx)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || apiErr.Code != llm.CodeInvalidAPIKey {
		t.Errorf("a wrong key: %v, want a 401 *openai.Error with code %s", err, llm.CodeInvalidAPIKey)
	}
}
