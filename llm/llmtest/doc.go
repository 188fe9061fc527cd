// Package llmtest is an in-process fake OpenAI-compatible provider for tests.
//
// NewServer starts it on a loopback port; point any OpenAI client at its
// BaseURL. It serves POST /v1/chat/completions (a JSON answer, or a
// server-sent event stream with a usage chunk when
// stream_options.include_usage is set), POST /v1/embeddings (float or
// base64) and GET /v1/models[/{id}], and checks requests as a provider
// does, answering OpenAI-shaped errors.
//
// Answers are deterministic: the reply echoes the last user message (see
// Options.Reply), one token per word (Tokens), and embeddings come from
// a hash of the input (Embed). A test steers it with FailNext,
// HoldNextStream and CutNextStream, and checks what reached it with Calls
// and LastRequest:
//
//	p := llmtest.NewServer(nil)
//	defer p.Close()
//	p.FailNext(1, http.StatusTooManyRequests) // the next call answers 429
//	c, _ := llm.New(p.BaseURL(), secret.New("key"), nil)
//	…
//	p.Calls(llmtest.PathChatCompletions) // 2: the 429 and the retry
package llmtest
