package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/auth"
)

func Example() {
	dataDir, _ := os.MkdirTemp("", "novaos-data")
	defer os.RemoveAll(dataDir)

	iss, err := auth.Open(filepath.Join(dataDir, auth.KeyFile), auth.Options{Issuer: "http://127.0.0.1:8080"})
	if err != nil {
		panic(err)
	}
	token, _ := iss.Mint(context.Background(), identity.Claims{
		TenantID: "acme", AgentID: "mailer", Scopes: []string{"memory:read:*", "memory:write:agent"},
	}, 15*time.Minute)

	// A service behind the middleware takes identity from the token only.
	svc := iss.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := identity.FromContext(r.Context())
		fmt.Fprintf(w, "tenant %s, agent %s, may read tenant memory: %v", c.TenantID, c.AgentID, c.HasScope("memory:read:tenant"))
	}))
	r := httptest.NewRequest(http.MethodPost, "/api/v1/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	w := httptest.NewRecorder()
	svc.ServeHTTP(w, r)
	fmt.Println(w.Body)

	r = httptest.NewRequest(http.MethodPost, "/api/v1/mcp", nil)
	w = httptest.NewRecorder()
	svc.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// tenant acme, agent mailer, may read tenant memory: true
	// 401
}
