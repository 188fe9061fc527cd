package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// A client of an OpenAI-compatible API; here the fake provider stands in
// for the platform's gateway. A skill gets its client with llm.From(c,
// nil) instead.
func Example() {
	p := llmtest.NewServer(nil)
	defer p.Close()
	ctx := context.Background()
	c, err := llm.New(p.BaseURL(), secret.New("execution-token"), nil)
	if err != nil {
		panic(err)
	}

	if ok, err := c.HasModel(ctx, "gpt-4o"); err != nil || !ok {
		panic(fmt.Sprint("no gpt-4o: ", err))
	}
	answer, err := c.ChatCompletion(ctx, &llm.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text("Hello there")}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(answer.Text(), answer.Usage.TotalTokens)

	s, err := c.ChatCompletionStream(ctx, &llm.ChatCompletionRequest{
		Model:         "gpt-4o",
		Messages:      []llm.Message{{Role: llm.RoleUser, Content: llm.Text("one word at a time")}},
		StreamOptions: &llm.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	var parts []string
	for s.Next() {
		if t := s.Chunk().Text(); t != "" {
			parts = append(parts, t)
		}
	}
	if err := s.Err(); err != nil {
		panic(err)
	}
	fmt.Printf("%q %d\n", parts, s.Usage().CompletionTokens)

	// Output:
	// Hello there 4
	// ["one " "word " "at " "a " "time"] 5
}

// A refusal is an *APIError; a spent budget has its own code.
func ExampleAPIError() {
	p := llmtest.NewServer(nil)
	defer p.Close()
	p.FailNextWith(1, &llm.APIError{
		Status: http.StatusTooManyRequests, Type: llm.TypeInsufficientQuota,
		Code: llm.CodeBudgetExceeded, Message: "the run's daily token budget is spent",
	})
	c, err := llm.New(p.BaseURL(), secret.New("execution-token"), nil)
	if err != nil {
		panic(err)
	}
	_, err = c.ChatCompletion(context.Background(), &llm.ChatCompletionRequest{
		Model:    "gpt-4o",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text("Hello")}},
	})
	var e *llm.APIError
	if errors.As(err, &e) && e.BudgetExceeded() {
		fmt.Println(strings.TrimPrefix(err.Error(), "llm: "))
	}
	// Output:
	// 429 budget_exceeded: the run's daily token budget is spent
}
