package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/gate"
)

// TestGateStore runs the gate.Store contract. newStore must return a new,
// empty store each time it is called.
func TestGateStore(t *testing.T, newStore func(t *testing.T) gate.Store) {
	t.Run("SessionCreateGet", func(t *testing.T) { testGateSessionCreate(t, newStore(t)) })
	t.Run("SessionUpdate", func(t *testing.T) { testGateSessionUpdate(t, newStore(t)) })
	t.Run("ActionCreate", func(t *testing.T) { testGateActionCreate(t, newStore(t)) })
	t.Run("ActionCompareAndSet", func(t *testing.T) { testGateActionCAS(t, newStore(t)) })
	t.Run("ActionClaimGrantedOnce", func(t *testing.T) { testGateClaimOnce(t, newStore(t)) })
	t.Run("ActionWriteAtomic", func(t *testing.T) { testGateWriteAtomic(t, newStore(t)) })
	t.Run("ActionRoundTrip", func(t *testing.T) { testGateActionRoundTrip(t, newStore(t)) })
	t.Run("ListActions", func(t *testing.T) { testGateListActions(t, newStore(t)) })
	t.Run("ListActionsLimit", func(t *testing.T) { testGateListLimit(t, newStore(t)) })
	t.Run("ExpiringHolds", func(t *testing.T) { testGateExpiringHolds(t, newStore(t)) })
	t.Run("CountActions", func(t *testing.T) { testGateCountActions(t, newStore(t)) })
	t.Run("Aggregate", func(t *testing.T) { testGateAggregate(t, newStore(t)) })
	t.Run("LedgerRecount", func(t *testing.T) { testGateLedgerRecount(t, newStore(t)) })
	t.Run("LedgerPrecision", func(t *testing.T) { testGateLedgerPrecision(t, newStore(t)) })
	t.Run("LedgerTimeOrder", func(t *testing.T) { testGateLedgerTimeOrder(t, newStore(t)) })
	t.Run("LedgerRefused", func(t *testing.T) { testGateLedgerRefused(t, newStore(t)) })
	t.Run("LedgerConcurrent", func(t *testing.T) { testGateLedgerConcurrent(t, newStore(t)) })
	t.Run("RuleSets", func(t *testing.T) { testGateRuleSets(t, newStore(t)) })
	t.Run("RuleSetsConcurrent", func(t *testing.T) { testGateRuleSetsConcurrent(t, newStore(t)) })
	t.Run("AuditChain", func(t *testing.T) { testGateAuditChain(t, newStore(t)) })
	t.Run("AuditConcurrent", func(t *testing.T) { testGateAuditConcurrent(t, newStore(t)) })
	t.Run("Heartbeat", func(t *testing.T) { testGateHeartbeat(t, newStore(t)) })
}

// gateT0 is the suite's clock. Its times carry microseconds, the
// precision stores keep, and are given in a zone other than UTC, so a
// round trip shows both that nothing finer is lost and that reads come
// back in UTC.
var (
	gateZone = time.FixedZone("UTC+5:30", 5*3600+1800)
	gateT0   = time.Date(2026, 5, 1, 9, 0, 0, 123456000, time.UTC).In(gateZone)
)

func gateAt(d time.Duration) time.Time { return gateT0.Add(d) }

// sameJSON compares raw JSON by meaning: stores may keep actions,
// decisions and rule sets in a JSON column that reformats them. Audit
// bodies, which are hashed, are compared byte for byte apart from this.
var sameJSON = gocmp.Comparer(func(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
})

// checkUTC fails when a non-zero time.Time field of v (a struct) is not
// in UTC.
func checkUTC(t *testing.T, what string, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if tm, ok := rv.Field(i).Interface().(time.Time); ok && !tm.IsZero() && tm.Location() != time.UTC {
			t.Errorf("%s: %s is in %v, want UTC", what, rv.Type().Field(i).Name, tm.Location())
		}
	}
}

func gateSession(tenant, id string) gate.SessionRecord {
	return gate.SessionRecord{
		TenantID: tenant, ID: id, TeamID: "team-1", AgentID: "agent-1", Resumable: true,
		HoldWindow: 90*time.Minute + 1, State: gate.SessionStateOpen, CreatedAt: gateT0, UpdatedAt: gateT0,
	}
}

func testGateSessionCreate(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	in := gateSession("acme", "s1")
	got, err := s.CreateSession(ctx, in)
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	want := in
	want.Version = 1
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("CreateSession (-want +got):\n%s", d)
	}
	checkUTC(t, "CreateSession", got)
	read, err := s.GetSession(ctx, "acme", "s1")
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if d := gocmp.Diff(got, read); d != "" {
		t.Errorf("GetSession (-created +read):\n%s", d)
	}
	checkUTC(t, "GetSession", read)

	// A second creation loses and sees the first.
	again := gateSession("acme", "s1")
	again.AgentID, again.HoldIndefinite, again.HoldWindow = "agent-2", true, 0
	stored, err := s.CreateSession(ctx, again)
	if !errors.Is(err, gate.ErrExists) {
		t.Fatalf("second CreateSession = %v, want ErrExists", err)
	}
	if d := gocmp.Diff(got, stored); d != "" {
		t.Errorf("CreateSession on ErrExists returned (-stored +got):\n%s", d)
	}

	// Session ids are per tenant.
	other := gateSession("globex", "s1")
	other.HoldIndefinite, other.HoldWindow, other.Resumable = true, 0, false
	if _, err := s.CreateSession(ctx, other); err != nil {
		t.Fatalf("CreateSession in another tenant: %v", err)
	}
	if read, err := s.GetSession(ctx, "globex", "s1"); err != nil || !read.HoldIndefinite || read.Resumable {
		t.Errorf("globex's s1 = %+v, %v", read, err)
	}
	for _, k := range [][2]string{{"acme", "s2"}, {"initech", "s1"}, {"ACME", "s1"}, {"", "s1"}} {
		if _, err := s.GetSession(ctx, k[0], k[1]); !errors.Is(err, gate.ErrNotFound) {
			t.Errorf("GetSession(%q, %q) = %v, want ErrNotFound", k[0], k[1], err)
		}
	}
}

