package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
)

// gwRow is a Scanner over values in column order, as a driver hands them
// over: []byte for bytes, int64 for integers.
type gwRow []any

func (r gwRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return errors.New("column count")
	}
	for i, d := range dest {
		reflect.ValueOf(d).Elem().Set(reflect.ValueOf(r[i]))
	}
	return nil
}

// asGwRow is args as a row reads them back: NULL (nil []byte) stays nil.
func asGwRow(args []any) gwRow {
	r := make(gwRow, len(args))
	for i, a := range args {
		if b, ok := a.([]byte); ok || a == nil {
			r[i] = b
			continue
		}
		r[i] = a
	}
	return r
}

func cols(list string) []string {
	var out []string
	for _, c := range strings.Split(list, ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 123456000, time.UTC)

func fullRun() gateway.Run {
	return gateway.Run{
		ID: "r1", TenantID: "acme", InstanceID: "i1", AgentID: "a1", ThreadID: "th", ConversationID: "cv",
		Caller: gateway.Caller{Subject: "s", UserID: "alice", Service: true}, Status: gateway.StatusWaitingUser, Reason: "asks",
		Pause: json.RawMessage(`{"type": "hitl"}`), Input: "in", Attachments: []gateway.Attachment{{Type: "t", Data: []byte{0, 1}}},
		OutputSchema: map[string]any{"type": "object"}, Output: "out",
		Artifacts: []gateway.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("x")}}},
		TaskID:    "t", ContextID: "c", IdempotencyKey: "k", Turn: 2, Attempt: 3, LastSequence: 9,
		Debug: &gateway.DebugSession{SessionID: "d", RunID: "r1", BreakpointState: gateway.BreakpointPaused, Action: gateway.DebugPause,
			Actor: "s", UpdatedAt: t0},
		PendingInput: json.RawMessage(` "yes" `), CustomHeaders: []byte{0xff, 0},
		LeaseOwner: "o", LeaseUntil: t0.Add(time.Minute), NotBefore: t0.Add(time.Second), Version: 4,
		CreatedAt: t0, UpdatedAt: t0.Add(time.Hour), StartedAt: t0.Add(2 * time.Second), EndedAt: t0.Add(3 * time.Second),
	}
}

// A run and an instance read back from their columns as they were
// written, whichever of columns and body holds a field.
func TestRunAndInstanceColumns(t *testing.T) {
	r := fullRun()
	args, err := RunArgs(&r)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) != len(cols(RunCols)) {
		t.Fatalf("%d args for %d columns", len(args), len(cols(RunCols)))
	}
	got, err := ScanRun(asGwRow(args))
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(r, got); d != "" {
		t.Errorf("run (-want +got):\n%s", d)
	}
	// The columns win over body: a gwRow whose columns moved on (a claim)
	// reads as its columns say.
	byName := map[string]int{}
	for i, c := range cols(RunCols) {
		byName[c] = i
	}
	moved := asGwRow(args)
	moved[byName["lease_owner"]], moved[byName["version"]], moved[byName["last_seq"]] = "other", int64(5), int64(12)
	moved[byName["debug_state"]] = string(gateway.BreakpointRunning)
	got, _ = ScanRun(moved)
	if got.LeaseOwner != "other" || got.Version != 5 || got.LastSequence != 12 || got.Debug.BreakpointState != gateway.BreakpointRunning {
		t.Errorf("the columns read back as lease %q, version %d, last %d, debugger %+v", got.LeaseOwner, got.Version, got.LastSequence, got.Debug)
	}

	in := gateway.Instance{ID: "i1", TenantID: "acme", Name: "n", Hosted: "echo", Config: map[string]any{"k": "v"},
		SealedSecrets: []byte{1, 0}, Version: 3, CreatedAt: t0, UpdatedAt: t0.Add(time.Minute), Published: true}
	iargs, err := InstanceArgs(&in)
	if err != nil {
		t.Fatal(err)
	}
	gotIn, err := ScanInstance(asGwRow(iargs))
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(in, gotIn); d != "" {
		t.Errorf("instance (-want +got):\n%s", d)
	}
	if _, err := ScanRun(gwRow{"x", "t", "i", "u", "", "QUEUED", "", int64(0), int64(0), int64(0), int64(1), int64(0), int64(0), int64(0), int64(0),
		[]byte(nil), []byte(nil), []byte(nil), []byte("not json"), ""}); err == nil || strings.Contains(err.Error(), "column count") {
		t.Error("ScanRun of a body that is not JSON succeeded")
	}
	if _, err := RunArgs(&gateway.Run{OutputSchema: map[string]any{"bad": make(chan int)}}); err == nil {
		t.Error("RunArgs of a run JSON cannot encode succeeded")
	}
}

