package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
)

// Reads run freely and reach the next write as evidence, with their
// provenance, the agent's reasoning beside them.
func TestReadEvidenceReachesTheWrite(t *testing.T) {
	f := newFake(t, map[string]handler{"POST /actions": passClaimed(1), "POST /acks": ackOK})
	c, _ := f.client(&gate.ClientOptions{Evidence: gate.EvidenceLimits{MaxItemBytes: 64}})
	lookup := gate.Read("lookup_customer", func(ctx context.Context, id string) (map[string]any, error) {
		if id == "missing" {
			return nil, errors.New("no such customer")
		}
		return map[string]any{"id": id, "disputes": 2}, nil
	})
	history := gate.Read("history", func(ctx context.Context, id string) (string, error) {
		return strings.Repeat("x", 200), nil
	})
	write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "issue_refund", Context: refundContext},
		func(ctx context.Context, a refund) (string, error) { return "ok", nil })
	err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
		if r, err := lookup(ctx, "cust-1"); err != nil || r["disputes"] != 2 {
			t.Fatalf("the read's own answer changed: %v %v", r, err)
		}
		if _, err := lookup(ctx, "missing"); err == nil {
			t.Fatal("the read's error was swallowed")
		}
		history(ctx, "cust-1")
		if err := gate.SetReasoning(ctx, "verified the double charge"); err != nil {
			return err
		}
		_, err := write(ctx, refund{Customer: "cust-1", Amount: 5})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	a := action(t, f.last("POST /actions"))
	if a.Reasoning != "verified the double charge" || len(a.Evidence) != 3 {
		t.Fatalf("reasoning %q, %d evidence items", a.Reasoning, len(a.Evidence))
	}
	e0, e1, e2 := a.Evidence[0], a.Evidence[1], a.Evidence[2]
	if e0.Tool != "lookup_customer" || string(e0.Arguments) != `"cust-1"` || string(e0.Result) != `{"disputes":2,"id":"cust-1"}` || e0.Error != "" {
		t.Fatalf("first read: %+v", e0)
	}
	if e1.Error != "no such customer" || e1.Result != nil {
		t.Fatalf("failed read: %+v", e1)
	}
	// Cut to the item bound exactly: as much of the read as fits.
	if !e2.Provenance.Truncated || e2.Provenance.OriginalBytes != 202+len(`"cust-1"`) || len(e2.Result) != 64 {
		t.Fatalf("long read: %+v (%d bytes)", e2.Provenance, len(e2.Result))
	}
	var cut string
	if err := json.Unmarshal(e2.Result, &cut); err != nil || !strings.HasPrefix(cut, `"xxx`) {
		t.Fatalf("a cut result must stay JSON: %s", e2.Result)
	}
	for i, e := range a.Evidence {
		if e.Provenance.Sequence != i+1 || e.Provenance.CallID == "" || e.Provenance.ObservedAt.IsZero() {
			t.Fatalf("provenance %d: %+v", i, e.Provenance)
		}
	}
}

// The buffer keeps the newest reads within its item and byte bounds.
func TestEvidenceBounds(t *testing.T) {
	tests := []struct {
		name    string
		limits  gate.EvidenceLimits
		reads   int
		wantSeq []int
		fail    bool // the reads fail: 3 bytes of arguments and 5 of error
	}{
		{"under the bounds", gate.EvidenceLimits{MaxItems: 10}, 3, []int{1, 2, 3}, false},
		{"item bound drops the oldest", gate.EvidenceLimits{MaxItems: 2}, 5, []int{4, 5}, false},
		{"item bound at the count", gate.EvidenceLimits{MaxItems: 3}, 3, []int{1, 2, 3}, false},
		// Each read is 3 bytes of arguments and 5 of result: 8 bytes.
		{"byte bound drops the oldest", gate.EvidenceLimits{MaxBytes: 20}, 5, []int{4, 5}, false},
		{"byte bound counts failed reads", gate.EvidenceLimits{MaxBytes: 20}, 5, []int{4, 5}, true},
		{"byte bound at a whole read", gate.EvidenceLimits{MaxBytes: 16}, 5, []int{4, 5}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, map[string]handler{"POST /actions": passClaimed(1), "POST /acks": ackOK})
			c, _ := f.client(&gate.ClientOptions{Evidence: tt.limits})
			read := gate.Read("r", func(ctx context.Context, n int) (string, error) {
				if tt.fail {
					return "", errors.New("boom!")
				}
				return "abc", nil
			})
			write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
				func(ctx context.Context, a refund) (string, error) { return "", nil })
			err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
				for i := range tt.reads {
					read(ctx, 100+i)
				}
				_, err := write(ctx, refund{Customer: "c", Amount: 1})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, e := range action(t, f.last("POST /actions")).Evidence {
				got = append(got, e.Provenance.Sequence)
			}
			if !equalInts(got, tt.wantSeq) {
				t.Fatalf("buffered seqs %v, want %v", got, tt.wantSeq)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A read outside any session runs and buffers nothing.
func TestReadOutsideSession(t *testing.T) {
	read := gate.Read("r", func(ctx context.Context, n int) (int, error) { return n * 2, nil })
	if r, err := read(context.Background(), 21); r != 42 || err != nil {
		t.Fatal(r, err)
	}
}

// A read whose JSON is exactly the item bound is kept whole; a byte more
// is cut to the bound.
func TestEvidenceItemBound(t *testing.T) {
	for _, tc := range []struct {
		xs  int // the result is a string of xs x's: xs+2 bytes of JSON
		cut bool
	}{{62, false}, {63, true}} {
		f := newFake(t, map[string]handler{"POST /actions": passClaimed(1), "POST /acks": ackOK})
		c, _ := f.client(&gate.ClientOptions{Evidence: gate.EvidenceLimits{MaxItemBytes: 64}})
		read := gate.Read("r", func(ctx context.Context, _ int) (string, error) { return strings.Repeat("x", tc.xs), nil })
		write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
			func(ctx context.Context, a refund) (string, error) { return "", nil })
		if err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
			read(ctx, 1)
			_, err := write(ctx, refund{Customer: "c", Amount: 1})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		e := action(t, f.last("POST /actions")).Evidence[0]
		if e.Provenance.Truncated != tc.cut || len(e.Result) > 64 || (!tc.cut && len(e.Result) != tc.xs+2) {
			t.Fatalf("%d bytes of JSON: truncated %v, kept %d bytes", tc.xs+2, e.Provenance.Truncated, len(e.Result))
		}
	}
}

// A write counts as one of the session's tool calls: a read after it
// has the sequence number after the write's.
func TestWriteCountsAsAToolCall(t *testing.T) {
	f := newFake(t, map[string]handler{"POST /actions": passClaimed(1), "POST /acks": ackOK})
	c, _ := f.client(nil)
	read := gate.Read("r", func(ctx context.Context, n int) (int, error) { return n, nil })
	write := gate.Write(c, gate.WriteSpec[refund]{ActionType: "x", Context: refundContext},
		func(ctx context.Context, a refund) (string, error) { return "", nil })
	if err := c.Run(context.Background(), fresh, func(ctx context.Context) error {
		read(ctx, 1)
		if _, err := write(ctx, refund{Customer: "c", Amount: 1}); err != nil {
			return err
		}
		read(ctx, 2)
		_, err := write(ctx, refund{Customer: "c", Amount: 2})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, e := range action(t, f.last("POST /actions")).Evidence {
		got = append(got, e.Provenance.Sequence)
	}
	if !equalInts(got, []int{1, 3}) {
		t.Fatalf("the second write's evidence has seqs %v, want [1 3] (the first write was call 2)", got)
	}
}