func testGateSessionUpdate(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	created, err := s.CreateSession(ctx, gateSession("acme", "s1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, gateSession("globex", "s1")); err != nil {
		t.Fatal(err)
	}
	up := created
	up.State, up.UpdatedAt, up.AgentID = gate.SessionStateSuspended, gateAt(time.Minute), "agent-9"
	got, err := s.UpdateSession(ctx, up)
	if err != nil {
		t.Fatalf("UpdateSession: %v", err)
	}
	want := up
	want.Version = 2
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("UpdateSession (-want +got):\n%s", d)
	}
	if read, _ := s.GetSession(ctx, "acme", "s1"); !gocmp.Equal(got, read) {
		t.Errorf("GetSession after update = %+v, want %+v", read, got)
	}

	tests := []struct {
		name    string
		tenant  string
		id      string
		version int64
		want    error
	}{
		{"stale version", "acme", "s1", 1, gate.ErrConflict},
		{"future version", "acme", "s1", 3, gate.ErrConflict},
		{"no version", "acme", "s1", 0, gate.ErrConflict},
		{"missing session", "acme", "s2", 1, gate.ErrNotFound},
		{"other tenant's version", "globex", "s1", 2, gate.ErrConflict},
		{"missing tenant", "initech", "s1", 2, gate.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := gateSession(tt.tenant, tt.id)
			bad.Version, bad.State = tt.version, gate.SessionStateCompleted
			if _, err := s.UpdateSession(ctx, bad); !errors.Is(err, tt.want) {
				t.Errorf("UpdateSession = %v, want %v", err, tt.want)
			}
		})
	}
	if read, _ := s.GetSession(ctx, "acme", "s1"); !gocmp.Equal(got, read) {
		t.Errorf("refused updates changed the session: %+v, want %+v", read, got)
	}
	if read, _ := s.GetSession(ctx, "globex", "s1"); read.Version != 1 || read.State != gate.SessionStateOpen {
		t.Errorf("globex's session changed: %+v", read)
	}
}

// gateAction is an action with every field set.
func gateAction(tenant, session, action string) gate.ActionRecord {
	return gate.ActionRecord{
		TenantID: tenant, SessionID: session, ActionID: action, ActionType: "refund", TeamID: "team-1", AgentID: "agent-1",
		Action:      json.RawMessage(`{"type":"refund","amount":120.5,"customer":"c-9","note":"ünïcode ✓"}`),
		Fingerprint: "fp-" + action, FingerprintScheme: "jcs-sha256", CommitmentVersion: "v1",
		State: gate.ActionHeld, Verdict: gate.Hold, RuleIDCited: "refund-limit", Rationale: "over the daily limit",
		Reason:     gate.ReasonJudgeTimeout,
		Decision:   json.RawMessage(`{"matched":["refund-limit"],"aggregates":{"sum_24h":900},"judge_ms":412}`),
		HoldWindow: 15*time.Minute + 7, HoldExpiresAt: gateAt(15 * time.Minute), DecidedBy: "op@acme", DecidedAt: gateAt(time.Minute),
		FencingToken: 1<<63 + 5, ClaimedAt: gateAt(2 * time.Minute), AcknowledgedAt: gateAt(3 * time.Minute),
	}
}

func mustWrite(t *testing.T, s gate.Store, w gate.ActionWrite) gate.ActionRecord {
	t.Helper()
	r, err := s.WriteAction(ctxT(t), w)
	if err != nil {
		t.Fatalf("WriteAction %s/%s v%d: %v", w.Record.SessionID, w.Record.ActionID, w.ExpectVersion, err)
	}
	return r
}

// storedAction is r as a write at now with expect returns it.
func storedAction(r gate.ActionRecord, expect int64, created, now time.Time) gate.ActionRecord {
	r.Version, r.CreatedAt, r.UpdatedAt = expect+1, created, now
	return r
}

func testGateActionCreate(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	in := gateAction("acme", "s1", "a1")
	got := mustWrite(t, s, gate.ActionWrite{Record: in, Now: gateT0})
	if d := gocmp.Diff(storedAction(in, 0, gateT0, gateT0), got, sameJSON); d != "" {
		t.Errorf("WriteAction create (-want +got):\n%s", d)
	}
	read, err := s.GetAction(ctx, "acme", "s1", "a1")
	if err != nil {
		t.Fatalf("GetAction: %v", err)
	}
	if d := gocmp.Diff(got, read, sameJSON); d != "" {
		t.Errorf("GetAction (-written +read):\n%s", d)
	}
	checkUTC(t, "GetAction", read)

	// A second creation (a retried submission) loses and is answered
	// from the stored record.
	dup := gateAction("acme", "s1", "a1")
	dup.State, dup.Verdict = gate.ActionPassed, gate.Pass
	cur, err := s.WriteAction(ctx, gate.ActionWrite{Record: dup, Now: gateAt(time.Hour)})
	if !errors.Is(err, gate.ErrExists) {
		t.Fatalf("second create = %v, want ErrExists", err)
	}
	if d := gocmp.Diff(got, cur, sameJSON); d != "" {
		t.Errorf("create on ErrExists returned (-stored +got):\n%s", d)
	}

	// The key is (tenant, session, action): each part separates.
	for _, k := range [][3]string{{"globex", "s1", "a1"}, {"acme", "s2", "a1"}, {"acme", "s1", "a2"}} {
		mustWrite(t, s, gate.ActionWrite{Record: gateAction(k[0], k[1], k[2]), Now: gateT0})
	}
	for _, k := range [][3]string{{"initech", "s1", "a1"}, {"acme", "s3", "a1"}, {"acme", "s1", "a3"}, {"Acme", "s1", "a1"}} {
		if _, err := s.GetAction(ctx, k[0], k[1], k[2]); !errors.Is(err, gate.ErrNotFound) {
			t.Errorf("GetAction%v = %v, want ErrNotFound", k, err)
		}
	}
}

