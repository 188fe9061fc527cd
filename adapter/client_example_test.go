package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/secret"
)

func ExampleNewClient() {
	// A stand-in for the platform, which starts a run only with its
	// newest invocation token.
	platform := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(delivery.InvocationTokenHeader) != "newest-token" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(delivery.Problem{Title: "Forbidden", Status: http.StatusForbidden,
				Code: delivery.CodeInvocationTokenInvalid, Reason: delivery.TokenSuperseded})
			return
		}
		_ = json.NewEncoder(w).Encode(delivery.Run{ID: "run-1", State: delivery.RunRunning, Version: 2, Starts: 1})
	}))
	defer platform.Close()

	dir, err := os.MkdirTemp("", "adapter-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// The key's thumbprint is what the agent's token was bound to.
	key, err := adapter.LoadOrCreateDPoPKey(filepath.Join(dir, "dpop.pem"))
	if err != nil {
		panic(err)
	}
	c, err := adapter.NewClient(platform.URL, adapter.Credentials{APIToken: secret.New("agent-api-token"), DPoP: key},
		&adapter.ClientOptions{UserAgent: delivery.NameVersion{Name: "lotse", Version: "1.0.0"}})
	if err != nil {
		panic(err)
	}

	token := "older-token"
	ctx := adapter.WithRun(context.Background(), "run-1", func() string { return token })
	start := delivery.RunStart{BillingModeUsed: delivery.BillingPlatform, ToolClassUsed: delivery.ToolChat}
	_, err = c.StartRun(ctx, "run-1", start)
	var refusal *adapter.ProblemError
	if errors.Is(err, adapter.ErrInvocationTokenInvalid) && errors.As(err, &refusal) {
		fmt.Println("refused:", refusal.Reason())
	}
	token = "newest-token" // a redelivery brought a newer one
	run, err := c.StartRun(ctx, "run-1", start)
	if err != nil {
		panic(err)
	}
	fmt.Println(run.State, run.Starts)
	// Output:
	// refused: superseded
	// running 1
}
