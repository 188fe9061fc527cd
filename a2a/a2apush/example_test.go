package a2apush_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/netguard"
)

func Example() {
	got := make(chan string, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("Authorization") + " " + string(body)
	}))
	defer hook.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tasks := a2asrv.NewMemoryTaskStore(nil)
	push := tasks.PushConfigStore()
	d, err := a2apush.New(tasks.PushOutbox(), &a2apush.Options{
		Policy: &netguard.Policy{AllowLoopback: true}, // the receiver is on this machine
	})
	if err != nil {
		panic(err)
	}
	go d.Run(ctx)

	scope := a2asrv.Scope{Tenant: "acme", Owner: "alice"}
	task := &a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.Unix(0, 0).UTC()}}
	tasks.Create(ctx, scope, task)
	push.Put(ctx, scope, &a2a.TaskPushNotificationConfig{
		ID: "hook", TaskID: "t1", URL: hook.URL,
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "s3cret"},
	})
	d.Wake()
	fmt.Println(<-got)
	// Output: Bearer s3cret {"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_WORKING","timestamp":"1970-01-01T00:00:00.000Z"}}}
}
