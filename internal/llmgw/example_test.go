package llmgw_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/llmgw"
	"novaos.dev/novaos/llm"
)

// The gateway over a store holding one provider and one model route:
// an agent's token lists the models its scopes grant.
func Example() {
	ctx := context.Background()
	st := llm.NewMemoryStore()
	if _, err := st.PutProvider(ctx, llm.Provider{Name: "local", BaseURL: "http://127.0.0.1:11434/v1"}, 0); err != nil {
		panic(err)
	}
	if _, err := st.PutRoute(ctx, llm.Route{Name: "llama3.1:8b", Targets: []llm.Target{{Provider: "local", Model: "llama3.1:8b"}}}, 0); err != nil {
		panic(err)
	}
	issuer, err := auth.Open("", auth.Options{Issuer: "http://novaos.example"})
	if err != nil {
		panic(err)
	}
	gw := llmgw.New(llmgw.Deps{Store: st, Tokens: issuer}, &llmgw.Options{AllowPrivate: true})
	mux := http.NewServeMux()
	for _, r := range gw.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tok, err := issuer.Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "bot", Scopes: []string{"llm:model:*"}}, time.Minute)
	if err != nil {
		panic(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+llmgw.ModelsPath, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.Contains(string(body), `"id":"llama3.1:8b"`))
	// Output: 200 true
}
