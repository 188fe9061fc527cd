package sqlstore

import (
	"errors"
	"math"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/gate"
)

func TestRunningTotal(t *testing.T) {
	tests := []struct {
		name string
		// The series' amounts; the window is the amounts from window on.
		amounts []float64
		window  int
		want    gate.LedgerTotal
	}{
		{"empty", nil, 0, gate.LedgerTotal{}},
		{"whole series", []float64{1.5, 2.25, -0.75}, 0, gate.LedgerTotal{Count: 3, Sum: 3}},
		{"empty window", []float64{1.5, 2.25}, 2, gate.LedgerTotal{}},
		// float64 alone resolves 1.2e-4 at 10^12 and 0.125 at 10^15:
		// the window's cents survive only through Lo.
		{"cents after a trillion", []float64{1e12, 0.01, 0.02, 0.07}, 1, gate.LedgerTotal{Count: 3, Sum: 0.1}},
		{"cents after a quadrillion", []float64{1e15, 0.01, 0.02, 0.07}, 1, gate.LedgerTotal{Count: 3, Sum: 0.1}},
		{"cents among a trillion's cents", []float64{333_333_333_333.33, 333_333_333_333.33, 0.01, 333_333_333_333.34, 0.02}, 2,
			gate.LedgerTotal{Count: 3, Sum: 333_333_333_333.37}},
		{"a trillion cancelled", []float64{1e12, 0.01, -1e12, 0.02}, 1, gate.LedgerTotal{Count: 3, Sum: 0.03 - 1e12}},
		{"cents after cancelling", []float64{1e12, -1e12, 0.01, 0.02}, 2, gate.LedgerTotal{Count: 2, Sum: 0.03}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var head, base RunningTotal
			for i, a := range tt.amounts {
				if i == tt.window {
					base = head
				}
				if err := head.Add(a); err != nil {
					t.Fatal(err)
				}
			}
			if tt.window == len(tt.amounts) {
				base = head
			}
			got := head.Sub(base)
			// Within a few of the result's last digits: the cents, where
			// float64 resolves them.
			ulp := math.Nextafter(math.Abs(tt.want.Sum), math.Inf(1)) - math.Abs(tt.want.Sum)
			if got.Count != tt.want.Count || math.Abs(got.Sum-tt.want.Sum) > 1e-12+4*ulp {
				t.Errorf("window total %+v, want %+v", got, tt.want)
			}
			if tt.window == 0 && head.Total() != got {
				t.Errorf("Total %+v, want the window's %+v", head.Total(), got)
			}
		})
	}
}

func TestRunningTotalRefuses(t *testing.T) {
	tests := []struct {
		name   string
		before []float64
		amount float64
	}{
		{"NaN", nil, math.NaN()},
		{"+Inf", []float64{1}, math.Inf(1)},
		{"-Inf", nil, math.Inf(-1)},
		{"overflow", []float64{1e308}, 1e308},
		{"negative overflow", []float64{-1e308, -5e307}, -5e307},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r RunningTotal
			for _, a := range tt.before {
				if err := r.Add(a); err != nil {
					t.Fatal(err)
				}
			}
			was := r
			if err := r.Add(tt.amount); !errors.Is(err, gate.ErrLedgerAmount) {
				t.Errorf("Add(%v) = %v, want ErrLedgerAmount", tt.amount, err)
			}
			if r != was {
				t.Errorf("a refused Add moved the total from %+v to %+v", was, r)
			}
		})
	}
	// Up to the edge of the range is fine.
	var r RunningTotal
	if err := r.Add(math.MaxFloat64); err != nil {
		t.Errorf("Add(MaxFloat64) = %v", err)
	}
}

func TestLedgerSeries(t *testing.T) {
	e := func(tenant, typ, subject string) gate.LedgerEntry {
		return gate.LedgerEntry{TenantID: tenant, ActionType: typ, Subject: subject}
	}
	subjects, wides := LedgerSeries([]gate.LedgerEntry{
		e("b", "refund", "c-2"), e("a", "refund", "c-9"), e("b", "refund", "c-1"), e("b", "refund", "c-2"),
		e("a", "payment", ""), e("a", "refund", "C-9"),
	})
	wantSubjects := []SubjectSeries{{"a", "payment", ""}, {"a", "refund", "C-9"}, {"a", "refund", "c-9"}, {"b", "refund", "c-1"}, {"b", "refund", "c-2"}}
	wantWides := []WideSeries{{"a", "payment"}, {"a", "refund"}, {"b", "refund"}}
	if d := gocmp.Diff(wantSubjects, subjects); d != "" {
		t.Errorf("subject series (-want +got):\n%s", d)
	}
	if d := gocmp.Diff(wantWides, wides); d != "" {
		t.Errorf("action type series (-want +got):\n%s", d)
	}
}

func TestFileLedger(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	us := func(d time.Duration) int64 { return Micros(at(d)) }
	e := func(subject string, amount float64, d time.Duration) gate.LedgerEntry {
		return gate.LedgerEntry{TenantID: "acme", ActionType: "refund", Subject: subject, Amount: amount, At: at(d)}
	}
	heads := NewLedgerHeads()
	heads.Subject[SubjectSeries{"acme", "refund", "c-1"}] = LedgerHead{RunningTotal{N: 2, Hi: 30}, us(time.Hour)}
	heads.Wide[WideSeries{"acme", "refund"}] = LedgerHead{RunningTotal{N: 5, Hi: 100}, us(2 * time.Hour)}
	filed, err := heads.File([]gate.LedgerEntry{
		e("c-1", 1, 3*time.Hour),   // after both heads: its own time
		e("c-2", 2, 0),             // a new subject, behind the action type's head
		e("c-1", 4, 3*time.Hour-1), // behind the first entry
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []FiledEntry{
		{e("c-1", 1, 3*time.Hour), us(3 * time.Hour), RunningTotal{N: 3, Hi: 31}, RunningTotal{N: 6, Hi: 101}},
		{e("c-2", 2, 0), us(3 * time.Hour), RunningTotal{N: 1, Hi: 2}, RunningTotal{N: 7, Hi: 103}},
		{e("c-1", 4, 3*time.Hour-1), us(3 * time.Hour), RunningTotal{N: 4, Hi: 35}, RunningTotal{N: 8, Hi: 107}},
	}
	if d := gocmp.Diff(want, filed); d != "" {
		t.Errorf("filed (-want +got):\n%s", d)
	}
	wantHeads := LedgerHeads{
		Subject: map[SubjectSeries]LedgerHead{
			{"acme", "refund", "c-1"}: {RunningTotal{N: 4, Hi: 35}, us(3 * time.Hour)},
			{"acme", "refund", "c-2"}: {RunningTotal{N: 1, Hi: 2}, us(3 * time.Hour)},
		},
		Wide: map[WideSeries]LedgerHead{{"acme", "refund"}: {RunningTotal{N: 8, Hi: 107}, us(3 * time.Hour)}},
	}
	if d := gocmp.Diff(wantHeads, heads); d != "" {
		t.Errorf("heads (-want +got):\n%s", d)
	}
	if _, err := heads.File([]gate.LedgerEntry{e("c-1", 1, 0), e("c-3", math.NaN(), 0)}); !errors.Is(err, gate.ErrLedgerAmount) {
		t.Errorf("File with a NaN amount = %v, want ErrLedgerAmount", err)
	}
}