func testGateActionCAS(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	in := gateAction("acme", "s1", "a1")
	in.State, in.FencingToken, in.ClaimedAt, in.AcknowledgedAt = gate.ActionPassed, 0, time.Time{}, time.Time{}
	v1 := mustWrite(t, s, gate.ActionWrite{Record: in, Now: gateT0})
	mustWrite(t, s, gate.ActionWrite{Record: gateAction("globex", "s1", "a1"), Now: gateT0})

	claim := v1
	claim.State, claim.FencingToken, claim.ClaimedAt = gate.ActionClaimed, 1, gateAt(time.Second)
	// The record's own version and times are the store's to set.
	claim.Version, claim.CreatedAt, claim.UpdatedAt = 99, gateAt(time.Hour), time.Time{}
	v2 := mustWrite(t, s, gate.ActionWrite{Record: claim, ExpectVersion: 1, Now: gateAt(time.Second)})
	if d := gocmp.Diff(storedAction(claim, 1, gateT0, gateAt(time.Second)), v2, sameJSON); d != "" {
		t.Errorf("CAS update (-want +got):\n%s", d)
	}
	if read, _ := s.GetAction(ctx, "acme", "s1", "a1"); !gocmp.Equal(v2, read, sameJSON) {
		t.Errorf("GetAction after CAS = %+v, want %+v", read, v2)
	}

	tests := []struct {
		name   string
		key    [3]string
		expect int64
		want   error
		cur    *gate.ActionRecord // the record returned with the error
	}{
		{"stale version", [3]string{"acme", "s1", "a1"}, 1, gate.ErrConflict, &v2},
		{"future version", [3]string{"acme", "s1", "a1"}, 3, gate.ErrConflict, &v2},
		{"missing action", [3]string{"acme", "s1", "a2"}, 1, gate.ErrNotFound, nil},
		{"missing tenant", [3]string{"initech", "s1", "a1"}, 2, gate.ErrNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gateAction(tt.key[0], tt.key[1], tt.key[2])
			r.State = gate.ActionExecuted
			cur, err := s.WriteAction(ctx, gate.ActionWrite{Record: r, ExpectVersion: tt.expect, Now: gateAt(time.Hour)})
			if !errors.Is(err, tt.want) {
				t.Fatalf("WriteAction = %v, want %v", err, tt.want)
			}
			if tt.cur != nil {
				if d := gocmp.Diff(*tt.cur, cur, sameJSON); d != "" {
					t.Errorf("record returned with %v (-current +got):\n%s", tt.want, d)
				}
			}
		})
	}
	if read, _ := s.GetAction(ctx, "acme", "s1", "a1"); !gocmp.Equal(v2, read, sameJSON) {
		t.Errorf("refused writes changed the action: %+v", read)
	}
	// globex's a1 is at version 1, and acme's version 2 does not reach it.
	r := gateAction("globex", "s1", "a1")
	if _, err := s.WriteAction(ctx, gate.ActionWrite{Record: r, ExpectVersion: 2, Now: gateAt(time.Hour)}); !errors.Is(err, gate.ErrConflict) {
		t.Errorf("globex write at acme's version = %v, want ErrConflict", err)
	}
	// Several steps in a row, each naming the version the last returned.
	cur := v2
	for i := range 5 {
		cur.FencingToken++
		next := mustWrite(t, s, gate.ActionWrite{Record: cur, ExpectVersion: cur.Version, Now: gateAt(time.Duration(i+2) * time.Second)})
		if next.Version != cur.Version+1 || next.FencingToken != cur.FencingToken || !next.CreatedAt.Equal(gateT0) {
			t.Fatalf("step %d: %+v after version %d", i, next, cur.Version)
		}
		cur = next
	}
}

