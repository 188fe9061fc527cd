// Package llm is the SDK of the platform's OpenAI-compatible LLM gateway.
//
// The gateway speaks the OpenAI API (chat completions with streaming,
// embeddings, models) in front of the providers an operator configures,
// so an agent calls models without knowing about provider routing,
// fallbacks or budgets. This package holds the wire types, the typed
// OpenAI error (*APIError, with CodeBudgetExceeded for a spent budget)
// and Client. A skill gets a client for its run with From:
//
//	c, err := llm.From(ctx, nil) // ctx is the skill's *agent.Context
//	if err != nil {
//		return err
//	}
//	answer, err := c.ChatCompletion(ctx, &llm.ChatCompletionRequest{
//		Model:    "gpt-4o",
//		Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text("Hello")}},
//	})
//
// Package llmtest is an in-process fake provider for tests.
package llm
