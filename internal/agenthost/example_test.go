package agenthost_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/agenthost"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/store"
)

// A host over tasks kept in memory, its routes on a mux: the echo agent
// answers a JSON-RPC SendMessage at /agents/echo.
func Example() {
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	defer ts.Close()

	guard, err := httpapi.NewGuard(nil)
	if err != nil {
		log.Fatal(err)
	}
	st := &store.Stores{Tasks: a2asrv.NewMemoryTaskStore(nil)}
	h, err := agenthost.New(context.Background(), st, agenthost.Deps{BaseURL: ts.URL, Guard: guard}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range h.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	defer h.Shutdown(context.Background())

	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, h.Endpoints()[0].URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(h.Endpoints()[0].Name, resp.StatusCode, strings.Contains(string(b), `"text":"hello"`))
	// Output: echo 200 true
}
