package modelapi

import (
	"context"
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/secret"
)

// Chat calls POST {base}/chat/completions for callers that read the
// model's answer themselves (the gate's judge); it checks the envelope
// strictly and returns the first choice untouched.
type Chat struct {
	c     *client
	model string
}

// NewChat returns a Chat using model at baseURL.
func NewChat(baseURL, model string, key secret.Value, o *Options) *Chat {
	return &Chat{c: newClient(baseURL, "/chat/completions", key, o), model: model}
}

// ChatMessage is one message of a conversation.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is what Complete sends besides the model. Temperature is
// always 0: the callers want repeatable answers.
type ChatRequest struct {
	Messages []ChatMessage
	// MaxTokens caps the answer; 0 leaves it to the server.
	MaxTokens int
	// ResponseFormat is sent as is when set, e.g.
	// {"type":"json_schema","json_schema":{…}}.
	ResponseFormat json.RawMessage
}

// Completion is the first choice of an answer.
type Completion struct {
	Content      string
	FinishReason string
	Refusal      string // set when the model refused
}

// Complete sends req and returns the first choice. An answer without
// choices or without content and refusal is malformed.
func (c *Chat) Complete(ctx context.Context, req ChatRequest) (Completion, error) {
	body := struct {
		Model          string          `json:"model"`
		Messages       []ChatMessage   `json:"messages"`
		Temperature    float64         `json:"temperature"`
		N              int             `json:"n"`
		MaxTokens      int             `json:"max_tokens,omitempty"`
		ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	}{Model: c.model, Messages: req.Messages, N: 1, MaxTokens: req.MaxTokens, ResponseFormat: req.ResponseFormat}
	var resp struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := c.c.post(ctx, body, &resp); err != nil {
		return Completion{}, fmt.Errorf("modelapi: chat: %w", err)
	}
	if len(resp.Choices) == 0 {
		return Completion{}, malformed("no choices in the answer")
	}
	ch := resp.Choices[0]
	out := Completion{FinishReason: ch.FinishReason}
	if ch.Message.Refusal != nil {
		out.Refusal = *ch.Message.Refusal
	}
	if ch.Message.Content != nil {
		out.Content = *ch.Message.Content
	} else if out.Refusal == "" {
		return Completion{}, malformed("no message in the answer")
	}
	return out, nil
}
