// Package modelapi holds the platform's clients of OpenAI-compatible model
// APIs.
//
// They speak to OpenAI, Azure OpenAI's v1 surface, vLLM, Ollama, LM Studio
// and the like: an embeddings client that implements memory.Embedder, and a
// chat completions client that extracts facts from the memory service's
// consolidation hints. They are optional: the memory service's defaults need
// no model.
//
// Both take a base URL that ends before the endpoint, as the OpenAI SDKs
// do ("https://api.openai.com/v1", "http://127.0.0.1:11434/v1"), a model
// name and an API key (a secret.Value, sent as a bearer token and never
// logged). Calls time out (Options.Timeout, default 30s per attempt), are
// retried on 429, 502, 503, 504 and connection errors (package resilience),
// and their answers are read up to a size limit and parsed strictly: a
// malformed, oversized or inconsistent answer is an error, never a
// partial result.
//
//	emb := modelapi.NewEmbedder("https://api.openai.com/v1", "text-embedding-3-small", key, nil)
//	vecs, err := emb.Embed(ctx, []string{"User prefers tea"})
package modelapi
