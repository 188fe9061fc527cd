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
