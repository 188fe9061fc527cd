package a2aclient_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/netguard"
)

// A webhook that takes only notifications the agent server signed. Against
// a NovaOS server, the keys come from its JWKS:
//
//	keys, err := identity.NewJWKS(identity.JWKSURL(agentServer), nil)
func ExamplePushHandler() {
	key, _ := jwk.GenerateKey(jwk.EdDSA) // the agent server's key
	keys, _ := identity.NewStaticKeys(key)
	v, err := a2aclient.NewPushVerifier("https://agent.example", keys, nil)
	if err != nil {
		panic(err)
	}
	got := make(chan string, 1)
	hook := httptest.NewServer(a2aclient.PushHandler(v, func(ctx context.Context, n *a2aclient.PushNotification) error {
		// Delivery is at least once: n.Claims.NotificationID tells a
		// repeat.
		got <- n.Claims.TaskID + " " + n.Event.Task.Status.State.String()
		return nil
	}))
	defer hook.Close()

	// The agent server's side: a task store with an outbox, drained.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tasks := a2asrv.NewMemoryTaskStore(nil)
	push := tasks.PushConfigStore()
	d, _ := a2apush.New(tasks.PushOutbox(), &a2apush.Options{
		Policy: &netguard.Policy{AllowLoopback: true},
		Signer: keySigner{key}, Issuer: "https://agent.example",
	})
	go d.Run(ctx)
	scope := a2asrv.Scope{Tenant: "acme"}
	tasks.Create(ctx, scope, &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.Now()}})
	push.Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "h", TaskID: "t1", URL: hook.URL})
	d.Wake()
	fmt.Println(<-got)
	// Output: t1 TASK_STATE_WORKING
}