// RunSetArgs picks the values of RunSetCols out of RunArgs' by name.
func TestRunSetArgs(t *testing.T) {
	r := fullRun()
	args, err := RunArgs(&r)
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]any{}
	for i, c := range cols(RunCols) {
		at[c] = args[i]
	}
	var want []any
	for _, c := range cols(RunSetCols) {
		v, ok := at[c]
		if !ok {
			t.Fatalf("RunSetCols names %s, which RunCols does not", c)
		}
		want = append(want, v)
	}
	if d := gocmp.Diff(want, RunSetArgs(args)); d != "" {
		t.Errorf("RunSetArgs (-want +got):\n%s", d)
	}
	for _, c := range []string{"id", "tenant", "created_us", "last_seq"} {
		if strings.Contains(", "+RunSetCols+",", ", "+c+",") {
			t.Errorf("RunSetCols replaces %s, which a write keeps or moves on", c)
		}
	}
}

func TestPrepareRunWrite(t *testing.T) {
	now := time.Date(2026, 5, 1, 9, 0, 0, 123456789, time.FixedZone("x", 3600))
	stored := now.UTC().Truncate(time.Microsecond)
	own := now.Add(-time.Hour)
	in := gateway.RunWrite{
		Run: gateway.Run{ID: "r", TenantID: "acme", Status: gateway.StatusRunning, Version: 9, CreatedAt: own, LeaseUntil: now},
		Events: []gateway.Event{
			{Type: "a", Payload: json.RawMessage(`{"x" : 1}`), Sequence: 40, RunID: "other"},
			{Type: "b", At: own},
		},
		Now: now,
	}
	w := in
	if err := PrepareRunWrite(&w, true); err != nil {
		t.Fatal(err)
	}
	want := gateway.RunWrite{
		Run: gateway.Run{ID: "r", TenantID: "acme", Status: gateway.StatusRunning, Version: 1, CreatedAt: stored, UpdatedAt: stored, LeaseUntil: stored},
		Events: []gateway.Event{
			{RunID: "r", Type: "a", Payload: json.RawMessage(`{"x" : 1}`), At: stored},
			{RunID: "r", Type: "b", At: own.UTC().Truncate(time.Microsecond)},
		},
		Now: stored,
	}
	if d := gocmp.Diff(want, w); d != "" {
		t.Errorf("PrepareRunWrite on creation (-want +got):\n%s", d)
	}
	if in.Events[0].RunID != "other" || in.Events[0].Sequence != 40 || !in.Events[1].At.Equal(own) {
		t.Errorf("the caller's events were changed: %+v", in.Events)
	}
	w = in
	w.ExpectVersion = 4
	if err := PrepareRunWrite(&w, false); err != nil {
		t.Fatal(err)
	}
	if w.Run.Version != 5 || !w.Run.CreatedAt.Equal(own) || !w.Run.UpdatedAt.Equal(stored) {
		t.Errorf("PrepareRunWrite on a write: version %d, created %v, updated %v", w.Run.Version, w.Run.CreatedAt, w.Run.UpdatedAt)
	}
	// Now defaults to the present.
	w = gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "acme", Status: gateway.StatusQueued}}
	before := time.Now().Add(-time.Second)
	if err := PrepareRunWrite(&w, true); err != nil || w.Now.Before(before) || w.Now.Location() != time.UTC || w.Now.Nanosecond()%1000 != 0 {
		t.Errorf("PrepareRunWrite without Now: %v, %v", w.Now, err)
	}

	for name, c := range map[string]struct {
		w      gateway.RunWrite
		create bool
	}{
		"a creation with a version":    {gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", Status: gateway.StatusQueued}, ExpectVersion: 1}, true},
		"a write without a version":    {gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", Status: gateway.StatusQueued}}, false},
		"a write of a version below 0": {gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", Status: gateway.StatusQueued}, ExpectVersion: -1}, false},
		"no id":                        {gateway.RunWrite{Run: gateway.Run{TenantID: "t", Status: gateway.StatusQueued}}, true},
		"no tenant":                    {gateway.RunWrite{Run: gateway.Run{ID: "r", Status: gateway.StatusQueued}}, true},
		"a bad status":                 {gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", Status: "queued"}}, true},
		"an event without a type":      {gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", Status: gateway.StatusQueued}, Events: []gateway.Event{{}}}, true},
		"a payload that is not JSON": {gateway.RunWrite{Run: gateway.Run{ID: "r", TenantID: "t", Status: gateway.StatusQueued},
			Events: []gateway.Event{{Type: "x", Payload: json.RawMessage(`{`)}}}, true},
	} {
		if err := PrepareRunWrite(&c.w, c.create); err == nil {
			t.Errorf("%s: PrepareRunWrite succeeded", name)
		}
	}
}

func TestPrepareInstance(t *testing.T) {
	now := time.Date(2026, 5, 1, 9, 0, 0, 123456789, time.FixedZone("x", 3600))
	stored := now.UTC().Truncate(time.Microsecond)
	in := gateway.Instance{ID: "i", TenantID: "t", Name: "n", Version: 8, CreatedAt: now.Add(-time.Hour), SealedSecrets: []byte{}}
	if err := PrepareInstance(&in, 0, now); err != nil {
		t.Fatal(err)
	}
	want := gateway.Instance{ID: "i", TenantID: "t", Name: "n", Version: 1, CreatedAt: stored, UpdatedAt: stored}
	if d := gocmp.Diff(want, in); d != "" {
		t.Errorf("PrepareInstance on creation (-want +got):\n%s", d)
	}
	in.CreatedAt = now.Add(-time.Hour)
	if err := PrepareInstance(&in, 3, now.Add(time.Minute)); err != nil || in.Version != 4 || !in.CreatedAt.Equal(now.Add(-time.Hour)) ||
		!in.UpdatedAt.Equal(stored.Add(time.Minute)) {
		t.Errorf("PrepareInstance on an update = %+v, %v", in, err)
	}
	for _, bad := range []gateway.Instance{{TenantID: "t", Name: "n"}, {ID: "i", Name: "n"}, {ID: "i", TenantID: "t"}} {
		if err := PrepareInstance(&bad, 0, now); err == nil {
			t.Errorf("PrepareInstance(%+v) succeeded", bad)
		}
	}
	if err := PrepareInstance(&gateway.Instance{ID: "i", TenantID: "t", Name: "n"}, -1, now); err == nil {
		t.Error("PrepareInstance with a negative version succeeded")
	}
}

func TestNumberAndSortClaimed(t *testing.T) {
	evs := make([]gateway.Event, 3)
	if last := Number(evs, 7); last != 10 || evs[0].Sequence != 8 || evs[2].Sequence != 10 {
		t.Errorf("Number = %d, %+v", last, evs)
	}
	if last := Number(nil, 7); last != 7 {
		t.Errorf("Number of no events = %d", last)
	}
	runs := []gateway.Run{{ID: "b", CreatedAt: t0}, {ID: "c", CreatedAt: t0.Add(-time.Second)}, {ID: "a", CreatedAt: t0}}
	SortClaimed(runs)
	if got := []string{runs[0].ID, runs[1].ID, runs[2].ID}; !reflect.DeepEqual(got, []string{"c", "a", "b"}) {
		t.Errorf("SortClaimed = %v", got)
	}
}

func TestEventWatchers(t *testing.T) {
	var ws EventWatchers
	ws.Announce("nobody", 1) // no watcher: nothing to do
	ctx, cancel := context.WithCancel(context.Background())
	var a, b atomic.Int64
	if err := ws.Watch(ctx, func(run string, last int64) { a.Add(last) }); err != nil {
		t.Fatal(err)
	}
	if err := ws.Watch(context.Background(), func(run string, last int64) { b.Add(last) }); err != nil {
		t.Fatal(err)
	}
	ws.Announce("r", 3)
	if a.Load() != 3 || b.Load() != 3 || ws.Len() != 2 {
		t.Fatalf("after one announcement: %d, %d, %d watchers", a.Load(), b.Load(), ws.Len())
	}
	cancel()
	ws.Announce("r", 4) // a's context ended: even before its removal, a is not called
	if a.Load() != 3 || b.Load() != 7 {
		t.Errorf("after a's context ended: %d, %d", a.Load(), b.Load())
	}
	for deadline := time.Now().Add(time.Minute); ws.Len() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watchers a minute after a's context ended, want 1", ws.Len())
		}
	}
	ws.Announce("r", 5) // b, and b only, is still watching
	if a.Load() != 3 || b.Load() != 12 {
		t.Errorf("after a's removal: %d, %d", a.Load(), b.Load())
	}
	var lost atomic.Bool
	if err := ws.Watch(context.Background(), func(run string, last int64) { lost.Store(run == "" && last == 0) }); err != nil {
		t.Fatal(err)
	}
	ws.Lost()
	if !lost.Load() {
		t.Error("Lost did not call the watcher with (\"\", 0)")
	}
	if err := ws.Watch(ctx, func(string, int64) {}); err == nil {
		t.Error("Watch with an ended context succeeded")
	}
	if err := ws.Watch(context.Background(), nil); err == nil {
		t.Error("Watch of a nil fn succeeded")
	}
}

func TestScanEvent(t *testing.T) {
	got, err := ScanEvent(gwRow{"r1", int64(4), "status", []byte(`{"a" : 1}`), t0.UnixMicro(), "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"})
	want := gateway.Event{RunID: "r1", Sequence: 4, Type: "status", Payload: json.RawMessage(`{"a" : 1}`), At: t0,
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
	if d := gocmp.Diff(want, got); err != nil || d != "" {
		t.Errorf("ScanEvent = %v (-want +got):\n%s", err, d)
	}
	if got, err := ScanEvent(gwRow{"r1", int64(5), "done", []byte(nil), t0.UnixMicro(), "", ""}); err != nil || got.Payload != nil {
		t.Errorf("ScanEvent of an empty payload = %+v, %v", got, err)
	}
	if _, err := ScanEvent(gwRow{"r1"}); err == nil {
		t.Error("ScanEvent of a short row succeeded")
	}
}
