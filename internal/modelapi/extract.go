package modelapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/strictjson"
)

// A Fact is one thing worth remembering about a user.
type Fact struct {
	Content string
	Type    string // semantic, episodic or procedural
	Tags    []string
}

// Limits on what an extraction may return.
const (
	MaxFacts       = 10
	MaxFactBytes   = 2 << 10
	MaxFactTags    = 8
	MaxFactTagSize = 64
)

// Extractor calls POST {base}/chat/completions to turn a hint into facts
// about the user, asking for a JSON object and reading it strictly.
type Extractor struct {
	c     *client
	model string
}

// NewExtractor returns an Extractor using model at baseURL.
func NewExtractor(baseURL, model string, key secret.Value, o *Options) *Extractor {
	return &Extractor{c: newClient(baseURL, "/chat/completions", key, o), model: model}
}

const extractPrompt = `You keep long-term memory about a user for an AI assistant.
From the observation below, extract the durable facts about the user worth remembering
in later conversations: preferences, circumstances, plans, relationships, how they like
things done. Write each fact as one short standalone sentence about "the user".
Leave out small talk, one-off requests, and anything that is personal data or a secret
(email addresses, phone numbers, card numbers, passwords, keys).
Answer with a JSON object only: {"facts":[{"content":"...","memory_type":"semantic|episodic|procedural","tags":["..."]}]}.
Answer {"facts":[]} when there is nothing worth remembering.`

type chatRequest struct {
	Model          string        `json:"model"`
	Messages       []chatMessage `json:"messages"`
	Temperature    float64       `json:"temperature"`
	ResponseFormat struct {
		Type string `json:"type"`
	} `json:"response_format"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// Extract asks the model for the facts in observation (with the hint's
// context, if any). The model's answer must be exactly the promised JSON
// object; facts of a type other than the three, empty, or over the size
// limits make the whole answer malformed, since a model that breaks the
// format once cannot be trusted with the rest.
func (x *Extractor) Extract(ctx context.Context, observation, context string) ([]Fact, error) {
	user := "Observation: " + observation
	if context != "" {
		user += "\nContext: " + context
	}
	req := chatRequest{Model: x.model, Messages: []chatMessage{{Role: "system", Content: extractPrompt}, {Role: "user", Content: user}}}
	req.ResponseFormat.Type = "json_object"
	var resp chatResponse
	if err := x.c.post(ctx, req, &resp); err != nil {
		return nil, fmt.Errorf("modelapi: extract: %w", err)
	}
	if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == nil {
		return nil, malformed("no message in the answer")
	}
	return parseFacts(*resp.Choices[0].Message.Content)
}

// parseFacts reads the model's JSON object, tolerating only a Markdown
// code fence around it.
func parseFacts(content string) ([]Fact, error) {
	content = strings.TrimSpace(content)
	if rest, ok := strings.CutPrefix(content, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		content = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	var doc struct {
		Facts *[]struct {
			Content    string   `json:"content"`
			MemoryType string   `json:"memory_type"`
			Tags       []string `json:"tags"`
		} `json:"facts"`
	}
	err := strictjson.Decode([]byte(content), &doc, nil, false)
	if _, ok := errors.AsType[*strictjson.Error](err); ok {
		return nil, malformed("facts: %v", err)
	}
	if err != nil || doc.Facts == nil {
		return nil, malformed("the model did not answer {\"facts\": [...]}")
	}
	if len(*doc.Facts) > MaxFacts {
		return nil, malformed("%d facts, at most %d", len(*doc.Facts), MaxFacts)
	}
	facts := make([]Fact, 0, len(*doc.Facts))
	for i, f := range *doc.Facts {
		c := strings.TrimSpace(f.Content)
		switch {
		case c == "" || len(c) > MaxFactBytes || !utf8.ValidString(c):
			return nil, malformed("fact %d: content must be 1 to %d bytes of text", i, MaxFactBytes)
		case f.MemoryType != "semantic" && f.MemoryType != "episodic" && f.MemoryType != "procedural":
			return nil, malformed("fact %d: memory_type must be semantic, episodic or procedural", i)
		case len(f.Tags) > MaxFactTags:
			return nil, malformed("fact %d: at most %d tags", i, MaxFactTags)
		}
		for _, t := range f.Tags {
			if t == "" || len(t) > MaxFactTagSize || strings.ContainsAny(t, "\x00\x1f") {
				return nil, malformed("fact %d: a tag must be 1 to %d bytes", i, MaxFactTagSize)
			}
		}
		facts = append(facts, Fact{Content: c, Type: f.MemoryType, Tags: f.Tags})
	}
	return facts, nil
}
