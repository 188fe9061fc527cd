package adapter

import "testing"

// The acknowledgement stops before an event that is not settled, and,
// once started (a polling source), before one that never came: events
// are numbered without gaps.
func TestAckTrackerGaps(t *testing.T) {
	tests := []struct {
		name    string
		start   int64 // the consumer's acknowledged seq; -1: not started (a gateway)
		deliver []int64
		hold    []int64
		want    int64
		ok      bool
	}{
		{"in order", 4, []int64{5, 6, 7}, nil, 7, true},
		{"an unsettled one", 4, []int64{5, 6, 7}, []int64{6}, 5, true},
		{"a lost page", 4, []int64{5, 8, 9}, nil, 5, true},
		{"sent to a previous process", 4, []int64{7, 8}, nil, 0, false},
		{"the lost ones came again", 4, []int64{7, 8, 5, 6}, nil, 8, true},
		{"not started", -1, []int64{12, 15}, nil, 15, true},
		{"acknowledged ones again", 8, []int64{6, 7, 8, 9}, nil, 9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr ackTracker
			if tc.start >= 0 {
				tr.start(tc.start)
			}
			for _, seq := range tc.deliver {
				tr.deliver(seq)
			}
			for _, seq := range tc.hold {
				tr.hold(seq, "event")
			}
			if got, ok := tr.ackable(); ok != tc.ok || ok && got != tc.want {
				t.Fatalf("ackable %d %v; want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// ackStep is one call on an ackTracker.
type ackStep func(*ackTracker)

func ackStart(acked int64) ackStep { return func(t *ackTracker) { t.start(acked) } }
func ackDeliver(seqs ...int64) ackStep {
	return func(t *ackTracker) {
		for _, s := range seqs {
			t.deliver(s)
		}
	}
}
func ackHold(seq int64) ackStep   { return func(t *ackTracker) { t.hold(seq, "event") } }
func ackSettle(seq int64) ackStep { return func(t *ackTracker) { t.settle(seq) } }
func ackAcked(seq int64) ackStep  { return func(t *ackTracker) { t.acked(seq) } }

// The acknowledgement through a sequence of calls: each case names the
// exact seq acknowledged next, or that there is none, so that an event
// is acknowledged only once it is settled and never skipped.
func TestAckTrackerSteps(t *testing.T) {
	tests := []struct {
		name  string
		steps []ackStep
		want  int64
		ok    bool
	}{
		{"nothing delivered", nil, 0, false},
		{"started, nothing delivered", []ackStep{ackStart(4)}, 4, false},
		{"a start after a delivery is ignored", []ackStep{ackDeliver(5), ackStart(3)}, 5, true},
		{"a second start is ignored", []ackStep{ackStart(4), ackStart(2), ackDeliver(5)}, 5, true},
		{"a start after a gateway's settled seq is ignored", []ackStep{ackDeliver(9), ackAcked(9), ackStart(3), ackDeliver(12)}, 12, true},
		{"seq 0 is no event", []ackStep{ackStart(4), ackDeliver(5), ackAcked(5), ackDeliver(0)}, 5, false},
		{"a negative seq is no event", []ackStep{ackDeliver(3), ackAcked(3), ackDeliver(-1)}, 3, false},
		{"a held event delivered again stays held", []ackStep{ackStart(4), ackDeliver(5), ackHold(5), ackDeliver(6, 5)}, 4, false},
		{"a held event settles", []ackStep{ackStart(4), ackDeliver(5), ackHold(5), ackDeliver(6), ackSettle(5)}, 6, true},
		{"settled up to a held one", []ackStep{ackDeliver(5, 6, 7), ackHold(7)}, 6, true},
		{"acknowledged: nothing new", []ackStep{ackDeliver(5, 6), ackAcked(6)}, 6, false},
		{"acknowledged part way", []ackStep{ackDeliver(5, 6), ackAcked(5)}, 6, true},
		{"an older acknowledgement keeps the newer", []ackStep{ackDeliver(5, 6), ackAcked(6), ackAcked(5)}, 6, false},
		{"the last acknowledged comes again", []ackStep{ackStart(8), ackDeliver(8)}, 8, true},
		{"an acknowledged one comes again", []ackStep{ackStart(8), ackDeliver(6)}, 8, true},
		{"a gap then the missing one", []ackStep{ackStart(4), ackDeliver(6)}, 4, false},
		{"a gap filled", []ackStep{ackStart(4), ackDeliver(6, 5)}, 6, true},
		{"two gaps, one filled", []ackStep{ackStart(4), ackDeliver(6, 8, 5)}, 6, true},
		{"a gateway has no gaps", []ackStep{ackDeliver(3, 9)}, 9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr ackTracker
			for _, s := range tc.steps {
				s(&tr)
			}
			if got, ok := tr.ackable(); got != tc.want || ok != tc.ok {
				t.Fatalf("ackable %d %v; want %d %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// Mutants left (scripts/mutate ./adapter runloop.go), equivalent: in
// deliver, seq > t.delivered as >= assigns the value delivered holds
// already; in ackable, seq-1 < to as <= assigns the value to holds.
