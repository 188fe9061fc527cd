package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// A test points a client at the fake provider, makes it fail, and checks
// what reached it.
func ExampleNewServer() {
	p := llmtest.NewServer(&llmtest.Options{APIKey: "sk-test"})
	defer p.Close()
	// One attempt, so the example sees the failure the client would
	// otherwise retry.
	c, err := llm.New(p.BaseURL(), secret.New("sk-test"), &llm.Options{Retry: &resilience.Policy{}})
	if err != nil {
		panic(err)
	}
	req := &llm.ChatCompletionRequest{
		Model:    llmtest.ModelChat,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text("ping")}},
	}

	p.FailNext(1, http.StatusServiceUnavailable)
	_, err = c.ChatCompletion(context.Background(), req)
	var e *llm.APIError
	fmt.Println(errors.As(err, &e), e.Status, e.Temporary())

	answer, err := c.ChatCompletion(context.Background(), req)
	if err != nil {
		panic(err)
	}
	fmt.Println(answer.Text(), p.Calls(llmtest.PathChatCompletions), p.LastRequest().Header.Get("Authorization") != "")
	// Output:
	// true 503 true
	// ping 2 true
}
