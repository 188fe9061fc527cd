package app_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/schedsvc"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/store/sqlite"
)

// A heartbeat schedule on the server, end to end: a tenant's user
// installs the hosted echo agent, schedules it with the heartbeat client,
// and at the tick the agent runs with the task as its input, as the user.
func TestSchedulesEndToEnd(t *testing.T) {
	clock := schedsvc.NewManualClock(time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC))
	srv := start(t, &app.Options{DataDir: t.TempDir(), Schedules: app.SchedulesOptions{Clock: clock}})
	ctx := context.Background()
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"runs:*", "instances:*", "schedules:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := gw.Install(ctx, gateway.InstallRequest{Name: "echo", Hosted: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := heartbeat.New(srv.URL(), secret.New(tok), nil)
	if err != nil {
		t.Fatal(err)
	}
	created, err := hb.CreateConfig(ctx, "echo", inst.ID, heartbeat.CreateRequest{CronExpression: "*/5 * * * *",
		AgentImage: "registry.example.com/agents/echo", AgentImageTag: "1.0.0", TaskContent: "heartbeat check",
		Budget: &heartbeat.Budget{MaxDailyRuns: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hb.CreateConfig(ctx, "echo", inst.ID, heartbeat.CreateRequest{CronExpression: "* * * * *",
		AgentImage: "i", AgentImageTag: "t", TaskContent: "x", Budget: &heartbeat.Budget{MaxDailyRuns: 1}}); !errors.Is(err, heartbeat.ErrExists) {
		t.Errorf("a second config for the instance: %v", err)
	}
	tick := time.Date(2026, 7, 1, 10, 5, 0, 0, time.UTC)
	clock.Set(tick)
	select {
	case <-clock.Asleep():
	case <-time.After(time.Minute): // a failure bound
		t.Fatal("the scheduler did not handle the tick within a minute")
	}
	runID := schedsvc.RunIDFor(created.ConfigID, tick)
	var last gateway.StreamEvent
	for ev, err := range gw.EventsWithReconnect(ctx, runID, nil) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if !last.IsTerminal() || last.IsFailure() {
		t.Fatalf("the run ended on %+v", last)
	}
	run, err := gw.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Input != "heartbeat check" || run.Caller.UserID != "alice" || run.Status != gateway.StatusCompleted {
		t.Errorf("the scheduled run: %+v", run)
	}
	list, err := hb.ListConfigs(ctx, "echo", inst.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListConfigs = %+v, %v", list, err)
	}
	s := list[0].Schedules[0]
	if !s.LastRunAt.Equal(tick) || !s.NextRunAt.Equal(tick.Add(5*time.Minute)) || s.LastFire.RunID != runID {
		t.Errorf("schedule after the tick: %+v", s)
	}
}

// A schedule's daily token cap is checked against the LLM gateway's
// ledger: once its runs' calls used the cap, the next tick is skipped.
func TestSchedulesTokenBudget(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "novaos.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Stores()
	clock := schedsvc.NewManualClock(time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC))
	srv := start(t, &app.Options{Stores: st, Schedules: app.SchedulesOptions{Clock: clock}})
	ctx := t.Context()
	tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", UserID: "alice", AgentID: "console",
		Scopes: []string{"instances:*", "schedules:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := gw.Install(ctx, gateway.InstallRequest{Name: "echo", Hosted: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := heartbeat.New(srv.URL(), secret.New(tok), nil)
	if err != nil {
		t.Fatal(err)
	}
	created, err := hb.CreateConfig(ctx, "echo", inst.ID, heartbeat.CreateRequest{CronExpression: "* * * * *",
		AgentImage: "registry.example.com/agents/echo", AgentImageTag: "1.0.0", TaskContent: "heartbeat check",
		Budget: &heartbeat.Budget{MaxDailyRuns: 100, MaxDailyTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	tick := func(at time.Time) {
		t.Helper()
		clock.Set(at)
		select {
		case <-clock.Asleep():
		case <-time.After(time.Minute): // a failure bound
			t.Fatal("the scheduler did not handle the tick within a minute")
		}
	}
	first := time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)
	tick(first)
	// The first run's model calls, as the LLM gateway records them.
	run := schedsvc.RunIDFor(created.ConfigID, first)
	var uses []llm.CounterUse
	for _, c := range llm.CountersOf(llm.Keys{TenantID: "acme", InstanceID: inst.ID, RunID: run, Day: llm.DayOf(first)}) {
		uses = append(uses, llm.CounterUse{Counter: c, Used: llm.Amount{Tokens: 150}})
	}
	if _, err := st.LLM.Commit(ctx, llm.Batch{Unleased: uses, At: first, Expires: first.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	tick(first.Add(time.Minute))
	list, err := hb.ListConfigs(ctx, "echo", inst.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListConfigs = %+v, %v", list, err)
	}
	lf := list[0].Schedules[0].LastFire
	if lf == nil || lf.Outcome != heartbeat.OutcomeSkippedBudget || !strings.Contains(lf.Reason, "100 tokens is spent (150 used)") {
		t.Errorf("the second tick: %+v", lf)
	}
}
