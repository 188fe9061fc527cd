package tools_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"novaos.dev/novaos/tools"
)

// A session stays while it is in use and is gone once idle past the
// timeout; a tenant's policy is replaced only over the version read.
func ExampleMemStore() {
	ctx := context.Background()
	s := tools.NewMemStore()
	t0 := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)
	const idle = 10 * time.Minute

	_ = s.CreateSession(ctx, tools.Session{ID: "sess-1", TenantID: "acme", Subject: "agent-1", CreatedAt: t0})
	got, err := s.TouchSession(ctx, "sess-1", t0.Add(5*time.Minute), idle)
	fmt.Println(got.LastSeen.Format(time.Kitchen), err)
	_, err = s.TouchSession(ctx, "sess-1", t0.Add(time.Hour), idle)
	fmt.Println(errors.Is(err, tools.ErrNotFound))

	p, _ := s.PutPolicy(ctx, tools.Policy{TenantID: "acme", Expr: "true", UpdatedAt: t0}, 0)
	_, err = s.PutPolicy(ctx, tools.Policy{TenantID: "acme", Expr: "false", UpdatedAt: t0}, 0)
	fmt.Println(p.Version, errors.Is(err, tools.ErrConflict))
	// Output:
	// 9:05AM <nil>
	// true
	// 1 true
}