// testGateClaimOnce is how the gate grants a claim once: every claimant
// reads the same version and compare-and-sets it; exactly one may win
// each round, and every loser is handed the winner's record.
func testGateClaimOnce(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	const rounds, claimants = 12, 16
	rec := gateAction("acme", "s1", "a1")
	rec.State, rec.FencingToken = gate.ActionApproved, 0
	cur := mustWrite(t, s, gate.ActionWrite{Record: rec, Now: gateT0})
	// Another tenant's action with the same ids, raced at the same time,
	// must neither block nor be blocked.
	other := mustWrite(t, s, gate.ActionWrite{Record: withTenant(rec, "globex"), Now: gateT0})
	for round := range rounds {
		var wg sync.WaitGroup
		start := make(chan struct{})
		type result struct {
			rec gate.ActionRecord
			err error
		}
		results := make([]result, claimants)
		for c := range claimants {
			wg.Go(func() {
				w := cur
				w.State, w.FencingToken, w.ClaimedAt = gate.ActionClaimed, uint64(round*claimants+c+1), gateAt(time.Duration(round)*time.Second)
				at := gateAt(time.Duration(round+1) * time.Second)
				<-start
				r, err := s.WriteAction(ctx, gate.ActionWrite{
					Record: w, ExpectVersion: cur.Version, Now: at,
					Audit:  &gate.AuditEntry{Kind: "claim", TenantID: "acme", SessionID: "s1", ActionID: "a1", Body: json.RawMessage(fmt.Sprintf(`{"token":%d}`, w.FencingToken))},
					Ledger: []gate.LedgerEntry{{ActionType: "refund", Subject: "c-9", Amount: 1, At: at}},
				})
				results[c] = result{r, err}
			})
		}
		var og sync.WaitGroup
		og.Go(func() {
			<-start
			w := other
			w.FencingToken++
			var err error
			other, err = s.WriteAction(ctx, gate.ActionWrite{Record: w, ExpectVersion: other.Version, Now: gateAt(time.Second)})
			if err != nil {
				t.Errorf("round %d: globex's write: %v", round, err)
			}
		})
		close(start)
		wg.Wait()
		og.Wait()
		var winners []gate.ActionRecord
		for c, r := range results {
			switch {
			case r.err == nil:
				winners = append(winners, r.rec)
			case !errors.Is(r.err, gate.ErrConflict):
				t.Fatalf("round %d claimant %d: %v, want success or ErrConflict", round, c, r.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d claims granted, want exactly 1", round, len(winners))
		}
		win := winners[0]
		if win.Version != cur.Version+1 {
			t.Fatalf("round %d: winner at version %d, want %d", round, win.Version, cur.Version+1)
		}
		for c, r := range results {
			if r.err != nil && !gocmp.Equal(win, r.rec, sameJSON) {
				t.Errorf("round %d claimant %d was handed %+v, want the winner's record %+v", round, c, r.rec, win)
			}
		}
		if read, _ := s.GetAction(ctx, "acme", "s1", "a1"); !gocmp.Equal(win, read, sameJSON) {
			t.Fatalf("round %d: stored %+v, want the winner's %+v", round, read, win)
		}
		cur = win
	}
	// Only the winners' audit entries and ledger entries were recorded.
	entries := readAudit(t, s)
	if len(entries) != rounds {
		t.Fatalf("%d audit entries, want one per granted claim (%d)", len(entries), rounds)
	}
	if got := total(t, s, gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-9"}); got.Count != rounds || got.Sum != rounds {
		t.Errorf("ledger = %+v; want %d entries, one per granted claim", got, rounds)
	}
	if other.Version != rounds+1 {
		t.Errorf("globex's action at version %d, want %d", other.Version, rounds+1)
	}
}

func withTenant(r gate.ActionRecord, tenant string) gate.ActionRecord {
	r.TenantID = tenant
	return r
}

// readAudit reads the whole chain in small pages, verifies it, and checks
// that the head agrees with its last entry.
func readAudit(t *testing.T, s gate.Store) []gate.AuditEntry {
	t.Helper()
	ctx := ctxT(t)
	var all []gate.AuditEntry
	v := gate.NewAuditVerifier()
	for after := int64(0); ; {
		page, err := s.Audit(ctx, after, 7)
		if err != nil {
			t.Fatalf("Audit(%d): %v", after, err)
		}
		if len(page) > 7 {
			t.Fatalf("Audit(%d, 7) returned %d entries", after, len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if err := v.Add(e); err != nil {
				t.Fatalf("audit chain: %v", err)
			}
			checkUTC(t, fmt.Sprintf("audit entry %d", e.Seq), e)
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
	seq, hash, err := s.AuditHead(ctx)
	if err != nil {
		t.Fatalf("AuditHead: %v", err)
	}
	if seq != v.Verified() || hash != v.Head() {
		t.Fatalf("AuditHead = %d %s, want the last verified entry %d %s", seq, hash, v.Verified(), v.Head())
	}
	return all
}

func auditHead(t *testing.T, s gate.Store) (int64, string) {
	t.Helper()
	seq, hash, err := s.AuditHead(ctxT(t))
	if err != nil {
		t.Fatalf("AuditHead: %v", err)
	}
	return seq, hash
}

// total is q's total, asked alone.
func total(t *testing.T, s gate.Store, q gate.LedgerQuery) gate.LedgerTotal {
	t.Helper()
	tot, err := s.Aggregate(ctxT(t), []gate.LedgerQuery{q})
	if err != nil || len(tot) != 1 {
		t.Fatalf("Aggregate(%+v) = %v, %v; want one total", q, tot, err)
	}
	return tot[0]
}

// testGateWriteAtomic: the audit entry and ledger entries of an action
// write are recorded with it, and not at all when it is refused.
func testGateWriteAtomic(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	rec := gateAction("acme", "s1", "a1")
	body := json.RawMessage(`{"verdict":"hold",  "rule" :"refund-limit"}`)
	ledger := []gate.LedgerEntry{
		{TenantID: "acme", ActionType: "refund", Subject: "c-9", Amount: 120.5, At: gateT0, SessionID: "s1", ActionID: "a1"},
		{TenantID: "acme", ActionType: "refund", Subject: "c-7", Amount: 3.25, At: gateT0, SessionID: "s1", ActionID: "a1"},
	}
	v1 := mustWrite(t, s, gate.ActionWrite{Record: rec, Now: gateT0, Ledger: ledger,
		Audit: &gate.AuditEntry{Kind: "verdict", TenantID: "acme", SessionID: "s1", ActionID: "a1", Actor: "agent-1", Body: body}})
	entries := readAudit(t, s)
	if len(entries) != 1 {
		t.Fatalf("%d audit entries after one audited write, want 1", len(entries))
	}
	want := gate.AuditEntry{Seq: 1, At: gateT0.UTC(), Kind: "verdict", TenantID: "acme", SessionID: "s1", ActionID: "a1",
		Actor: "agent-1", Body: body, PrevHash: gate.AuditGenesis}
	want.Hash = gate.ChainHash(want.PrevHash, want)
	if d := gocmp.Diff(want, entries[0]); d != "" {
		t.Errorf("the write's audit entry (-want +got):\n%s", d)
	}
	q := gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Since: gateT0}
	if got := total(t, s, q); got != (gate.LedgerTotal{Count: 2, Sum: 123.75}) {
		t.Errorf("ledger after the write = %+v, want 2 entries summing 123.75", got)
	}

	// Refused writes, each carrying an audit entry and a ledger entry,
	// record neither.
	refused := []struct {
		name   string
		w      gate.ActionWrite
		wantEr error
	}{
		{"duplicate create", gate.ActionWrite{Record: rec}, gate.ErrExists},
		{"stale version", gate.ActionWrite{Record: v1, ExpectVersion: 5}, gate.ErrConflict},
		{"missing action", gate.ActionWrite{Record: gateAction("acme", "s1", "zz"), ExpectVersion: 1}, gate.ErrNotFound},
	}
	seq, hash := auditHead(t, s)
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.w
			w.Now = gateAt(time.Minute)
			w.Audit = &gate.AuditEntry{Kind: "refused", TenantID: "acme", Body: json.RawMessage(`{}`)}
			w.Ledger = []gate.LedgerEntry{{TenantID: "acme", ActionType: "refund", Subject: "c-9", Amount: 1000, At: gateAt(time.Minute)}}
			if _, err := s.WriteAction(ctx, w); !errors.Is(err, tt.wantEr) {
				t.Fatalf("WriteAction = %v, want %v", err, tt.wantEr)
			}
			if s2, h2 := auditHead(t, s); s2 != seq || h2 != hash {
				t.Errorf("a refused write moved the audit head to %d %s", s2, h2)
			}
			if got := total(t, s, q); got != (gate.LedgerTotal{Count: 2, Sum: 123.75}) {
				t.Errorf("a refused write changed the ledger: %+v", got)
			}
		})
	}
	if got := readAudit(t, s); len(got) != 1 {
		t.Errorf("%d audit entries after refused writes, want 1", len(got))
	}

	// A write without audit or ledger leaves both as they are; one with
	// ledger entries only adds those.
	v2 := mustWrite(t, s, gate.ActionWrite{Record: v1, ExpectVersion: 1, Now: gateAt(time.Minute)})
	mustWrite(t, s, gate.ActionWrite{Record: v2, ExpectVersion: 2, Now: gateAt(2 * time.Minute),
		Ledger: []gate.LedgerEntry{{TenantID: "acme", ActionType: "refund", Subject: "c-9", Amount: 10, At: gateAt(2 * time.Minute)}}})
	if s2, _ := auditHead(t, s); s2 != 1 {
		t.Errorf("audit head at %d after writes without audit, want 1", s2)
	}
	if got := total(t, s, q); got != (gate.LedgerTotal{Count: 3, Sum: 133.75}) {
		t.Errorf("ledger = %+v, want 3 entries summing 133.75", got)
	}
}

// testGateActionRoundTrip writes records that differ in every field that
// can be empty, and reads each back as written.
func testGateActionRoundTrip(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	full := gateAction("acme", "s1", "full")
	bare := gate.ActionRecord{TenantID: "acme", SessionID: "s1", ActionID: "bare", State: gate.ActionPassed, Verdict: gate.Pass}
	indefinite := gateAction("acme", "s1", "indefinite")
	indefinite.HoldIndefinite, indefinite.HoldWindow, indefinite.HoldExpiresAt = true, 0, time.Time{}
	nanos := gateAction("acme", "s1", "nanos")
	nanos.HoldWindow = 1234567891 // durations keep nanoseconds
	nanos.FencingToken = ^uint64(0)
	nanos.Decision = nil
	epochish := gateAction("acme", "s1", "old")
	epochish.DecidedAt = time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	epochish.ClaimedAt = time.Date(2100, 1, 1, 0, 0, 0, 1000, gateZone)
	for _, r := range []gate.ActionRecord{full, bare, indefinite, nanos, epochish} {
		t.Run(r.ActionID, func(t *testing.T) {
			got := mustWrite(t, s, gate.ActionWrite{Record: r, Now: gateT0})
			read, err := s.GetAction(ctx, r.TenantID, r.SessionID, r.ActionID)
			if err != nil {
				t.Fatal(err)
			}
			want := storedAction(r, 0, gateT0, gateT0)
			for name, v := range map[string]gate.ActionRecord{"returned": got, "read": read} {
				if d := gocmp.Diff(want, v, sameJSON); d != "" {
					t.Errorf("%s (-want +got):\n%s", name, d)
				}
				checkUTC(t, name, v)
			}
		})
	}
	// Times finer than a microsecond are kept to the microsecond, the
	// same in what the write returns and what a read returns.
	fine := gateAction("acme", "s1", "fine")
	fine.DecidedAt = gateT0.Add(789)
	got := mustWrite(t, s, gate.ActionWrite{Record: fine, Now: gateT0.Add(999)})
	read, _ := s.GetAction(ctx, "acme", "s1", "fine")
	if !gocmp.Equal(got, read, sameJSON) {
		t.Errorf("a write with nanoseconds returned %+v but reads back %+v", got, read)
	}
	if !read.DecidedAt.Equal(gateT0) || !read.CreatedAt.Equal(gateT0) {
		t.Errorf("nanoseconds kept: DecidedAt %v, CreatedAt %v, want %v", read.DecidedAt, read.CreatedAt, gateT0)
	}
}

func actionKeys(rs []gate.ActionRecord) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.TenantID+"/"+r.SessionID+"/"+r.ActionID)
	}
	return out
}

