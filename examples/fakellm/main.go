// Command fakellm is a fake OpenAI-compatible model provider on --addr.
// It is llm/llmtest, for trying the LLM gateway without a model: it
// answers a chat with its last user message, word by word when streamed,
// counts a token a word, and embeds text by a hash.
//
//	go run ./examples/fakellm --addr 127.0.0.1:11434 --models llama3.1:8b,nomic-embed-text
package main

import (
	"flag"
	"log"
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/llm/llmtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:11434", "address to listen on")
	models := flag.String("models", strings.Join([]string{llmtest.ModelChat, llmtest.ModelChatMini, llmtest.ModelEmbedding}, ","),
		"comma-separated `ids` of the models it serves")
	flag.Parse()

	p := llmtest.NewHandler(&llmtest.Options{Models: strings.Split(*models, ",")})
	log.Printf("fakellm is serving %s on http://%s/v1", *models, *addr)
	srv := &http.Server{Addr: *addr, Handler: p, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
