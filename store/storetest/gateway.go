package storetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// TestGatewayStore runs the gateway.Store contract. newStore must return a
// new, empty store each time it is called.
func TestGatewayStore(t *testing.T, newStore func(t *testing.T) gateway.Store) {
	t.Run("InstanceCreateGet", func(t *testing.T) { testGwInstanceCreate(t, newStore(t)) })
	t.Run("InstanceExists", func(t *testing.T) { testGwInstanceExists(t, newStore(t)) })
	t.Run("InstanceList", func(t *testing.T) { testGwInstanceList(t, newStore(t)) })
	t.Run("InstanceListLimit", func(t *testing.T) { testGwInstanceListLimit(t, newStore(t)) })
	t.Run("InstanceUpdate", func(t *testing.T) { testGwInstanceUpdate(t, newStore(t)) })
	t.Run("InstanceDelete", func(t *testing.T) { testGwInstanceDelete(t, newStore(t)) })
	t.Run("RunCreate", func(t *testing.T) { testGwRunCreate(t, newStore(t)) })
	t.Run("RunCreateRefused", func(t *testing.T) { testGwRunCreateRefused(t, newStore(t)) })
	t.Run("RunRoundTrip", func(t *testing.T) { testGwRunRoundTrip(t, newStore(t)) })
	t.Run("RunWrite", func(t *testing.T) { testGwRunWrite(t, newStore(t)) })
	t.Run("RunWriteRefused", func(t *testing.T) { testGwRunWriteRefused(t, newStore(t)) })
	t.Run("RunWriteGrantedOnce", func(t *testing.T) { testGwRunWriteOnce(t, newStore(t)) })
	t.Run("RunWriteNoGap", func(t *testing.T) { testGwRunWriteNoGap(t, newStore(t)) })
	t.Run("Events", func(t *testing.T) { testGwEvents(t, newStore(t)) })
	t.Run("ListRuns", func(t *testing.T) { testGwListRuns(t, newStore(t)) })
	t.Run("ListRunsLimit", func(t *testing.T) { testGwListRunsLimit(t, newStore(t)) })
	t.Run("CountRuns", func(t *testing.T) { testGwCountRuns(t, newStore(t)) })
	t.Run("ClaimRuns", func(t *testing.T) { testGwClaimRuns(t, newStore(t)) })
	t.Run("DebugHold", func(t *testing.T) { testGwDebugHold(t, newStore(t)) })
	t.Run("ClaimRunsConcurrent", func(t *testing.T) {
		s := newStore(t)
		testGwClaimConcurrent(t, func(int) gateway.Store { return s })
	})
	t.Run("WatchEvents", func(t *testing.T) { testGwWatch(t, newStore(t)) })
	t.Run("WatchEventsConcurrent", func(t *testing.T) {
		s := newStore(t)
		testGwWatchConcurrent(t, s, s)
	})
}

// TestGatewayReplicas runs the part of the gateway.Store contract that
// spans several handles on one database, as replicas of a server have:
// newReplica returns a new handle on the same database at every call.
// Claims are exclusive across handles; with watch, a handle's WatchEvents
// also reports the others' appends (a store shared by processes).
func TestGatewayReplicas(t *testing.T, newDatabase func(t *testing.T) (newReplica func() gateway.Store), watch bool) {
	t.Run("ClaimRunsConcurrent", func(t *testing.T) {
		newReplica := newDatabase(t)
		replicas := []gateway.Store{newReplica(), newReplica(), newReplica()}
		testGwClaimConcurrent(t, func(i int) gateway.Store { return replicas[i%len(replicas)] })
	})
	if !watch {
		return
	}
	t.Run("WatchEvents", func(t *testing.T) {
		newReplica := newDatabase(t)
		testGwWatchConcurrent(t, newReplica(), newReplica())
	})
}

// TestGatewayReopen checks durability across restarts: an instance, a run
// and its events written through one handle (a creation, a write and a
// claim) are read back unchanged through a new handle on the same
// database, twice. open must return a fresh handle on the same database at
// every call, and the function that closes it.
func TestGatewayReopen(t *testing.T, open func(t *testing.T) (gateway.Store, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	in, err := s.CreateInstance(ctx, gwInstance("acme", "i1", "echo"), gwT0)
	if err != nil {
		t.Fatal(err)
	}
	run, evs, err := s.CreateRun(ctx, gateway.RunWrite{Run: gwRun("acme", "r1"), Now: gwT0, Events: gwEvents(2)})
	if err != nil {
		t.Fatal(err)
	}
	run.Status = gateway.StatusWaitingUser
	run, more, err := s.WriteRun(ctx, gateway.RunWrite{Run: run, ExpectVersion: run.Version, Now: gwAt(time.Second), Events: gwEvents(1)})
	if err != nil {
		t.Fatal(err)
	}
	evs = append(evs, more...)
	queued, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: withStatus(gwRun("acme", "r2"), gateway.StatusQueued), Now: gwT0})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimRuns(ctx, "owner-1", gwAt(time.Hour), gwAt(2*time.Hour), 10)
	if err != nil || len(claimed) != 1 || claimed[0].ID != queued.ID {
		t.Fatalf("ClaimRuns = %v, %v", runIDs(claimed), err)
	}
	closeDB()

	for i := range 2 {
		s, closeDB := open(t)
		gotIn, err := s.GetInstance(ctx, "acme", "i1")
		if err != nil {
			t.Fatalf("reopen %d: GetInstance: %v", i, err)
		}
		if d := gocmp.Diff(in, gotIn); d != "" {
			t.Errorf("reopen %d: instance (-want +got):\n%s", i, d)
		}
		for _, want := range []gateway.Run{run, claimed[0]} {
			got, err := s.GetRun(ctx, "acme", want.ID)
			if err != nil {
				t.Fatalf("reopen %d: GetRun %s: %v", i, want.ID, err)
			}
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("reopen %d: run %s (-want +got):\n%s", i, want.ID, d)
			}
		}
		gotEvs, err := s.Events(ctx, "r1", 0, 0)
		if err != nil {
			t.Fatalf("reopen %d: Events: %v", i, err)
		}
		if d := gocmp.Diff(evs, gotEvs); d != "" {
			t.Errorf("reopen %d: events (-want +got):\n%s", i, d)
		}
		closeDB()
	}
}

// gwT0 is the suite's clock: its times carry nanoseconds, which stores
// drop (they keep microseconds), in a zone other than UTC, which reads
// back as UTC.
var gwT0 = time.Date(2026, 6, 1, 9, 0, 0, 123456789, time.UTC).In(gateZone)

func gwAt(d time.Duration) time.Time { return gwT0.Add(d) }

