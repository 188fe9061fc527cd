package a2aclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
)

// exampleAgent serves an agent whose card asks for an API key in
// X-Agent-Key; it answers with the key's header as it arrived.
func exampleAgent() *httptest.Server {
	srv := httptest.NewUnstartedServer(nil)
	card := &a2a.AgentCard{Name: "keyed", Version: "1.0.0", SupportedInterfaces: []a2a.AgentInterface{
		{URL: "http://" + srv.Listener.Addr().String(), ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
	},
		SecuritySchemes:      map[string]a2a.SecurityScheme{"key": {APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: "X-Agent-Key"}}},
		SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"key": {}}}},
	}
	h := a2asrv.NewHandler(card, a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		return u.Reply(ctx, a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("ok")))
	}), nil)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("X-Agent-Key") != "k-123" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv.Start()
	return srv
}

// SchemeAuth sends the credential the card's security scheme asks for, in
// the scheme's header.
func ExampleSchemeAuth() {
	ctx := context.Background()
	srv := exampleAgent()
	defer srv.Close()

	creds := &a2aclient.SchemeCredentials{}
	creds.Set("", "key", secret.New("k-123")) // no session, scheme "key"
	c, err := a2aclient.NewFromURL(ctx, srv.URL, &a2aclient.Options{Auth: a2aclient.SchemeAuth(creds, nil)})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.SendText(ctx, "hello", "", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Message.Text())
	// Output:
	// ok
}

// Connect refuses a card whose interface is outside the allow-list, and
// needs the guard widened for an agent on this machine.
func ExampleResolver_Connect() {
	ctx := context.Background()
	srv := exampleAgent()
	defer srv.Close()
	r := a2aclient.NewResolver(nil)

	_, err := r.Connect(ctx, srv.URL, []string{".partner.example"}, nil)
	fmt.Println(errors.Is(err, a2aclient.ErrHostNotAllowed))

	_, err = r.Connect(ctx, srv.URL, []string{"127.0.0.1"}, nil)
	fmt.Println(errors.Is(err, netguard.ErrRefused))

	auth, _ := a2aclient.RequireAPIKey("X-Agent-Key", secret.New("k-123"))
	c, err := r.Connect(ctx, srv.URL, []string{"127.0.0.1"}, &a2aclient.Options{
		ConnectGuard: &netguard.Policy{AllowLoopback: true},
		Auth:         auth,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.SendText(ctx, "hello", "", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Message.Text())
	// Output:
	// true
	// true
	// ok
}
