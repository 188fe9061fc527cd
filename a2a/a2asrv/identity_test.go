package a2asrv_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// principal is what the test's Identify learns of a caller.
type principal struct{ user string }

// What Identify learns of the caller reaches the interceptors (Call) and
// the executor (RequestContext) as it left it; a call it learned nothing
// of carries nil.
func TestIdentityReachesInterceptorsAndExecutor(t *testing.T) {
	var seenByInterceptor, seenByExecutor []any
	var log []string
	ic := &recorder{name: "ic", log: &log, refuse: func(call *a2asrv.Call, _ any) error {
		seenByInterceptor = append(seenByInterceptor, call.Identity)
		return nil
	}}
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		seenByExecutor = append(seenByExecutor, req.Identity)
		return scripted(ctx, req, u)
	})
	c, _ := newServer(t, exec, &a2asrv.Options{Interceptors: []a2asrv.Interceptor{ic},
		Identify: func(_ context.Context, call *a2asrv.Call) (a2asrv.Scope, error) {
			if u := call.Header.Get("X-User"); u != "" {
				call.Identity = &principal{user: u}
			}
			return a2asrv.Scope{}, nil
		}})
	if e := c.call(a2a.MethodSendMessage, userMessage("complete it"), nil, "X-User", "ada"); e != nil {
		t.Fatal(e)
	}
	if e := c.call(a2a.MethodSendMessage, userMessage("complete it"), nil); e != nil {
		t.Fatal(e)
	}
	for name, seen := range map[string][]any{"interceptor": seenByInterceptor, "executor": seenByExecutor} {
		if len(seen) != 2 {
			t.Fatalf("%s saw %d calls, want 2", name, len(seen))
		}
		if p, ok := seen[0].(*principal); !ok || p.user != "ada" {
			t.Errorf("%s saw identity %#v for ada's call", name, seen[0])
		}
		if seen[1] != nil {
			t.Errorf("%s saw identity %#v for an anonymous call", name, seen[1])
		}
	}
}