func testGateListActions(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	type seed struct {
		tenant, session, action string
		state                   gate.ActionState
		at                      time.Duration
	}
	seeds := []seed{
		{"acme", "s1", "a1", gate.ActionHeld, 1},
		{"acme", "s1", "a2", gate.ActionExecuted, 2},
		{"acme", "s2", "a1", gate.ActionHeld, 3},
		{"globex", "s1", "a1", gate.ActionHeld, 3}, // acme's s1/a1 has the same ids, not the same time
		{"acme", "s1", "a3", gate.ActionUnconfirmed, 3},
		{"globex", "s2", "a1", gate.ActionUnconfirmed, 3},
		{"acme", "s2", "a2", gate.ActionKilled, 4},
		{"globex", "s1", "a2", gate.ActionExecuted, 5},
		{"initech", "s2", "a1", gate.ActionHeld, 3}, // only the tenant orders acme's, globex's and initech's s2/a1
		{"acme", "s0", "a9", gate.ActionPassed, 6},
		{"globex", "s2", "a2", gate.ActionHeld, 7},
	}
	for _, sd := range seeds {
		r := gateAction(sd.tenant, sd.session, sd.action)
		r.State = sd.state
		mustWrite(t, s, gate.ActionWrite{Record: r, Now: gateAt(sd.at * time.Second)})
	}
	// The order is (created, session, action, tenant).
	order := []string{
		"acme/s1/a1", "acme/s1/a2", "globex/s1/a1", "acme/s1/a3", "acme/s2/a1", "globex/s2/a1", "initech/s2/a1",
		"acme/s2/a2", "globex/s1/a2", "acme/s0/a9", "globex/s2/a2",
	}
	states := map[string]gate.ActionState{}
	for _, sd := range seeds {
		states[sd.tenant+"/"+sd.session+"/"+sd.action] = sd.state
	}
	expect := func(tenant string, want ...gate.ActionState) []string {
		out := []string{}
		for _, k := range order {
			if (tenant == "" || k[:len(tenant)+1] == tenant+"/") && (len(want) == 0 || slices.Contains(want, states[k])) {
				out = append(out, k)
			}
		}
		return out
	}
	tests := []struct {
		name   string
		filter gate.ActionFilter
		want   []string
	}{
		{"every tenant", gate.ActionFilter{}, expect("")},
		{"one tenant", gate.ActionFilter{TenantID: "acme"}, expect("acme")},
		{"one state", gate.ActionFilter{TenantID: "acme", States: []gate.ActionState{gate.ActionHeld}}, expect("acme", gate.ActionHeld)},
		{"two states", gate.ActionFilter{TenantID: "globex", States: []gate.ActionState{gate.ActionHeld, gate.ActionUnconfirmed}},
			expect("globex", gate.ActionHeld, gate.ActionUnconfirmed)},
		{"states of every tenant", gate.ActionFilter{States: []gate.ActionState{gate.ActionUnconfirmed, gate.ActionHeld}},
			expect("", gate.ActionHeld, gate.ActionUnconfirmed)},
		{"no match", gate.ActionFilter{TenantID: "acme", States: []gate.ActionState{gate.ActionDenied}}, []string{}},
		{"unknown tenant", gate.ActionFilter{TenantID: "umbrella"}, []string{}},
		{"after a key", gate.ActionFilter{TenantID: "acme", AfterCreated: gateAt(3 * time.Second), AfterSessionID: "s1", AfterActionID: "a3", AfterTenantID: "acme"},
			[]string{"acme/s2/a1", "acme/s2/a2", "acme/s0/a9"}},
		{"after a key of every tenant", gate.ActionFilter{AfterCreated: gateAt(3 * time.Second), AfterSessionID: "s2", AfterActionID: "a1", AfterTenantID: "globex"},
			[]string{"initech/s2/a1", "acme/s2/a2", "globex/s1/a2", "acme/s0/a9", "globex/s2/a2"}},
		{"limit", gate.ActionFilter{Limit: 3}, expect("")[:3]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListActions(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(tt.want, actionKeys(got)); d != "" {
				t.Errorf("ListActions (-want +got):\n%s", d)
			}
		})
		// The same listing in pages of two, each continuing after the
		// previous page's last record, finds the same records.
		if tt.filter.Limit != 0 || !tt.filter.AfterCreated.IsZero() {
			continue
		}
		t.Run(tt.name+" paged", func(t *testing.T) {
			f := tt.filter
			f.Limit = 2
			var all []gate.ActionRecord
			for range 20 {
				page, err := s.ListActions(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > 2 {
					t.Fatalf("page of %d with Limit 2", len(page))
				}
				all = append(all, page...)
				if len(page) < 2 {
					break
				}
				last := page[len(page)-1]
				f.AfterCreated, f.AfterSessionID, f.AfterActionID, f.AfterTenantID = last.CreatedAt, last.SessionID, last.ActionID, last.TenantID
			}
			if d := gocmp.Diff(tt.want, actionKeys(all)); d != "" {
				t.Errorf("paged listing (-want +got):\n%s", d)
			}
		})
	}
	// Listed records are whole.
	got, _ := s.ListActions(ctx, gate.ActionFilter{TenantID: "acme", Limit: 1})
	if read, _ := s.GetAction(ctx, "acme", "s1", "a1"); len(got) != 1 || !gocmp.Equal(read, got[0], sameJSON) {
		t.Errorf("listed record %+v, want %+v", got, read)
	}
}

// testGateListLimit: a page holds at most 500 actions, whatever the
// limit asked.
func testGateListLimit(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	const n = 503
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				r := gateAction("acme", "s1", fmt.Sprintf("a%03d", i))
				if _, err := s.WriteAction(ctx, gate.ActionWrite{Record: r, Now: gateAt(time.Duration(i) * time.Millisecond)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	for _, limit := range []int{0, -1, 501, 10_000} {
		got, err := s.ListActions(ctx, gate.ActionFilter{TenantID: "acme", Limit: limit})
		if err != nil || len(got) != 500 || got[499].ActionID != "a499" {
			t.Errorf("ListActions with Limit %d = %d actions, %v; want the first 500", limit, len(got), err)
		}
	}
}

func testGateExpiringHolds(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	type seed struct {
		tenant, action string
		state          gate.ActionState
		expires        time.Duration // 0: no expiry (indefinite)
	}
	for _, sd := range []seed{
		{"acme", "h3", gate.ActionHeld, 30 * time.Minute},
		{"acme", "h1", gate.ActionHeld, 10 * time.Minute},
		{"globex", "h2", gate.ActionHeld, 20 * time.Minute},
		{"acme", "h4", gate.ActionHeld, 40 * time.Minute},
		{"acme", "forever", gate.ActionHeld, 0},
		{"acme", "approved", gate.ActionApproved, 5 * time.Minute},
		{"globex", "denied", gate.ActionDenied, 5 * time.Minute},
		{"acme", "expired", gate.ActionExpired, 5 * time.Minute},
	} {
		r := gateAction(sd.tenant, "s1", sd.action)
		r.State, r.HoldExpiresAt = sd.state, time.Time{}
		if sd.expires == 0 {
			r.HoldIndefinite = true
		} else {
			r.HoldExpiresAt = gateAt(sd.expires)
		}
		mustWrite(t, s, gate.ActionWrite{Record: r, Now: gateT0})
	}
	tests := []struct {
		name   string
		before time.Time
		limit  int
		want   []string
	}{
		{"none yet", gateAt(9 * time.Minute), 10, []string{}},
		{"at the instant", gateAt(10 * time.Minute), 10, []string{"acme/s1/h1"}},
		{"every tenant, oldest first", gateAt(35 * time.Minute), 10, []string{"acme/s1/h1", "globex/s1/h2", "acme/s1/h3"}},
		{"limit", gateAt(time.Hour), 2, []string{"acme/s1/h1", "globex/s1/h2"}},
		{"all", gateAt(1000 * time.Hour), 100, []string{"acme/s1/h1", "globex/s1/h2", "acme/s1/h3", "acme/s1/h4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ExpiringHolds(ctx, tt.before, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(tt.want, actionKeys(got)); d != "" {
				t.Errorf("ExpiringHolds (-want +got):\n%s", d)
			}
		})
	}
	// A hold that is decided leaves the list.
	h1, _ := s.GetAction(ctx, "acme", "s1", "h1")
	h1.State = gate.ActionApproved
	mustWrite(t, s, gate.ActionWrite{Record: h1, ExpectVersion: h1.Version, Now: gateAt(time.Minute)})
	if got, _ := s.ExpiringHolds(ctx, gateAt(time.Hour), 10); len(got) != 3 || got[0].ActionID != "h2" {
		t.Errorf("after approving h1: %v", actionKeys(got))
	}
}

func testGateAggregate(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	var entries []gate.LedgerEntry
	add := func(tenant, typ, subject string, amount float64, at time.Duration) {
		entries = append(entries, gate.LedgerEntry{TenantID: tenant, ActionType: typ, Subject: subject, Amount: amount,
			At: gateAt(at), SessionID: "s1", ActionID: fmt.Sprintf("a%d", len(entries))})
	}
	add("acme", "refund", "c-1", 10, 0)
	add("acme", "refund", "c-1", 20, time.Hour)
	add("acme", "refund", "c-1", 40, 2*time.Hour)
	add("acme", "refund", "c-2", 100, time.Hour)
	add("acme", "refund", "", 1000, time.Hour) // no subject: counts only for "any subject"
	add("acme", "payment", "c-1", 5000, time.Hour)
	add("globex", "refund", "c-1", 70000, time.Hour)
	add("acme", "refund", "c-1", 0.5, time.Hour+time.Microsecond)
	// Spread over several writes, some with many entries.
	for i, chunk := range [][]gate.LedgerEntry{entries[:3], entries[3:4], entries[4:]} {
		r := gateAction("acme", "s1", fmt.Sprintf("w%d", i))
		mustWrite(t, s, gate.ActionWrite{Record: r, Now: gateT0, Ledger: chunk})
	}
	tests := []struct {
		name string
		q    gate.LedgerQuery
		want gate.LedgerTotal
	}{
		{"every entry of a subject", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(-time.Hour)}, gate.LedgerTotal{Count: 4, Sum: 70.5}},
		{"zero since", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1"}, gate.LedgerTotal{Count: 4, Sum: 70.5}},
		{"since is inclusive", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(time.Hour)}, gate.LedgerTotal{Count: 3, Sum: 60.5}},
		{"a microsecond later", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(time.Hour + time.Microsecond)}, gate.LedgerTotal{Count: 2, Sum: 40.5}},
		{"after the last", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-1", Since: gateAt(3 * time.Hour)}, gate.LedgerTotal{}},
		{"any subject", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Since: gateAt(time.Hour)}, gate.LedgerTotal{Count: 5, Sum: 1160.5}},
		{"any subject, all time", gate.LedgerQuery{TenantID: "acme", ActionType: "refund"}, gate.LedgerTotal{Count: 6, Sum: 1170.5}},
		{"another subject", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-2"}, gate.LedgerTotal{Count: 1, Sum: 100}},
		{"another action type", gate.LedgerQuery{TenantID: "acme", ActionType: "payment", Subject: "c-1"}, gate.LedgerTotal{Count: 1, Sum: 5000}},
		{"another tenant", gate.LedgerQuery{TenantID: "globex", ActionType: "refund", Subject: "c-1"}, gate.LedgerTotal{Count: 1, Sum: 70000}},
		{"no such tenant", gate.LedgerQuery{TenantID: "initech", ActionType: "refund"}, gate.LedgerTotal{}},
		{"no such type", gate.LedgerQuery{TenantID: "acme", ActionType: "transfer"}, gate.LedgerTotal{}},
		{"no such subject", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "c-3"}, gate.LedgerTotal{}},
		{"subjects match exactly", gate.LedgerQuery{TenantID: "acme", ActionType: "refund", Subject: "C-1"}, gate.LedgerTotal{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := total(t, s, tt.q); got != tt.want {
				t.Errorf("Aggregate = %+v, want %+v", got, tt.want)
			}
		})
	}
	// Asked together, each query has its own total, in the order asked,
	// whatever the mix of subject and action-type queries.
	var qs []gate.LedgerQuery
	var want []gate.LedgerTotal
	for _, i := range []int{5, 0, 13, 6, 2, 10, 2, 7, 11, 1, 3, 4, 8, 9, 12} {
		qs, want = append(qs, tests[i].q), append(want, tests[i].want)
	}
	got, err := s.Aggregate(ctx, qs)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("Aggregate of a batch (-want +got):\n%s", d)
	}
	if got, err := s.Aggregate(ctx, nil); got != nil || err != nil {
		t.Errorf("Aggregate of no queries = %v, %v; want nil, nil", got, err)
	}
}