// gwStored is t as a store returns it.
func gwStored(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// gwInstance is an instance with every field set.
func gwInstance(tenant, id, name string) gateway.Instance {
	return gateway.Instance{
		ID: id, TenantID: tenant, Name: name, Hosted: "echo", URL: "https://agents.example.com/" + id, AgentID: "agent-" + id,
		Config:        map[string]any{"model": "m-1", "temperature": 0.25, "tags": []any{"a", "b"}, "nested": map[string]any{"on": true}},
		SecretNames:   []string{"API_KEY", "DB_URL"},
		SealedSecrets: []byte{0, 1, 2, 0xfe, 0xff, '"', '\\'},
		Memory:        true, MemoryBudget: &gateway.MemoryBudget{TokenBudget: 2000, LatencyBudgetMS: 150},
		Scopes:        []string{"memory:read", "gate:write"},
		CustomHeaders: []string{"X-Customer", "*"},
		Published:     true,
		Delivery:      gateway.DeliveryPull, BillingMode: "agent", ToolClass: "scoped",
		Version: 77, CreatedAt: gwAt(-time.Hour), UpdatedAt: gwAt(-time.Minute), // the store's to set
	}
}

// gwRun is a run with every field set: pause and pending input are JSON
// laid out as an agent might send it (spaces, characters encoding/json
// would escape), which the store keeps byte for byte.
func gwRun(tenant, id string) gateway.Run {
	data, _ := a2a.DataPart(map[string]any{"total": 12.5, "items": []any{"a"}})
	text := a2a.TextPart("the answer")
	text.Metadata = map[string]any{"lang": "en"}
	return gateway.Run{
		ID: id, TenantID: tenant, InstanceID: "inst-1", AgentID: "agent-1", ThreadID: "thread-1", ConversationID: "conv-1",
		Caller: gateway.Caller{Subject: "sub-1", UserID: "alice", Service: true},
		Status: gateway.StatusRunning, Reason: "working on it",
		Pause: json.RawMessage(`{"type": "hitl",  "question": "<ok> & \u00e9?"}`),
		Input: "hello, world ✓",
		Attachments: []gateway.Attachment{
			{Type: "text/plain", Data: []byte{0, 'h', 'i', 0xff}, Name: "notes.txt"},
			{Type: "image/png", URL: "https://files.example.com/a.png", Name: "a.png"},
		},
		OutputSchema: map[string]any{"type": "object", "required": []any{"answer"}, "properties": map[string]any{"answer": map[string]any{"type": "string"}}},
		Output:       "42",
		Artifacts: []gateway.Artifact{{
			ArtifactID: "art-1", Name: "report", Description: "the report",
			Parts:         []a2a.Part{text, a2a.RawPart([]byte{1, 2, 3}, "r.bin", "application/octet-stream"), a2a.URLPart("https://x.example/f", "f", "text/plain"), data},
			Metadata:      map[string]any{"k": "v"},
			SkillMetadata: map[string]any{"skill": "summarize", "score": 0.5},
		}},
		TaskID: "task-1", ContextID: "ctx-1", IdempotencyKey: "idem-1", Turn: 2, Attempt: 3,
		// Stepping: a debugger that does not hold the run, which the
		// claim tests need claimable.
		Debug: &gateway.DebugSession{SessionID: "dbg-1", RunID: id, BreakpointState: gateway.BreakpointStepping,
			Action: gateway.DebugStep, Steps: 2, Actor: "sub-1", UpdatedAt: gwAt(time.Second + 123)},
		LastSequence:  99, // the store's to set
		PendingInput:  json.RawMessage(` {"text" : "yes"} `),
		CustomHeaders: []byte{0xde, 0xad, 0, 0xbe, 0xef},
		LLMLimit:      gateway.LLMLimit{MaxTokens: 12_000, MaxCostUSD: 0.125},
		Pull: &gateway.PullState{OfferedTurn: 2, Starts: 1, Progress: delivery.Progress{StatusLine: "reading", Model: "m-1",
			Metrics: map[string]float64{"tokens": 12}, Steps: []delivery.Step{{ID: "s1", Ordinal: 1, Kind: "tool", Status: delivery.StepRunning}}}},
		LeaseOwner: "dispatcher-1", LeaseUntil: gwAt(time.Minute + 7), NotBefore: gwAt(30*time.Second + 9),
		Version: 42, CreatedAt: gwAt(-time.Hour), UpdatedAt: gwAt(-time.Hour), // the store's to set
		StartedAt: gwAt(time.Second + 1), EndedAt: gwAt(2*time.Second + 999),
	}
}

// gwMinimalRun is a run with only what a store requires: every other field
// stays zero through a round trip.
func gwMinimalRun(tenant, id string) gateway.Run {
	return gateway.Run{ID: id, TenantID: tenant, Status: gateway.StatusQueued}
}

func withStatus(r gateway.Run, s gateway.Status) gateway.Run {
	r.Status = s
	if !s.Terminal() {
		r.EndedAt = time.Time{}
	}
	r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", time.Time{}, time.Time{}
	return r
}

// gwEvents are n events of the kinds a run records, the first with a time
// of its own and the others taking the write's.
func gwEvents(n int) []gateway.Event {
	kinds := []gateway.Event{
		{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"RUNNING"}`), At: gwAt(-time.Second + 3)},
		{Type: gateway.EventMessageDelta, Payload: json.RawMessage(`{ "content" : "<b>hi</b> & bye" }`),
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"},
		{Type: "custom.kind", Payload: json.RawMessage(`[1, 2.50, "x"]`)},
		{Type: gateway.EventDone},
	}
	out := make([]gateway.Event, n)
	for i := range out {
		out[i] = kinds[i%len(kinds)]
		if i >= len(kinds) {
			out[i].At = time.Time{}
		}
	}
	return out
}

// wantEvents is what a store returns for evs appended to run after
// sequence last by a write at now.
func wantEvents(run string, last int64, now time.Time, evs []gateway.Event) []gateway.Event {
	out := make([]gateway.Event, len(evs))
	for i, e := range evs {
		if e.At.IsZero() {
			e.At = now
		}
		e.RunID, e.Sequence, e.At = run, last+int64(i)+1, gwStored(e.At)
		if len(e.Payload) == 0 {
			e.Payload = nil
		}
		out[i] = e
	}
	return out
}

// wantRun is what a store returns for r written at now with version and
// last sequence, created at created. The suite's JSON values (Config,
// OutputSchema, metadata) hold only what encoding/json reads back
// unchanged, such as float64 numbers, so they are compared as they are.
func wantRun(r gateway.Run, version, last int64, created, now time.Time) gateway.Run {
	r.Version, r.LastSequence, r.CreatedAt, r.UpdatedAt = version, last, gwStored(created), gwStored(now)
	r.StartedAt, r.EndedAt, r.LeaseUntil, r.NotBefore = gwStored(r.StartedAt), gwStored(r.EndedAt), gwStored(r.LeaseUntil), gwStored(r.NotBefore)
	return r
}

// checkAllSet fails when a field of v (a struct) is zero: the suite's
// fixture must exercise every field, so that a field the wire model gains
// is checked to survive a round trip too.
func checkAllSet(t *testing.T, what string, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Errorf("%s: the suite's fixture leaves %s unset; set it, so that the round trip covers it", what, rv.Type().Field(i).Name)
		}
	}
}

func runIDs(rs []gateway.Run) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

func instanceNames(ins []gateway.Instance) []string {
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Name
	}
	return names
}

func mustCreateRun(t *testing.T, s gateway.Store, w gateway.RunWrite) (gateway.Run, []gateway.Event) {
	t.Helper()
	r, evs, err := s.CreateRun(ctxT(t), w)
	if err != nil {
		t.Fatalf("CreateRun %s: %v", w.Run.ID, err)
	}
	return r, evs
}

func mustEvents(t *testing.T, s gateway.Store, run string, after int64, limit int) []gateway.Event {
	t.Helper()
	evs, err := s.Events(ctxT(t), run, after, limit)
	if err != nil {
		t.Fatalf("Events(%s, %d, %d): %v", run, after, limit, err)
	}
	return evs
}

func testGwInstanceCreate(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	in := gwInstance("acme", "i1", "echo")
	checkAllSet(t, "gwInstance", in)
	got, err := s.CreateInstance(ctx, in, gwAt(time.Second))
	if err != nil {
		t.Fatalf("CreateInstance: %v", err)
	}
	// want shares nothing with in, which a store may return.
	want := gwInstance("acme", "i1", "echo")
	want.Version, want.CreatedAt, want.UpdatedAt = 1, gwStored(gwAt(time.Second)), gwStored(gwAt(time.Second))
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("CreateInstance (-want +got):\n%s", d)
	}
	checkUTC(t, "CreateInstance", got)
	read, err := s.GetInstance(ctx, "acme", "i1")
	if err != nil {
		t.Fatalf("GetInstance: %v", err)
	}
	if d := gocmp.Diff(want, read); d != "" {
		t.Errorf("GetInstance (-want +got):\n%s", d)
	}
	checkUTC(t, "GetInstance", read)

	// A minimal instance keeps its zero fields zero.
	bare := gateway.Instance{ID: "i2", TenantID: "acme", Name: "bare"}
	if _, err := s.CreateInstance(ctx, bare, gwT0); err != nil {
		t.Fatal(err)
	}
	read, err = s.GetInstance(ctx, "acme", "i2")
	bare.Version, bare.CreatedAt, bare.UpdatedAt = 1, gwStored(gwT0), gwStored(gwT0)
	if d := gocmp.Diff(bare, read); err != nil || d != "" {
		t.Errorf("GetInstance of a bare instance = %v (-want +got):\n%s", err, d)
	}

	// The records read are the caller's.
	read, _ = s.GetInstance(ctx, "acme", "i1")
	read.Config["model"], read.SealedSecrets[0], read.Scopes[0] = "changed", 9, "changed"
	read, _ = s.GetInstance(ctx, "acme", "i1")
	if d := gocmp.Diff(want, read); d != "" {
		t.Errorf("changing a read instance changed the stored one (-want +got):\n%s", d)
	}
	// So are those returned.
	got.Config["model"], got.SealedSecrets[0], got.Scopes[0] = "changed", 9, "changed"
	read, _ = s.GetInstance(ctx, "acme", "i1")
	if d := gocmp.Diff(want, read); d != "" {
		t.Errorf("changing a returned instance changed the stored one (-want +got):\n%s", d)
	}

	for _, k := range [][2]string{{"globex", "i1"}, {"", "i1"}, {"acme", "nope"}, {"ACME", "i1"}} {
		if _, err := s.GetInstance(ctx, k[0], k[1]); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("GetInstance(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	for name, bad := range map[string]gateway.Instance{
		"no id":     {TenantID: "acme", Name: "x"},
		"no tenant": {ID: "i9", Name: "x"},
		"no name":   {ID: "i9", TenantID: "acme"},
	} {
		if _, err := s.CreateInstance(ctx, bad, gwT0); err == nil || errors.Is(err, gateway.ErrExists) {
			t.Errorf("CreateInstance with %s = %v, want a refusal", name, err)
		}
	}
}

func testGwInstanceExists(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	first, err := s.CreateInstance(ctx, gwInstance("acme", "i1", "echo"), gwT0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   gateway.Instance
		err  error
	}{
		{"same id", gwInstance("acme", "i1", "other-name"), gateway.ErrExists},
		{"same id in another tenant", gwInstance("globex", "i1", "other-name"), gateway.ErrExists},
		{"same name in the tenant", gwInstance("acme", "i2", "echo"), gateway.ErrExists},
		{"same name in another tenant", gwInstance("globex", "i3", "echo"), nil},
		{"same name in other case", gwInstance("acme", "i4", "ECHO"), nil},
	} {
		_, err := s.CreateInstance(ctx, c.in, gwAt(time.Second))
		if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
			t.Errorf("%s: CreateInstance = %v, want %v", c.name, err, c.err)
		}
	}
	if got, err := s.GetInstance(ctx, "acme", "i1"); err != nil || !gocmp.Equal(first, got) {
		t.Errorf("the first instance after refused duplicates = %+v, %v", got, err)
	}
	if _, err := s.GetInstance(ctx, "acme", "i2"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a refused instance was stored: %v", err)
	}
}

func testGwInstanceList(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	names := []string{"delta", "alpha", "Zulu", "charlie", "bravo", "echo", "alpha-2"}
	for i, n := range names {
		if _, err := s.CreateInstance(ctx, gwInstance("acme", fmt.Sprintf("i%d", i), n), gwT0); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range []string{"aaa", "zzz"} {
		if _, err := s.CreateInstance(ctx, gwInstance("globex", fmt.Sprintf("g%d", i), n), gwT0); err != nil {
			t.Fatal(err)
		}
	}
	sorted := slices.Sorted(slices.Values(names)) // byte order: "Zulu" first
	for _, c := range []struct {
		name string
		f    gateway.InstanceFilter
		want []string
	}{
		{"all", gateway.InstanceFilter{TenantID: "acme"}, sorted},
		{"first page", gateway.InstanceFilter{TenantID: "acme", Limit: 3}, sorted[:3]},
		{"after a name", gateway.InstanceFilter{TenantID: "acme", AfterName: "alpha", Limit: 3}, []string{"alpha-2", "bravo", "charlie"}},
		{"after a name not stored", gateway.InstanceFilter{TenantID: "acme", AfterName: "c"}, []string{"charlie", "delta", "echo"}},
		{"after the last", gateway.InstanceFilter{TenantID: "acme", AfterName: "echo"}, []string{}},
		{"negative limit", gateway.InstanceFilter{TenantID: "acme", Limit: -1}, sorted},
		{"another tenant", gateway.InstanceFilter{TenantID: "globex"}, []string{"aaa", "zzz"}},
		{"unknown tenant", gateway.InstanceFilter{TenantID: "initech"}, []string{}},
	} {
		got, err := s.ListInstances(ctx, c.f)
		if err != nil {
			t.Errorf("%s: ListInstances: %v", c.name, err)
			continue
		}
		if d := gocmp.Diff(c.want, instanceNames(got)); d != "" {
			t.Errorf("%s: names (-want +got):\n%s", c.name, d)
		}
	}
	// Pages walked by AfterName see every instance once.
	var walked []string
	for f := (gateway.InstanceFilter{TenantID: "acme", Limit: 2}); ; {
		page, err := s.ListInstances(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, instanceNames(page)...)
		f.AfterName = page[len(page)-1].Name
	}
	if d := gocmp.Diff(sorted, walked); d != "" {
		t.Errorf("walked pages (-want +got):\n%s", d)
	}
	// Listed instances are whole.
	got, _ := s.ListInstances(ctx, gateway.InstanceFilter{TenantID: "acme", AfterName: "charlie", Limit: 1})
	want, _ := s.GetInstance(ctx, "acme", "i0")
	if len(got) != 1 || !gocmp.Equal(want, got[0]) {
		t.Errorf("listed instance = %+v, want %+v", got, want)
	}
}

func testGwInstanceListLimit(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	const n = gateway.MaxPage + 1
	parallel(t, n, func(i int) error {
		_, err := s.CreateInstance(ctx, gateway.Instance{ID: fmt.Sprintf("i%04d", i), TenantID: "acme", Name: fmt.Sprintf("n%04d", i)}, gwT0)
		return err
	})
	for _, limit := range []int{0, gateway.MaxPage, gateway.MaxPage + 1, 10_000} {
		got, err := s.ListInstances(ctx, gateway.InstanceFilter{TenantID: "acme", Limit: limit})
		if err != nil || len(got) != gateway.MaxPage || got[0].Name != "n0000" || got[gateway.MaxPage-1].Name != "n0499" {
			t.Errorf("Limit %d: %d instances, %v; want the first %d", limit, len(got), err, gateway.MaxPage)
		}
	}
	got, err := s.ListInstances(ctx, gateway.InstanceFilter{TenantID: "acme", AfterName: "n0499"})
	if err != nil || len(got) != 1 || got[0].Name != "n0500" {
		t.Errorf("the second page = %v, %v", instanceNames(got), err)
	}
}

// parallel runs f(0) … f(n-1) from 8 goroutines and fails on any error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				errs[i] = f(i)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func testGwInstanceUpdate(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	created, err := s.CreateInstance(ctx, gwInstance("acme", "i1", "echo"), gwT0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateInstance(ctx, gwInstance("acme", "i2", "taken"), gwT0); err != nil {
		t.Fatal(err)
	}
	next := created
	next.Name, next.Config, next.SealedSecrets, next.MemoryBudget, next.Published = "echo-2", map[string]any{"model": "m-2"}, nil, nil, false
	next.Scopes, next.CreatedAt = []string{"memory:read"}, gwAt(time.Hour) // the creation time is the stored one
	updated, err := s.UpdateInstance(ctx, next, 1, gwAt(time.Minute))
	if err != nil {
		t.Fatalf("UpdateInstance: %v", err)
	}
	want := next
	want.Version, want.CreatedAt, want.UpdatedAt = 2, created.CreatedAt, gwStored(gwAt(time.Minute))
	if d := gocmp.Diff(want, updated); d != "" {
		t.Errorf("UpdateInstance (-want +got):\n%s", d)
	}
	if read, err := s.GetInstance(ctx, "acme", "i1"); err != nil || !gocmp.Equal(want, read) {
		t.Errorf("GetInstance after the update = %v (-want +got):\n%s", err, gocmp.Diff(want, read))
	}

	refused := want
	refused.Config = map[string]any{"model": "refused"}
	for _, c := range []struct {
		name   string
		in     gateway.Instance
		expect int64
		err    error
	}{
		{"stale version", refused, 1, gateway.ErrConflict},
		{"future version", refused, 3, gateway.ErrConflict},
		{"another tenant", func() gateway.Instance { r := refused; r.TenantID = "globex"; return r }(), 2, gateway.ErrNotFound},
		{"unknown id", func() gateway.Instance { r := refused; r.ID = "nope"; return r }(), 2, gateway.ErrNotFound},
		{"a name taken", func() gateway.Instance { r := refused; r.Name = "taken"; return r }(), 2, gateway.ErrExists},
	} {
		if _, err := s.UpdateInstance(ctx, c.in, c.expect, gwAt(time.Hour)); !errors.Is(err, c.err) {
			t.Errorf("%s: UpdateInstance = %v, want %v", c.name, err, c.err)
		}
	}
	for _, expect := range []int64{0, -1} {
		_, err := s.UpdateInstance(ctx, refused, expect, gwAt(time.Hour))
		if err == nil || errors.Is(err, gateway.ErrConflict) || errors.Is(err, gateway.ErrNotFound) || errors.Is(err, gateway.ErrExists) {
			t.Errorf("UpdateInstance expecting version %d = %v, want a refusal of the update itself", expect, err)
		}
	}
	if read, err := s.GetInstance(ctx, "acme", "i1"); err != nil || !gocmp.Equal(want, read) {
		t.Errorf("a refused update changed the instance: %v (-want +got):\n%s", err, gocmp.Diff(want, read))
	}
	// The old name is free again; the new one is not.
	if _, err := s.CreateInstance(ctx, gwInstance("acme", "i3", "echo"), gwT0); err != nil {
		t.Errorf("creating an instance with the name given up: %v", err)
	}
	if _, err := s.CreateInstance(ctx, gwInstance("acme", "i4", "echo-2"), gwT0); !errors.Is(err, gateway.ErrExists) {
		t.Errorf("creating an instance with the name taken by an update = %v, want ErrExists", err)
	}
}

func testGwInstanceDelete(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	if _, err := s.CreateInstance(ctx, gwInstance("acme", "i1", "echo"), gwT0); err != nil {
		t.Fatal(err)
	}
	run := gwMinimalRun("acme", "r1")
	run.InstanceID = "i1"
	created, _ := mustCreateRun(t, s, gateway.RunWrite{Run: run, Now: gwT0})
	for _, k := range [][2]string{{"globex", "i1"}, {"acme", "nope"}} {
		if err := s.DeleteInstance(ctx, k[0], k[1]); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("DeleteInstance(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
	if _, err := s.GetInstance(ctx, "acme", "i1"); err != nil {
		t.Fatalf("a refused delete removed the instance: %v", err)
	}
	if err := s.DeleteInstance(ctx, "acme", "i1"); err != nil {
		t.Fatalf("DeleteInstance: %v", err)
	}
	if _, err := s.GetInstance(ctx, "acme", "i1"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("GetInstance after DeleteInstance = %v, want ErrNotFound", err)
	}
	if err := s.DeleteInstance(ctx, "acme", "i1"); !errors.Is(err, gateway.ErrNotFound) {
		t.Errorf("a second DeleteInstance = %v, want ErrNotFound", err)
	}
	if got, err := s.GetRun(ctx, "acme", "r1"); err != nil || !gocmp.Equal(created, got) {
		t.Errorf("the instance's run after its deletion = %+v, %v", got, err)
	}
	if got, err := s.ListInstances(ctx, gateway.InstanceFilter{TenantID: "acme"}); err != nil || len(got) != 0 {
		t.Errorf("ListInstances after the deletion = %v, %v", instanceNames(got), err)
	}
	// The id and the name are free again.
	if _, err := s.CreateInstance(ctx, gwInstance("acme", "i1", "echo"), gwT0); err != nil {
		t.Errorf("creating the deleted instance again: %v", err)
	}
}

func testGwRunCreate(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	in := gwRun("acme", "r1")
	evs := gwEvents(3)
	now := gwAt(time.Second)
	got, gotEvs, err := s.CreateRun(ctx, gateway.RunWrite{Run: in, Events: evs, Now: now})
	if err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	// want and wantEvs share nothing with what was written, which a
	// store may return.
	want := wantRun(gwRun("acme", "r1"), 1, 3, now, now)
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("CreateRun (-want +got):\n%s", d)
	}
	checkUTC(t, "CreateRun", got)
	wantEvs := wantEvents("r1", 0, now, gwEvents(3))
	if d := gocmp.Diff(wantEvs, gotEvs); d != "" {
		t.Errorf("CreateRun's events (-want +got):\n%s", d)
	}
	for _, tenant := range []string{"acme", ""} {
		read, err := s.GetRun(ctx, tenant, "r1")
		if err != nil {
			t.Fatalf("GetRun(%q): %v", tenant, err)
		}
		if d := gocmp.Diff(want, read); d != "" {
			t.Errorf("GetRun(%q) (-want +got):\n%s", tenant, d)
		}
		checkUTC(t, "GetRun", read)
	}
	if d := gocmp.Diff(wantEvs, mustEvents(t, s, "r1", 0, 0)); d != "" {
		t.Errorf("Events (-want +got):\n%s", d)
	}
	for _, e := range mustEvents(t, s, "r1", 0, 0) {
		checkUTC(t, "Events", e)
	}
	for _, k := range [][2]string{{"globex", "r1"}, {"ACME", "r1"}, {"acme", "nope"}, {"", "nope"}} {
		if _, err := s.GetRun(ctx, k[0], k[1]); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("GetRun(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}

	// A run without events starts at sequence 0; Now defaults to the
	// present.
	before := time.Now().Add(-time.Second)
	bare, evs0, err := s.CreateRun(ctx, gateway.RunWrite{Run: gwMinimalRun("acme", "r2")})
	if err != nil || len(evs0) != 0 || bare.LastSequence != 0 || bare.Version != 1 {
		t.Fatalf("CreateRun without events = %+v, %v, %v", bare, evs0, err)
	}
	if bare.CreatedAt.Before(before) || bare.CreatedAt.After(time.Now().Add(time.Second)) || !bare.UpdatedAt.Equal(bare.CreatedAt) {
		t.Errorf("CreateRun without Now: created %v, updated %v; want the present", bare.CreatedAt, bare.UpdatedAt)
	}

	// The records read are the caller's, and so are those returned.
	for _, tenant := range []string{"acme", ""} {
		read, _ := s.GetRun(ctx, tenant, "r1")
		read.Artifacts[0].Parts[1].Raw[0], read.Pause[0], read.OutputSchema["type"], read.CustomHeaders[0] = 9, 'X', "changed", 0
		readEvs := mustEvents(t, s, "r1", 0, 0)
		readEvs[1].Payload[0] = 'X'
	}
	got.Artifacts[0].Parts[1].Raw[0], got.Pause[0], got.OutputSchema["type"] = 9, 'X', "changed"
	gotEvs[1].Payload[0] = 'X'
	if read, _ := s.GetRun(ctx, "acme", "r1"); !gocmp.Equal(want, read) {
		t.Errorf("changing a returned run changed the stored one (-want +got):\n%s", gocmp.Diff(want, read))
	}
	if d := gocmp.Diff(wantEvs, mustEvents(t, s, "r1", 0, 0)); d != "" {
		t.Errorf("changing returned events changed the stored ones (-want +got):\n%s", d)
	}
}

func testGwRunCreateRefused(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	first, firstEvs := mustCreateRun(t, s, gateway.RunWrite{Run: gwRun("acme", "r1"), Events: gwEvents(2), Now: gwT0})
	for _, c := range []struct {
		name string
		w    gateway.RunWrite
		err  error // nil: any error but the store's sentinels
	}{
		{"an expected version", gateway.RunWrite{Run: gwRun("acme", "r2"), ExpectVersion: 1}, nil},
		{"no id", gateway.RunWrite{Run: gwRun("acme", "")}, nil},
		{"no tenant", gateway.RunWrite{Run: gwRun("", "r2")}, nil},
		{"no status", gateway.RunWrite{Run: withStatus(gwRun("acme", "r2"), "")}, nil},
		{"an unknown status", gateway.RunWrite{Run: withStatus(gwRun("acme", "r2"), "DONE")}, nil},
		{"an event without a type", gateway.RunWrite{Run: gwRun("acme", "r2"), Events: []gateway.Event{{Payload: json.RawMessage(`{}`)}}}, nil},
		{"an event payload that is not JSON", gateway.RunWrite{Run: gwRun("acme", "r2"),
			Events: []gateway.Event{{Type: "status", Payload: json.RawMessage(`{}`)}, {Type: "status", Payload: json.RawMessage(`{"a":`)}}}, nil},
		{"the id of a run", gateway.RunWrite{Run: gwRun("acme", "r1"), Events: gwEvents(3)}, gateway.ErrExists},
		{"the id of another tenant's run", gateway.RunWrite{Run: gwRun("globex", "r1"), Events: gwEvents(3)}, gateway.ErrExists},
	} {
		_, _, err := s.CreateRun(ctx, c.w)
		switch {
		case err == nil:
			t.Errorf("%s: CreateRun succeeded", c.name)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: CreateRun = %v, want %v", c.name, err, c.err)
		case c.err == nil && (errors.Is(err, gateway.ErrExists) || errors.Is(err, gateway.ErrConflict) || errors.Is(err, gateway.ErrNotFound)):
			t.Errorf("%s: CreateRun = %v, want a refusal of the write itself", c.name, err)
		}
	}
	for _, id := range []string{"r2", ""} {
		if _, err := s.GetRun(ctx, "", id); !errors.Is(err, gateway.ErrNotFound) {
			t.Errorf("a refused run %q was stored: %v", id, err)
		}
		if evs := mustEvents(t, s, id, 0, 0); len(evs) != 0 {
			t.Errorf("a refused run %q has events: %v", id, evs)
		}
	}
	if got, _ := s.GetRun(ctx, "", "r1"); !gocmp.Equal(first, got) {
		t.Errorf("a refused duplicate changed the run (-want +got):\n%s", gocmp.Diff(first, got))
	}
	if d := gocmp.Diff(firstEvs, mustEvents(t, s, "r1", 0, 0)); d != "" {
		t.Errorf("a refused duplicate changed the events (-want +got):\n%s", d)
	}
}

func testGwRunRoundTrip(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	full := gwRun("acme", "full")
	checkAllSet(t, "gwRun", full)
	created, _ := mustCreateRun(t, s, gateway.RunWrite{Run: full, Now: gwT0})
	if d := gocmp.Diff(wantRun(full, 1, 0, gwT0, gwT0), created); d != "" {
		t.Errorf("CreateRun (-want +got):\n%s", d)
	}
	// Every field written again, to other values or none.
	next := gateway.Run{
		ID: "full", TenantID: "acme", InstanceID: "inst-2", Status: gateway.StatusCompleted, Reason: "done",
		Caller: gateway.Caller{Subject: "admin"}, Input: "", Output: "the end",
		Pause: json.RawMessage(`null`), Artifacts: []gateway.Artifact{{ArtifactID: "a2", Parts: []a2a.Part{a2a.TextPart("")}}},
		Turn: 3, EndedAt: gwAt(time.Hour),
	}
	written, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: 1, Now: gwAt(time.Minute)})
	if err != nil {
		t.Fatalf("WriteRun: %v", err)
	}
	want := wantRun(next, 2, 0, gwT0, gwAt(time.Minute))
	if d := gocmp.Diff(want, written); d != "" {
		t.Errorf("WriteRun (-want +got):\n%s", d)
	}
	if read, err := s.GetRun(ctx, "acme", "full"); err != nil || !gocmp.Equal(want, read) {
		t.Errorf("GetRun after WriteRun: %v (-want +got):\n%s", err, gocmp.Diff(want, read))
	}

	// Zero stays zero: times, slices, maps, raw JSON.
	bare := gwMinimalRun("acme", "bare")
	created, _ = mustCreateRun(t, s, gateway.RunWrite{Run: bare, Now: gwT0})
	want = wantRun(bare, 1, 0, gwT0, gwT0)
	if d := gocmp.Diff(want, created); d != "" {
		t.Errorf("a bare run (-want +got):\n%s", d)
	}
	read, err := s.GetRun(ctx, "acme", "bare")
	if d := gocmp.Diff(want, read); err != nil || d != "" {
		t.Errorf("GetRun of a bare run: %v (-want +got):\n%s", err, d)
	}
	if !read.StartedAt.IsZero() || !read.EndedAt.IsZero() || !read.LeaseUntil.IsZero() || !read.NotBefore.IsZero() {
		t.Errorf("zero times of a bare run read back as %v %v %v %v", read.StartedAt, read.EndedAt, read.LeaseUntil, read.NotBefore)
	}

	// Every status round-trips.
	for i, st := range []gateway.Status{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusWaitingUser,
		gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusCancelled} {
		r, _ := mustCreateRun(t, s, gateway.RunWrite{Run: withStatus(gwRun("acme", fmt.Sprintf("st%d", i)), st), Now: gwT0})
		if read, err := s.GetRun(ctx, "acme", r.ID); err != nil || read.Status != st {
			t.Errorf("status %s read back as %s, %v", st, read.Status, err)
		}
	}
}

func testGwRunWrite(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	created, firstEvs := mustCreateRun(t, s, gateway.RunWrite{Run: gwRun("acme", "r1"), Events: gwEvents(3), Now: gwT0})

	next := created
	next.Status, next.Reason = gateway.StatusWaitingUser, "asks"
	next.Pause = json.RawMessage(`{"type":"hitl" , "q":"?"}`)
	// What the store sets itself is ignored.
	next.CreatedAt, next.LastSequence, next.Version, next.UpdatedAt = gwAt(time.Hour), 1000, 1000, gwAt(time.Hour)
	evs := gwEvents(2)
	now := gwAt(time.Minute)
	written, gotEvs, err := s.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: 1, Events: evs, Now: now})
	if err != nil {
		t.Fatalf("WriteRun: %v", err)
	}
	want := wantRun(next, 2, 5, gwT0, now)
	if d := gocmp.Diff(want, written); d != "" {
		t.Errorf("WriteRun (-want +got):\n%s", d)
	}
	wantEvs := wantEvents("r1", 3, now, evs)
	if d := gocmp.Diff(wantEvs, gotEvs); d != "" {
		t.Errorf("WriteRun's events (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(append(firstEvs, wantEvs...), mustEvents(t, s, "r1", 0, 0)); d != "" {
		t.Errorf("Events after WriteRun (-want +got):\n%s", d)
	}

	// A write without events keeps the sequence.
	next = written
	next.Status = gateway.StatusRunning
	written, gotEvs, err = s.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: 2, Now: gwAt(2 * time.Minute)})
	if err != nil || len(gotEvs) != 0 || written.LastSequence != 5 || written.Version != 3 {
		t.Fatalf("WriteRun without events = version %d, last %d, %v, %v", written.Version, written.LastSequence, gotEvs, err)
	}
	if d := gocmp.Diff(wantRun(next, 3, 5, gwT0, gwAt(2*time.Minute)), written); d != "" {
		t.Errorf("WriteRun without events (-want +got):\n%s", d)
	}
	// Then the next events follow on.
	written, gotEvs, err = s.WriteRun(ctx, gateway.RunWrite{Run: written, ExpectVersion: 3, Events: gwEvents(1), Now: gwAt(3 * time.Minute)})
	if err != nil || len(gotEvs) != 1 || gotEvs[0].Sequence != 6 || written.LastSequence != 6 {
		t.Fatalf("WriteRun after one without events = last %d, %v, %v", written.LastSequence, gotEvs, err)
	}
	if evs := mustEvents(t, s, "r1", 0, 0); len(evs) != 6 || evs[5].Sequence != 6 {
		t.Errorf("Events = %d, want 6 numbered 1…6", len(evs))
	}
}

func testGwRunWriteRefused(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	created, _ := mustCreateRun(t, s, gateway.RunWrite{Run: gwRun("acme", "r1"), Events: gwEvents(2), Now: gwT0})
	current, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: created, ExpectVersion: 1, Events: gwEvents(1), Now: gwAt(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	evsBefore := mustEvents(t, s, "r1", 0, 0)
	changed := current
	changed.Status, changed.Output = gateway.StatusFailed, "refused"
	for _, c := range []struct {
		name string
		w    gateway.RunWrite
		err  error // nil: any error but the store's sentinels
	}{
		{"a stale version", gateway.RunWrite{Run: changed, ExpectVersion: 1, Events: gwEvents(2)}, gateway.ErrConflict},
		{"a future version", gateway.RunWrite{Run: changed, ExpectVersion: 3, Events: gwEvents(2)}, gateway.ErrConflict},
		{"another tenant", gateway.RunWrite{Run: func() gateway.Run { r := changed; r.TenantID = "globex"; return r }(), ExpectVersion: 2, Events: gwEvents(1)}, gateway.ErrNotFound},
		{"an unknown run", gateway.RunWrite{Run: func() gateway.Run { r := changed; r.ID = "nope"; return r }(), ExpectVersion: 2, Events: gwEvents(1)}, gateway.ErrNotFound},
		{"no expected version", gateway.RunWrite{Run: changed, Events: gwEvents(1)}, nil},
		{"an unknown status", gateway.RunWrite{Run: withStatus(changed, "PAUSED"), ExpectVersion: 2}, nil},
		{"an event payload that is not JSON", gateway.RunWrite{Run: changed, ExpectVersion: 2,
			Events: []gateway.Event{{Type: "status", Payload: json.RawMessage(`{}`)}, {Type: "x", Payload: json.RawMessage(`nope`)}}}, nil},
		{"an event without a type", gateway.RunWrite{Run: changed, ExpectVersion: 2, Events: []gateway.Event{{}}}, nil},
	} {
		_, _, err := s.WriteRun(ctx, c.w)
		switch {
		case err == nil:
			t.Errorf("%s: WriteRun succeeded", c.name)
		case c.err != nil && !errors.Is(err, c.err):
			t.Errorf("%s: WriteRun = %v, want %v", c.name, err, c.err)
		case c.err == nil && (errors.Is(err, gateway.ErrExists) || errors.Is(err, gateway.ErrConflict) || errors.Is(err, gateway.ErrNotFound)):
			t.Errorf("%s: WriteRun = %v, want a refusal of the write itself", c.name, err)
		}
	}
	if got, err := s.GetRun(ctx, "acme", "r1"); err != nil || !gocmp.Equal(current, got) {
		t.Errorf("refused writes changed the run: %v (-want +got):\n%s", err, gocmp.Diff(current, got))
	}
	if d := gocmp.Diff(evsBefore, mustEvents(t, s, "r1", 0, 0)); d != "" {
		t.Errorf("refused writes appended events (-want +got):\n%s", d)
	}
	if evs := mustEvents(t, s, "nope", 0, 0); len(evs) != 0 {
		t.Errorf("a refused write to an unknown run left events: %v", evs)
	}
}

// Of many writers of one version, exactly one wins, and only its events
// are appended.
func testGwRunWriteOnce(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	const rounds, writers = 8, 12
	cur, _ := mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r1"), Now: gwT0})
	// Another run written at the same time neither blocks nor is blocked.
	other, _ := mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r2"), Now: gwT0})
	for round := range rounds {
		start := make(chan struct{})
		type result struct {
			run gateway.Run
			evs []gateway.Event
			err error
		}
		results := make([]result, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				next := cur
				next.Output = fmt.Sprintf("writer %d", w)
				ev := gateway.Event{Type: "status", Payload: json.RawMessage(fmt.Sprintf(`{"writer":%d}`, w))}
				<-start
				r, evs, err := s.WriteRun(ctx, gateway.RunWrite{Run: next, ExpectVersion: cur.Version, Events: []gateway.Event{ev, ev}, Now: gwAt(time.Duration(round) * time.Second)})
				results[w] = result{r, evs, err}
			})
		}
		wg.Go(func() {
			<-start
			var err error
			if other, _, err = s.WriteRun(ctx, gateway.RunWrite{Run: other, ExpectVersion: other.Version, Events: gwEvents(1), Now: gwT0}); err != nil {
				t.Errorf("round %d: the other run's write: %v", round, err)
			}
		})
		close(start)
		wg.Wait()
		var won []result
		for w, r := range results {
			switch {
			case r.err == nil:
				won = append(won, r)
			case !errors.Is(r.err, gateway.ErrConflict):
				t.Fatalf("round %d writer %d: %v, want success or ErrConflict", round, w, r.err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d writes won, want exactly 1", round, len(won))
		}
		win := won[0]
		if win.run.Version != cur.Version+1 || win.run.LastSequence != cur.LastSequence+2 {
			t.Fatalf("round %d: the winner at version %d, last %d; want %d, %d", round, win.run.Version, win.run.LastSequence, cur.Version+1, cur.LastSequence+2)
		}
		got := mustEvents(t, s, "r1", cur.LastSequence, 0)
		if d := gocmp.Diff(win.evs, got); d != "" {
			t.Fatalf("round %d: events after the round (-winner's +stored):\n%s", round, d)
		}
		if read, err := s.GetRun(ctx, "acme", "r1"); err != nil || read.Output != win.run.Output {
			t.Fatalf("round %d: stored output %q, %v; the winner wrote %q", round, read.Output, err, win.run.Output)
		}
		cur = win.run
	}
	if other.Version != rounds+1 || other.LastSequence != rounds {
		t.Errorf("the other run at version %d, last %d; want %d, %d", other.Version, other.LastSequence, rounds+1, rounds)
	}
}

// Writers that retry on conflict append every event once, numbered
// without a gap.
func testGwRunWriteNoGap(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	const writers, each = 6, 10
	mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r1"), Events: gwEvents(1), Now: gwT0})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; i < each; {
				cur, err := s.GetRun(ctx, "acme", "r1")
				if err != nil {
					t.Error(err)
					return
				}
				ev := gateway.Event{Type: "tool.call", Payload: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}
				_, _, err = s.WriteRun(ctx, gateway.RunWrite{Run: cur, ExpectVersion: cur.Version, Events: []gateway.Event{ev}, Now: gwT0})
				switch {
				case err == nil:
					i++
				case !errors.Is(err, gateway.ErrConflict):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs := mustEvents(t, s, "r1", 0, 0)
	seen := map[string]bool{}
	for i, e := range evs {
		if e.Sequence != int64(i)+1 {
			t.Fatalf("event %d has sequence %d", i, e.Sequence)
		}
		if seen[string(e.Payload)] {
			t.Errorf("event %s recorded twice", e.Payload)
		}
		seen[string(e.Payload)] = true
	}
	if len(evs) != 1+writers*each {
		t.Errorf("%d events, want %d", len(evs), 1+writers*each)
	}
	if r, err := s.GetRun(ctx, "acme", "r1"); err != nil || r.LastSequence != int64(len(evs)) || r.Version != writers*each+1 {
		t.Errorf("the run at version %d, last %d, %v; want %d, %d", r.Version, r.LastSequence, err, writers*each+1, len(evs))
	}
}

func testGwEvents(t *testing.T, s gateway.Store) {
	const n = gateway.MaxPage + 100
	evs := make([]gateway.Event, n)
	for i := range evs {
		evs[i] = gateway.Event{Type: gateway.EventMessageDelta, Payload: json.RawMessage(fmt.Sprintf(`{"content": "chunk %d"}`, i+1))}
	}
	evs[7].Payload = nil // a payload may be empty
	_, stored := mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r1"), Events: evs, Now: gwT0})
	mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r2"), Events: gwEvents(3), Now: gwT0})
	if len(stored) != n || stored[n-1].Sequence != n {
		t.Fatalf("CreateRun stored %d events", len(stored))
	}
	for _, c := range []struct {
		name         string
		after        int64
		limit        int
		first, count int64
	}{
		{"a page", 0, 100, 1, 100},
		{"the next page", 100, 100, 101, 100},
		{"the default limit", 0, 0, 1, gateway.MaxPage},
		{"a negative limit", 0, -5, 1, gateway.MaxPage},
		{"a limit past the maximum", 0, 10_000, 1, gateway.MaxPage},
		{"the tail", n - 3, 100, n - 2, 3},
		{"after the last", n, 100, 0, 0},
		{"after past the last", n + 50, 100, 0, 0},
		{"a negative after", -7, 2, 1, 2},
		{"one", 7, 1, 8, 1},
	} {
		got := mustEvents(t, s, "r1", c.after, c.limit)
		var want []gateway.Event
		if c.count > 0 {
			want = stored[c.first-1 : c.first-1+c.count]
		}
		if d := gocmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: Events(%d, %d) (-want +got):\n%s", c.name, c.after, c.limit, d)
		}
	}
	// Payloads are kept byte for byte; an empty one reads back empty.
	got := mustEvents(t, s, "r1", 0, 10)
	if string(got[0].Payload) != `{"content": "chunk 1"}` || got[7].Payload != nil {
		t.Errorf("payloads read back as %q and %q", got[0].Payload, got[7].Payload)
	}
	if got := mustEvents(t, s, "nope", 0, 0); len(got) != 0 {
		t.Errorf("Events of an unknown run = %v, want none", got)
	}
	if got := mustEvents(t, s, "r2", 0, 0); len(got) != 3 || got[0].RunID != "r2" {
		t.Errorf("Events of r2 = %v", got)
	}
}

// gwListFixture creates runs across tenants, users, instances and statuses,
// several sharing a creation time, and returns them as stored.
func gwListFixture(t *testing.T, s gateway.Store) []gateway.Run {
	tenants := []string{"acme", "globex"}
	users := []string{"alice", "bob", ""}
	instances := []string{"i1", "i2"}
	statuses := []gateway.Status{gateway.StatusQueued, gateway.StatusRunning, gateway.StatusWaitingUser,
		gateway.StatusCompleted, gateway.StatusFailed, gateway.StatusCancelled}
	var runs []gateway.Run
	for i := range 30 {
		r := gwMinimalRun(tenants[i%2], fmt.Sprintf("run-%02d", (i*7)%30))
		r.Caller.UserID, r.InstanceID, r.Status = users[i%3], instances[(i/2)%2], statuses[i%len(statuses)]
		r.ThreadID = []string{"", "th-1", "th-2", "th-1", ""}[i%5]
		// Creation times repeat: 0, 0, 0, 1s, 1s, 1s, …
		created, _ := mustCreateRun(t, s, gateway.RunWrite{Run: r, Now: gwAt(time.Duration(i/3) * time.Second)})
		runs = append(runs, created)
	}
	return runs
}

// newestFirst sorts runs as ListRuns returns them.
func newestFirst(runs []gateway.Run) {
	slices.SortFunc(runs, func(a, b gateway.Run) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}

func testGwListRuns(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	all := gwListFixture(t, s)
	newestFirst(all)
	pick := func(keep func(r gateway.Run) bool) []string {
		ids := []string{}
		for _, r := range all {
			if keep(r) {
				ids = append(ids, r.ID)
			}
		}
		return ids
	}
	mid := all[10] // a run whose creation time others share
	for _, c := range []struct {
		name string
		f    gateway.RunFilter
		want []string
	}{
		{"every tenant", gateway.RunFilter{}, pick(func(gateway.Run) bool { return true })},
		{"a tenant", gateway.RunFilter{TenantID: "acme"}, pick(func(r gateway.Run) bool { return r.TenantID == "acme" })},
		{"a user", gateway.RunFilter{TenantID: "acme", UserID: "alice"}, pick(func(r gateway.Run) bool { return r.TenantID == "acme" && r.Caller.UserID == "alice" })},
		{"a user in every tenant", gateway.RunFilter{UserID: "bob"}, pick(func(r gateway.Run) bool { return r.Caller.UserID == "bob" })},
		{"an instance", gateway.RunFilter{TenantID: "globex", InstanceID: "i2"}, pick(func(r gateway.Run) bool { return r.TenantID == "globex" && r.InstanceID == "i2" })},
		{"a thread", gateway.RunFilter{TenantID: "acme", ThreadID: "th-1"}, pick(func(r gateway.Run) bool { return r.TenantID == "acme" && r.ThreadID == "th-1" })},
		{"a thread in every tenant", gateway.RunFilter{ThreadID: "th-2"}, pick(func(r gateway.Run) bool { return r.ThreadID == "th-2" })},
		{"a thread, a page on", gateway.RunFilter{TenantID: "globex", ThreadID: "th-1", AfterCreated: mid.CreatedAt, AfterID: mid.ID},
			pick(func(r gateway.Run) bool {
				return r.TenantID == "globex" && r.ThreadID == "th-1" &&
					(r.CreatedAt.Before(mid.CreatedAt) || (r.CreatedAt.Equal(mid.CreatedAt) && r.ID < mid.ID))
			})},
		{"an unknown thread", gateway.RunFilter{TenantID: "acme", ThreadID: "th-9"}, []string{}},
		{"statuses", gateway.RunFilter{Statuses: []gateway.Status{gateway.StatusQueued, gateway.StatusFailed}},
			pick(func(r gateway.Run) bool { return r.Status == gateway.StatusQueued || r.Status == gateway.StatusFailed })},
		{"everything at once", gateway.RunFilter{TenantID: "acme", UserID: "alice", InstanceID: "i2", ThreadID: "th-1", Statuses: []gateway.Status{gateway.StatusQueued, gateway.StatusWaitingUser}},
			pick(func(r gateway.Run) bool {
				return r.TenantID == "acme" && r.Caller.UserID == "alice" && r.InstanceID == "i2" && r.ThreadID == "th-1" &&
					(r.Status == gateway.StatusQueued || r.Status == gateway.StatusWaitingUser)
			})},
		{"after a run", gateway.RunFilter{AfterCreated: mid.CreatedAt, AfterID: mid.ID}, pick(func(r gateway.Run) bool {
			return r.CreatedAt.Before(mid.CreatedAt) || (r.CreatedAt.Equal(mid.CreatedAt) && r.ID < mid.ID)
		})},
		{"after a time", gateway.RunFilter{AfterCreated: mid.CreatedAt}, pick(func(r gateway.Run) bool { return r.CreatedAt.Before(mid.CreatedAt) })},
		{"a limit", gateway.RunFilter{TenantID: "acme", Limit: 4}, pick(func(r gateway.Run) bool { return r.TenantID == "acme" })[:4]},
		{"an unknown tenant", gateway.RunFilter{TenantID: "initech"}, []string{}},
		{"an unknown user", gateway.RunFilter{UserID: "carol"}, []string{}},
	} {
		if len(c.want) == 0 && !strings.HasPrefix(c.name, "an unknown") {
			t.Fatalf("%s: the fixture has no run the filter selects; the case checks nothing", c.name)
		}
		got, err := s.ListRuns(ctx, c.f)
		if err != nil {
			t.Errorf("%s: ListRuns: %v", c.name, err)
			continue
		}
		if d := gocmp.Diff(c.want, runIDs(got)); d != "" {
			t.Errorf("%s: run ids (-want +got):\n%s", c.name, d)
		}
	}
	// Listed runs are whole.
	got, err := s.ListRuns(ctx, gateway.RunFilter{Limit: 1})
	if err != nil || len(got) != 1 || !gocmp.Equal(all[0], got[0]) {
		t.Errorf("the listed run = %v (-want +got):\n%s", err, gocmp.Diff(all[:1], got))
	}
	// Pages of every size see every run once, in order, past runs that
	// share a creation time.
	for _, size := range []int{1, 2, 4, 7} {
		var walked []string
		f := gateway.RunFilter{Limit: size}
		for {
			page, err := s.ListRuns(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			walked = append(walked, runIDs(page)...)
			last := page[len(page)-1]
			f.AfterCreated, f.AfterID = last.CreatedAt, last.ID
		}
		if d := gocmp.Diff(runIDs(all), walked); d != "" {
			t.Errorf("pages of %d (-want +got):\n%s", size, d)
		}
	}
}

func testGwListRunsLimit(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	const n = gateway.MaxPage + 1
	parallel(t, n, func(i int) error {
		_, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: gwMinimalRun("acme", fmt.Sprintf("r%04d", i)), Now: gwT0})
		return err
	})
	for _, limit := range []int{0, gateway.MaxPage, gateway.MaxPage + 1, 10_000} {
		got, err := s.ListRuns(ctx, gateway.RunFilter{TenantID: "acme", Limit: limit})
		if err != nil || len(got) != gateway.MaxPage || got[0].ID != "r0500" || got[gateway.MaxPage-1].ID != "r0001" {
			t.Errorf("Limit %d: %d runs, %v; want the newest %d", limit, len(got), err, gateway.MaxPage)
		}
	}
}

func testGwClaimRuns(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	now := gwAt(time.Hour)
	until := now.Add(30 * time.Second)
	type fixture struct {
		id         string
		status     gateway.Status
		leaseUntil time.Time
		notBefore  time.Time
		claimable  bool
		// debug is the state of the run's debugger ("": none).
		debug gateway.BreakpointState
	}
	fixtures := []fixture{
		{"queued", gateway.StatusQueued, time.Time{}, time.Time{}, true, ""},
		{"running-lapsed", gateway.StatusRunning, now.Add(-time.Second), time.Time{}, true, ""},
		{"running-lapsing-now", gateway.StatusRunning, now, time.Time{}, true, ""},
		{"running-leased", gateway.StatusRunning, now.Add(time.Microsecond), time.Time{}, false, ""},
		{"queued-leased", gateway.StatusQueued, now.Add(time.Minute), time.Time{}, false, ""},
		{"queued-backoff", gateway.StatusQueued, time.Time{}, now.Add(time.Hour), false, ""},
		{"queued-backoff-over", gateway.StatusQueued, now.Add(-time.Minute), now.Add(-time.Second), true, ""},
		{"queued-backoff-ends-now", gateway.StatusQueued, time.Time{}, now, true, ""},
		{"queued-paused", gateway.StatusQueued, time.Time{}, time.Time{}, false, gateway.BreakpointPaused},
		{"running-lapsed-paused", gateway.StatusRunning, now.Add(-time.Second), time.Time{}, false, gateway.BreakpointPaused},
		{"queued-stepping", gateway.StatusQueued, time.Time{}, time.Time{}, true, gateway.BreakpointStepping},
		{"running-lapsed-resumed", gateway.StatusRunning, now.Add(-time.Second), time.Time{}, true, gateway.BreakpointRunning},
		{"waiting", gateway.StatusWaitingUser, time.Time{}, time.Time{}, false, ""},
		{"completed", gateway.StatusCompleted, time.Time{}, time.Time{}, false, ""},
		{"failed", gateway.StatusFailed, now.Add(-time.Hour), time.Time{}, false, ""},
		{"cancelled", gateway.StatusCancelled, time.Time{}, time.Time{}, false, gateway.BreakpointAborted},
	}
	stored := map[string]gateway.Run{}
	var want []string
	// Created last to first, the later a second older than the one
	// before: oldest first is the fixture's order, not the creations'.
	for i, f := range slices.Backward(fixtures) {
		r := withStatus(gwRun("acme", f.id), f.status)
		r.LeaseOwner, r.LeaseUntil, r.NotBefore = "", f.leaseUntil, f.notBefore
		r.Debug = nil
		if f.debug != "" {
			r.Debug = &gateway.DebugSession{SessionID: "s-" + f.id, RunID: f.id, BreakpointState: f.debug, UpdatedAt: gwT0}
			if f.debug == gateway.BreakpointStepping {
				r.Debug.Steps = 1
			}
		}
		if !f.leaseUntil.IsZero() {
			r.LeaseOwner = "old-owner"
		}
		created, _ := mustCreateRun(t, s, gateway.RunWrite{Run: r, Now: gwAt(time.Duration(i) * time.Second)})
		stored[f.id] = created
	}
	for _, f := range fixtures {
		if f.claimable {
			want = append(want, f.id)
		}
	}

	// A limit takes the oldest.
	first, err := s.ClaimRuns(ctx, "owner-a", now, until, 2)
	if err != nil {
		t.Fatalf("ClaimRuns: %v", err)
	}
	if d := gocmp.Diff(want[:2], runIDs(first)); d != "" {
		t.Errorf("ClaimRuns with limit 2 (-want +got):\n%s", d)
	}
	rest, err := s.ClaimRuns(ctx, "owner-a", now, until, 0)
	if err != nil {
		t.Fatalf("ClaimRuns: %v", err)
	}
	if d := gocmp.Diff(want[2:], runIDs(rest)); d != "" {
		t.Errorf("ClaimRuns of the rest (-want +got):\n%s", d)
	}
	for _, got := range append(first, rest...) {
		w := stored[got.ID]
		w.LeaseOwner, w.LeaseUntil, w.Version = "owner-a", gwStored(until), w.Version+1
		w.UpdatedAt = gwStored(now)
		if d := gocmp.Diff(w, got); d != "" {
			t.Errorf("claimed %s (-want +got):\n%s", got.ID, d)
		}
		if read, err := s.GetRun(ctx, "acme", got.ID); err != nil || !gocmp.Equal(w, read) {
			t.Errorf("claimed %s read back: %v (-want +got):\n%s", got.ID, err, gocmp.Diff(w, read))
		}
	}
	for _, f := range fixtures {
		if read, err := s.GetRun(ctx, "acme", f.id); !f.claimable && (err != nil || !gocmp.Equal(stored[f.id], read)) {
			t.Errorf("unclaimed %s changed: %v (-want +got):\n%s", f.id, err, gocmp.Diff(stored[f.id], read))
		}
	}
	// Leased now: nobody claims them until the lease lapses.
	if again, err := s.ClaimRuns(ctx, "owner-b", now, until, 0); err != nil || len(again) != 0 {
		t.Errorf("ClaimRuns while leased = %v, %v; want none", runIDs(again), err)
	}
	// A microsecond before the claims lapse, only the run leased to a
	// microsecond after now is free.
	if again, err := s.ClaimRuns(ctx, "owner-b", until.Add(-time.Microsecond), until.Add(time.Minute), 0); err != nil ||
		!slices.Equal(runIDs(again), []string{"running-leased"}) {
		t.Errorf("ClaimRuns a microsecond before the lease lapses = %v, %v; want running-leased", runIDs(again), err)
	}
	// The claim moved the version on: a write of the version claimed
	// conflicts.
	before := stored[want[0]]
	if _, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: before, ExpectVersion: before.Version, Events: gwEvents(1)}); !errors.Is(err, gateway.ErrConflict) {
		t.Errorf("a write of the version before the claim = %v, want ErrConflict", err)
	}
	// Once the leases lapse another owner takes every run over.
	later := until
	taken, err := s.ClaimRuns(ctx, "owner-b", later, later.Add(time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, runIDs(taken)); d != "" {
		t.Errorf("ClaimRuns once the leases lapsed (-want +got):\n%s", d)
	}
	for _, r := range taken {
		if r.LeaseOwner != "owner-b" || !r.LeaseUntil.Equal(gwStored(later.Add(time.Minute))) {
			t.Errorf("%s taken over with lease %s until %v", r.ID, r.LeaseOwner, r.LeaseUntil)
		}
	}
	// A run that leaves QUEUED and RUNNING is never claimed again; once
	// every lease and backoff is over, every other QUEUED or RUNNING run
	// is.
	r := taken[0]
	r.Status = gateway.StatusWaitingUser
	if _, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: r, ExpectVersion: r.Version, Now: later}); err != nil {
		t.Fatal(err)
	}
	far := later.Add(24 * time.Hour)
	final, err := s.ClaimRuns(ctx, "owner-c", far, far.Add(time.Minute), 0)
	if err != nil {
		t.Fatal(err)
	}
	var wantFinal []string
	for _, f := range fixtures {
		if (f.status == gateway.StatusQueued || f.status == gateway.StatusRunning) && f.debug != gateway.BreakpointPaused && f.id != r.ID {
			wantFinal = append(wantFinal, f.id)
		}
	}
	slices.SortFunc(wantFinal, func(a, b string) int { return stored[a].CreatedAt.Compare(stored[b].CreatedAt) })
	if d := gocmp.Diff(wantFinal, runIDs(final)); d != "" {
		t.Errorf("ClaimRuns after %s began waiting (-want +got):\n%s", r.ID, d)
	}
}

// A run's debugger is kept with it, and a run it pauses is not claimed,
// whatever its status and lease, until a step or a resume lets it go.
func testGwDebugHold(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	run, _ := mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r1"), Now: gwT0})
	claimAt := func(at time.Time) []string {
		t.Helper()
		got, err := s.ClaimRuns(ctx, "owner", at, at.Add(time.Second), 0)
		if err != nil {
			t.Fatalf("ClaimRuns: %v", err)
		}
		return runIDs(got)
	}
	// write sets the run's debugger, lets its lease lapse at once, and
	// checks the debugger reads back as written.
	write := func(at time.Time, d *gateway.DebugSession, evs []gateway.Event) {
		t.Helper()
		cur, err := s.GetRun(ctx, "acme", "r1")
		if err != nil {
			t.Fatal(err)
		}
		cur.Debug, cur.LeaseOwner, cur.LeaseUntil = d, "", time.Time{}
		written, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: cur, ExpectVersion: cur.Version, Events: evs, Now: at})
		if err != nil {
			t.Fatalf("WriteRun: %v", err)
		}
		read, err := s.GetRun(ctx, "", "r1")
		if err != nil || !gocmp.Equal(d, read.Debug) || !gocmp.Equal(written, read) {
			t.Errorf("the debugger read back: %v (-want +got):\n%s", err, gocmp.Diff(d, read.Debug))
		}
	}
	session := func(st gateway.BreakpointState, steps int, at time.Time) *gateway.DebugSession {
		return &gateway.DebugSession{SessionID: "dbg-1", RunID: run.ID, BreakpointState: st, Action: gateway.DebugPause,
			Steps: steps, Actor: "alice", UpdatedAt: at}
	}
	pause := []gateway.Event{{Type: gateway.EventDebugPrefix + "pause", Payload: json.RawMessage(`{"breakpoint_state":"paused"}`)}}

	write(gwAt(time.Second), session(gateway.BreakpointPaused, 0, gwAt(time.Second)), pause)
	if got := claimAt(gwAt(time.Hour)); len(got) != 0 {
		t.Errorf("a paused run was claimed: %v", got)
	}
	write(gwAt(2*time.Second), session(gateway.BreakpointStepping, 1, gwAt(2*time.Second)), nil)
	if got := claimAt(gwAt(time.Hour)); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("a stepping run: claimed %v, want r1", got)
	}
	write(gwAt(3*time.Second), session(gateway.BreakpointPaused, 0, gwAt(3*time.Second)), pause)
	if got := claimAt(gwAt(2 * time.Hour)); len(got) != 0 {
		t.Errorf("a run paused again was claimed: %v", got)
	}
	write(gwAt(4*time.Second), session(gateway.BreakpointRunning, 0, gwAt(4*time.Second)), nil)
	if got := claimAt(gwAt(3 * time.Hour)); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("a resumed run: claimed %v, want r1", got)
	}
	// The debugger's events are events like any other.
	evs := mustEvents(t, s, "r1", 0, 0)
	if len(evs) != 2 || evs[0].Type != "debug.pause" || evs[1].Sequence != 2 {
		t.Errorf("events %+v, want the two pauses", evs)
	}
}

// Claimers racing for the same runs, from one handle or several, never
// get one run twice, and between them claim every run.
func testGwClaimConcurrent(t *testing.T, store func(i int) gateway.Store) {
	ctx := ctxT(t)
	const runs, claimers, batch = 120, 8, 7
	parallel(t, runs, func(i int) error {
		_, _, err := store(i).CreateRun(ctx, gateway.RunWrite{Run: gwMinimalRun("acme", fmt.Sprintf("r%03d", i)), Now: gwAt(time.Duration(i) * time.Millisecond)})
		return err
	})
	now := gwAt(time.Hour)
	claimed := make([][]string, claimers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range claimers {
		wg.Go(func() {
			s := store(c)
			owner := fmt.Sprintf("owner-%d", c)
			<-start
			for {
				got, err := s.ClaimRuns(ctx, owner, now, now.Add(time.Minute), batch)
				if err != nil {
					t.Errorf("claimer %d: %v", c, err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, r := range got {
					if r.LeaseOwner != owner || r.Version != 2 {
						t.Errorf("claimer %d got %s with owner %s at version %d", c, r.ID, r.LeaseOwner, r.Version)
					}
					claimed[c] = append(claimed[c], r.ID)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	for c, ids := range claimed {
		for _, id := range ids {
			if prev, ok := seen[id]; ok {
				t.Errorf("run %s claimed by claimers %d and %d", id, prev, c)
			}
			seen[id] = c
		}
	}
	if len(seen) != runs {
		t.Errorf("%d runs claimed, want %d", len(seen), runs)
	}
	for id, c := range seen {
		r, err := store(0).GetRun(ctx, "acme", id)
		if err != nil || r.LeaseOwner != fmt.Sprintf("owner-%d", c) || r.Version != 2 {
			t.Errorf("run %s: lease %s at version %d, %v; want claimer %d's at version 2", id, r.LeaseOwner, r.Version, err, c)
		}
	}
}

// watchLog records WatchEvents calls.
type watchLog struct {
	mu    sync.Mutex
	calls []watchCall
	last  map[string]int64 // the greatest last seen per run
	ch    chan struct{}    // signalled on every call
}

type watchCall struct {
	Run  string
	Last int64
}

func newWatchLog() *watchLog { return &watchLog{last: map[string]int64{}, ch: make(chan struct{}, 1)} }

func (l *watchLog) fn(run string, last int64) {
	l.mu.Lock()
	l.calls = append(l.calls, watchCall{run, last})
	l.last[run] = max(l.last[run], last)
	l.mu.Unlock()
	select {
	case l.ch <- struct{}{}:
	default:
	}
}

func (l *watchLog) snapshot() []watchCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// waitFor waits until the log has seen run reach last. A minute only
// bounds a failure: notifications of another process take a moment.
func (l *watchLog) waitFor(t *testing.T, run string, last int64) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		l.mu.Lock()
		got := l.last[run]
		l.mu.Unlock()
		if got >= last {
			return
		}
		select {
		case <-l.ch:
		case <-deadline:
			t.Fatalf("after a minute, the watcher saw %s at %d, want %d; calls %v", run, got, last, l.snapshot())
		}
	}
}

func testGwWatch(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	log, stopped := newWatchLog(), newWatchLog()
	if err := s.WatchEvents(ctx, log.fn); err != nil {
		t.Fatalf("WatchEvents: %v", err)
	}
	sctx, stop := context.WithCancel(ctx)
	if err := s.WatchEvents(sctx, stopped.fn); err != nil {
		t.Fatalf("WatchEvents: %v", err)
	}
	run, _ := mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "r1"), Events: gwEvents(3), Now: gwT0})
	log.waitFor(t, "r1", 3)
	stopped.waitFor(t, "r1", 3)
	stop()

	// Failed writes are not reported: a refused creation and a write
	// that conflicts, of another run, before a write that succeeds.
	if _, _, err := s.CreateRun(ctx, gateway.RunWrite{Run: gwMinimalRun("acme", "r1"), Events: gwEvents(4)}); !errors.Is(err, gateway.ErrExists) {
		t.Fatalf("CreateRun of an existing run = %v", err)
	}
	other, _ := mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "other"), Now: gwT0})
	if _, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: other, ExpectVersion: 7, Events: gwEvents(2)}); !errors.Is(err, gateway.ErrConflict) {
		t.Fatalf("WriteRun of a stale version = %v", err)
	}
	run, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: run, ExpectVersion: 1, Events: gwEvents(2), Now: gwT0})
	if err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "r1", 5)
	for _, c := range log.snapshot() {
		// ("other", 0) is its creation, which appended nothing.
		if c != (watchCall{"r1", 3}) && c != (watchCall{"r1", 5}) && c != (watchCall{"other", 0}) {
			t.Errorf("WatchEvents reported %v; only r1 at 3 and at 5 were appended", c)
		}
	}
	// A write that appends nothing may be reported or not; it never
	// reports a sequence the run does not have.
	if _, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: run, ExpectVersion: 2, Now: gwT0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: other, ExpectVersion: 1, Events: gwEvents(1), Now: gwT0}); err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, "other", 1)
	for _, c := range log.snapshot() {
		if (c.Run == "r1" && c.Last > 5) || (c.Run == "other" && c.Last > 1) {
			t.Errorf("WatchEvents reported %v", c)
		}
	}
	// The watcher whose context ended heard of nothing after it.
	for _, c := range stopped.snapshot() {
		if c != (watchCall{"r1", 3}) {
			t.Errorf("a watcher whose context ended was told of %v", c)
		}
	}
	// A context that ended already is refused, or never called.
	if err := s.WatchEvents(sctx, stopped.fn); err == nil {
		mustCreateRun(t, s, gateway.RunWrite{Run: gwMinimalRun("acme", "late"), Events: gwEvents(1), Now: gwT0})
		log.waitFor(t, "late", 1)
		if got := stopped.snapshot(); len(got) != 1 {
			t.Errorf("a watch started with an ended context was told of %v", got[1:])
		}
	}
}

// Writers of many runs on writer, watched on watcher (the same store, or
// another handle on its database): the watcher learns of every run's last
// sequence, and never of one a run does not have.
func testGwWatchConcurrent(t *testing.T, writer, watcher gateway.Store) {
	ctx := ctxT(t)
	log := newWatchLog()
	if err := watcher.WatchEvents(ctx, log.fn); err != nil {
		t.Fatalf("WatchEvents: %v", err)
	}
	const runs, writes = 6, 15
	var wg sync.WaitGroup
	finals := make([]int64, runs)
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("r%d", i)
			r, _, err := writer.CreateRun(ctx, gateway.RunWrite{Run: gwMinimalRun("acme", id), Events: gwEvents(1), Now: gwT0})
			if err != nil {
				t.Error(err)
				return
			}
			for w := range writes {
				if r, _, err = writer.WriteRun(ctx, gateway.RunWrite{Run: r, ExpectVersion: r.Version, Events: gwEvents(w % 3), Now: gwT0}); err != nil {
					t.Error(err)
					return
				}
			}
			finals[i] = r.LastSequence
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, last := range finals {
		log.waitFor(t, fmt.Sprintf("r%d", i), last)
	}
	for _, c := range log.snapshot() {
		var i int
		if _, err := fmt.Sscanf(c.Run, "r%d", &i); err != nil || i >= runs || c.Last > finals[i] || c.Last < 1 {
			t.Errorf("WatchEvents reported %v", c)
		}
	}
}

func testGwCountRuns(t *testing.T, s gateway.Store) {
	ctx := ctxT(t)
	count := func(when string, want map[gateway.Status]int64) {
		t.Helper()
		got, err := s.CountRuns(ctx)
		if err != nil {
			t.Fatalf("CountRuns: %v", err)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("%s: counts (-want +got):\n%s", when, diff)
		}
	}
	count("empty", map[gateway.Status]int64{})
	mustCreateRun(t, s, gateway.RunWrite{Run: withStatus(gwRun("acme", "r1"), gateway.StatusQueued), Now: gwT0})
	mustCreateRun(t, s, gateway.RunWrite{Run: withStatus(gwRun("acme", "r2"), gateway.StatusQueued), Now: gwT0})
	r3, _ := mustCreateRun(t, s, gateway.RunWrite{Run: withStatus(gwRun("globex", "r3"), gateway.StatusRunning), Now: gwT0})
	count("created", map[gateway.Status]int64{gateway.StatusQueued: 2, gateway.StatusRunning: 1})
	r3.Status, r3.EndedAt = gateway.StatusCompleted, gwAt(time.Minute)
	if _, _, err := s.WriteRun(ctx, gateway.RunWrite{Run: r3, ExpectVersion: r3.Version, Now: gwAt(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	count("one completed", map[gateway.Status]int64{gateway.StatusQueued: 2, gateway.StatusCompleted: 1})
}
