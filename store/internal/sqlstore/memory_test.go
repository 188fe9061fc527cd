package sqlstore

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/memory"
)

// row is one result row: Scan assigns its values to the destinations in
// order, as a driver does (a nil value sets a pointer destination to nil).
type row []any

func (r row) Scan(dest ...any) error {
	for i, d := range dest {
		v := reflect.ValueOf(d).Elem()
		if r[i] == nil {
			v.SetZero()
			continue
		}
		v.Set(reflect.ValueOf(r[i]))
	}
	return nil
}

func TestMillis(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		in   time.Time
		want time.Time
	}{
		{time.Time{}, time.Time{}},
		{at, at.UTC().Truncate(time.Millisecond)},
	} {
		if got := FromMillis(Millis(tc.in)); !got.Equal(tc.want) || got.Location() != tc.want.Location() {
			t.Errorf("FromMillis(Millis(%v)) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if Millis(time.Time{}) != 0 {
		t.Error("the zero time is not stored as 0")
	}
}

func TestScanMemory(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	conf := 0.5
	var extra string
	for _, tc := range []struct {
		name    string
		row     row
		want    *memory.Memory
		wantSeq int64
	}{
		{"every column", row{int64(7), "m1", "agent", "a1", "text", "semantic", memory.JoinTags([]string{"x", "y"}), "src", "c1", "public", &conf,
			[]byte(`{"k":1}`), int64(3), at.UnixMilli(), at.UnixMilli(), int64(0), "w1", "extra"},
			&memory.Memory{ID: "m1", Partition: memory.Partition{Scope: memory.ScopeAgent, Owner: "a1"}, Content: "text",
				Type: memory.Type("semantic"), Tags: []string{"x", "y"}, Source: "src", ConversationID: "c1", Classification: "public",
				Confidence: &conf, Custom: []byte(`{"k":1}`), Version: 3, CreatedAt: at, UpdatedAt: at, WriteEventID: "w1"}, 7},
		{"NULLs", row{int64(1), "m2", "run", "r1", "t", "episodic", "", "", "", "", nil, nil, int64(1), at.UnixMilli(), at.UnixMilli(),
			at.UnixMilli(), "w2", "extra"},
			&memory.Memory{ID: "m2", Partition: memory.Partition{Scope: memory.ScopeRun, Owner: "r1"}, Content: "t",
				Type: memory.Type("episodic"), Tags: memory.SplitTags(""), Version: 1, CreatedAt: at, UpdatedAt: at, ExpiresAt: at, WriteEventID: "w2"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra = ""
			got, seq, err := ScanMemory(tc.row, &extra)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || seq != tc.wantSeq || extra != "extra" {
				t.Errorf("ScanMemory (-want +got):\n%s\nseq %d, extra %q", diff, seq, extra)
			}
		})
	}
}

func TestScanHintAndProposal(t *testing.T) {
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h, err := ScanHint(row{"t1", "h1", "a1", "u1", "c1", "likes tea", 1, "x", "ctx", "pending", 2, at.UnixMilli(), int64(0)})
	if err != nil {
		t.Fatal(err)
	}
	want := &memory.Hint{Tenant: "t1", ID: "h1", Agent: "a1", User: "u1", ConversationID: "c1", Text: "likes tea",
		Priority: memory.PriorityName(1), Tags: []string{"x"}, Context: "ctx", Status: memory.HintState("pending"), Attempts: 2, SubmittedAt: at}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("ScanHint (-want +got):\n%s", diff)
	}
	if _, err := ScanProposal(row{"t1", "p1", "pending", "", "", []byte("not a memory"), at.UnixMilli(), int64(0)}); err == nil {
		t.Error("ScanProposal accepted a body that is not a memory")
	}
}

func TestScanPushState(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		name string
		row  row
		want *a2asrv.PushDeliveryState
	}{
		{"never attempted", row{"active", 0, 0, "", int64(0), int64(0)}, &a2asrv.PushDeliveryState{State: "active"}},
		{"delivered", row{"active", 1, 2, "boom", at.UnixMilli(), at.UnixMilli()},
			&a2asrv.PushDeliveryState{State: "active", Pending: 1, Attempts: 2, LastError: "boom", LastAttempt: at, LastDelivered: at}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ScanPushState(tc.row)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ScanPushState (-want +got):\n%s", diff)
			}
		})
	}
}