func testGateRuleSets(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	if _, err := s.RuleSet(ctx, "acme", 0); !errors.Is(err, gate.ErrNotFound) {
		t.Errorf("RuleSet before any = %v, want ErrNotFound", err)
	}
	if ts, err := s.RuleSetTenants(ctx); err != nil || len(ts) != 0 {
		t.Errorf("RuleSetTenants before any = %v, %v", ts, err)
	}
	put := func(tenant, body string, at time.Duration) gate.RuleSetRecord {
		t.Helper()
		r, err := s.PutRuleSet(ctx, gate.RuleSetRecord{TenantID: tenant, Body: json.RawMessage(body), Hash: "h-" + body,
			CreatedBy: "op@" + tenant, CreatedAt: gateAt(at), Version: 42})
		if err != nil {
			t.Fatalf("PutRuleSet: %v", err)
		}
		return r
	}
	a1 := put("acme", `{"rules":[1]}`, 0)
	g1 := put("globex", `{"rules":["g"]}`, time.Second)
	a2 := put("acme", `{"rules":[1,2]}`, 2*time.Second)
	want := []gate.RuleSetRecord{
		{TenantID: "acme", Version: 1, Body: json.RawMessage(`{"rules":[1]}`), Hash: `h-{"rules":[1]}`, CreatedBy: "op@acme", CreatedAt: gateT0},
		{TenantID: "globex", Version: 1, Body: json.RawMessage(`{"rules":["g"]}`), Hash: `h-{"rules":["g"]}`, CreatedBy: "op@globex", CreatedAt: gateAt(time.Second)},
		{TenantID: "acme", Version: 2, Body: json.RawMessage(`{"rules":[1,2]}`), Hash: `h-{"rules":[1,2]}`, CreatedBy: "op@acme", CreatedAt: gateAt(2 * time.Second)},
	}
	if d := gocmp.Diff(want, []gate.RuleSetRecord{a1, g1, a2}, sameJSON); d != "" {
		t.Errorf("PutRuleSet (-want +got):\n%s", d)
	}
	tests := []struct {
		name    string
		tenant  string
		version int64
		want    *gate.RuleSetRecord
	}{
		{"current", "acme", 0, &want[2]},
		{"first", "acme", 1, &want[0]},
		{"second", "acme", 2, &want[2]},
		{"other tenant's current", "globex", 0, &want[1]},
		{"past the current", "acme", 3, nil},
		{"other tenant's version", "globex", 2, nil},
		{"no rule set", "initech", 0, nil},
		{"negative", "acme", -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.RuleSet(ctx, tt.tenant, tt.version)
			if tt.want == nil {
				if !errors.Is(err, gate.ErrNotFound) {
					t.Errorf("RuleSet = %+v, %v; want ErrNotFound", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := gocmp.Diff(*tt.want, got, sameJSON); d != "" {
				t.Errorf("RuleSet (-want +got):\n%s", d)
			}
			checkUTC(t, "RuleSet", got)
		})
	}
	ts, err := s.RuleSetTenants(ctx)
	slices.Sort(ts)
	if err != nil || !slices.Equal(ts, []string{"acme", "globex"}) {
		t.Errorf("RuleSetTenants = %v, %v; want acme and globex once each", ts, err)
	}
}

func testGateRuleSetsConcurrent(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	const writers, each = 8, 4
	var mu sync.Mutex
	versions := map[string][]int64{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				tenant := []string{"acme", "globex"}[(w+i)%2]
				r, err := s.PutRuleSet(ctx, gate.RuleSetRecord{TenantID: tenant, Body: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)),
					Hash: fmt.Sprintf("%d-%d", w, i), CreatedAt: gateT0})
				if err != nil {
					t.Errorf("PutRuleSet: %v", err)
					return
				}
				mu.Lock()
				versions[tenant] = append(versions[tenant], r.Version)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for tenant, vs := range versions {
		slices.Sort(vs)
		for i, v := range vs {
			if v != int64(i+1) {
				t.Fatalf("%s's versions %v: want 1..%d, each once", tenant, vs, len(vs))
			}
		}
		cur, err := s.RuleSet(ctx, tenant, 0)
		if err != nil || cur.Version != int64(len(vs)) {
			t.Errorf("%s's current = %d, %v; want %d", tenant, cur.Version, err, len(vs))
		}
		// Each version holds the body that was written with it.
		for v := int64(1); v <= int64(len(vs)); v++ {
			r, err := s.RuleSet(ctx, tenant, v)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ W, I int }
			if err := json.Unmarshal(r.Body, &body); err != nil || r.Hash != fmt.Sprintf("%d-%d", body.W, body.I) {
				t.Errorf("%s v%d: body %s with hash %s", tenant, v, r.Body, r.Hash)
			}
		}
	}
}

func testGateAuditChain(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	if seq, hash := auditHead(t, s); seq != 0 || hash != gate.AuditGenesis {
		t.Errorf("empty chain's head = %d %s, want 0 and the genesis", seq, hash)
	}
	if es, err := s.Audit(ctx, 0, 10); err != nil || len(es) != 0 {
		t.Errorf("empty chain = %v, %v", es, err)
	}
	inputs := []gate.AuditEntry{
		{Kind: "rules", TenantID: "acme", Actor: "op@acme", At: gateT0, Body: json.RawMessage(`{"b":1, "a":2}`)},
		{Kind: "session", TenantID: "globex", SessionID: "s1", At: gateAt(time.Second).Add(789), Body: json.RawMessage("{ \"x\" :\t[1 ,2]\n}")},
		{Kind: "restart", At: gateAt(2 * time.Second)},
		{Kind: "note", TenantID: "acme", SessionID: "s1", ActionID: "a1", Actor: "op", At: gateAt(3 * time.Second), Body: json.RawMessage(`"\u00e9 é"`)},
		// Seq, PrevHash and Hash are the store's to set.
		{Kind: "forged", TenantID: "acme", At: gateAt(4 * time.Second), Seq: 99, PrevHash: "x", Hash: "y", Body: json.RawMessage(`{}`)},
	}
	var appended []gate.AuditEntry
	for _, in := range inputs {
		e, err := s.AppendAudit(ctx, in)
		if err != nil {
			t.Fatalf("AppendAudit: %v", err)
		}
		appended = append(appended, e)
	}
	read := readAudit(t, s)
	if len(read) != len(inputs) {
		t.Fatalf("%d entries, want %d", len(read), len(inputs))
	}
	prev := gate.AuditGenesis
	for i, in := range inputs {
		want := in
		want.Seq, want.At, want.PrevHash = int64(i+1), in.At.UTC().Truncate(gate.AuditTime), prev
		want.Hash = gate.ChainHash(prev, want)
		prev = want.Hash
		if d := gocmp.Diff(want, appended[i]); d != "" {
			t.Errorf("AppendAudit %d returned (-want +got):\n%s", i, d)
		}
		if d := gocmp.Diff(want, read[i]); d != "" {
			t.Errorf("entry %d read back (-want +got):\n%s", i, d)
		}
		// The body is hashed as stored: it must come back byte for byte.
		if !bytes.Equal(in.Body, read[i].Body) {
			t.Errorf("entry %d body = %q, want %q verbatim", i, read[i].Body, in.Body)
		}
	}
	tests := []struct {
		name  string
		after int64
		limit int
		want  []int64
	}{
		{"from the start", 0, 2, []int64{1, 2}},
		{"middle", 2, 2, []int64{3, 4}},
		{"tail", 4, 10, []int64{5}},
		{"past the end", 5, 10, []int64{}},
		{"default limit", 0, 0, []int64{1, 2, 3, 4, 5}},
		{"over the maximum", 1, 5000, []int64{2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := s.Audit(ctx, tt.after, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			seqs := []int64{}
			for _, e := range es {
				seqs = append(seqs, e.Seq)
			}
			if !slices.Equal(seqs, tt.want) {
				t.Errorf("Audit(%d, %d) = seqs %v, want %v", tt.after, tt.limit, seqs, tt.want)
			}
		})
	}
	// A batch is appended in order, chained after what is there.
	batch, err := s.AppendAudits(ctx, []gate.AuditEntry{
		{Kind: "tool_call", TenantID: "acme", ActionID: "c1", At: gateAt(5 * time.Second), Body: json.RawMessage(`{"tool":"x"}`)},
		{Kind: "tool_call", TenantID: "acme", ActionID: "c2", At: gateAt(6 * time.Second)},
	})
	if err != nil {
		t.Fatalf("AppendAudits: %v", err)
	}
	if len(batch) != 2 || batch[0].Seq != 6 || batch[1].Seq != 7 || batch[0].PrevHash != prev || batch[1].PrevHash != batch[0].Hash ||
		batch[1].Hash != gate.ChainHash(batch[0].Hash, batch[1]) {
		t.Fatalf("AppendAudits = %+v", batch)
	}
	if got := readAudit(t, s); len(got) != 7 || got[6].ActionID != "c2" {
		t.Fatalf("after the batch, %d entries", len(got))
	}
	if none, err := s.AppendAudits(ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("an empty batch: %v, %v", none, err)
	}
	// An entry without a time is stamped by the store.
	before := time.Now().Add(-time.Second)
	e, err := s.AppendAudit(ctx, gate.AuditEntry{Kind: "stamped"})
	if err != nil {
		t.Fatal(err)
	}
	if e.At.Before(before) || e.At.After(time.Now().Add(time.Second)) || e.At.Location() != time.UTC || e.At.Nanosecond()%1000 != 0 {
		t.Errorf("stamped entry's At = %v", e.At)
	}
	readAudit(t, s)
}

// testGateAuditConcurrent appends from many goroutines at once, through
// AppendAudit and through audited action writes: the chain must take them
// one after another, with no gap, fork or duplicate.
func testGateAuditConcurrent(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	const goroutines, each = 12, 8
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			var cur gate.ActionRecord
			for i := range each {
				tag := fmt.Sprintf(`{"g":%d, "i":%d}`, g, i)
				var err error
				switch {
				case g%2 == 0:
					_, err = s.AppendAudit(ctx, gate.AuditEntry{Kind: "op", TenantID: "acme", At: gateAt(time.Duration(i) * time.Second), Body: json.RawMessage(tag)})
				case i == 0:
					cur, err = s.WriteAction(ctx, gate.ActionWrite{Record: gateAction("acme", fmt.Sprintf("s%d", g), "a1"), Now: gateT0,
						Audit: &gate.AuditEntry{Kind: "verdict", TenantID: "acme", Body: json.RawMessage(tag)}})
				default:
					cur, err = s.WriteAction(ctx, gate.ActionWrite{Record: cur, ExpectVersion: cur.Version, Now: gateAt(time.Duration(i) * time.Second),
						Audit: &gate.AuditEntry{Kind: "step", TenantID: "acme", Body: json.RawMessage(tag)}})
				}
				if err != nil {
					t.Errorf("goroutine %d append %d: %v", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	entries := readAudit(t, s) // verifies seq 1..n, the links and the head
	if len(entries) != goroutines*each {
		t.Fatalf("%d entries, want %d", len(entries), goroutines*each)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[string(e.Body)] {
			t.Errorf("body %s appended twice", e.Body)
		}
		seen[string(e.Body)] = true
	}
}

func testGateHeartbeat(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	beats := []time.Time{gateT0, gateAt(time.Minute).Add(456), gateAt(time.Hour)}
	want := []time.Time{{}, gateT0, gateAt(time.Minute)}
	for i, at := range beats {
		prev, err := s.Heartbeat(ctx, at)
		if err != nil {
			t.Fatalf("Heartbeat %d: %v", i, err)
		}
		if !prev.Equal(want[i]) || (!prev.IsZero() && prev.Location() != time.UTC) {
			t.Errorf("Heartbeat %d returned %v, want %v (UTC)", i, prev, want[i])
		}
	}
}

func testGateCountActions(t *testing.T, s gate.Store) {
	ctx := ctxT(t)
	count := func(state gate.ActionState, wantN int, wantOldest time.Time) {
		t.Helper()
		n, oldest, err := s.CountActions(ctx, state)
		if err != nil {
			t.Fatalf("CountActions(%s): %v", state, err)
		}
		if n != wantN || !oldest.Equal(wantOldest) {
			t.Errorf("CountActions(%s) = %d, %v; want %d, %v", state, n, oldest, wantN, wantOldest)
		}
	}
	count(gate.ActionHeld, 0, time.Time{})
	for _, sd := range []struct {
		tenant, action string
		state          gate.ActionState
		at             time.Duration
	}{
		{"acme", "approved", gate.ActionApproved, 0}, // older, but no longer held
		{"globex", "h2", gate.ActionHeld, 2 * time.Minute},
		{"acme", "h1", gate.ActionHeld, time.Minute},
		{"acme", "h3", gate.ActionHeld, 3 * time.Minute},
	} {
		r := gateAction(sd.tenant, "s1", sd.action)
		r.State = sd.state
		mustWrite(t, s, gate.ActionWrite{Record: r, Now: gateAt(sd.at)})
	}
	count(gate.ActionHeld, 3, gateAt(time.Minute))
	count(gate.ActionApproved, 1, gateT0)
	count(gate.ActionExpired, 0, time.Time{})
}
