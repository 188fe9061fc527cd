package bench

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsAreContiguous(t *testing.T) {
	for i := range nBuckets - 1 {
		hi := bucketHigh(i)
		if got := bucketOf(hi); got != i {
			t.Fatalf("bucketOf(bucketHigh(%d)=%d) = %d", i, hi, got)
		}
		if got := bucketOf(hi + 1); got != i+1 {
			t.Fatalf("bucketOf(%d) = %d, want %d", hi+1, got, i+1)
		}
	}
	if got := bucketHigh(nBuckets - 1); got != ^uint64(0) {
		t.Fatalf("last bucket ends at %d, want max uint64", got)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	tests := []struct {
		name   string
		values []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one value", []time.Duration{42}, 0.99, 42},
		{"exact small values", []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.5, 5},
		{"p0 is the minimum", []time.Duration{7, 3, 9}, 0, 3},
		{"p100 is the maximum exactly", []time.Duration{time.Millisecond, 1234567 * time.Nanosecond}, 1, 1234567},
		{"large value rounds up within a bucket", []time.Duration{1000, 1000, 2000}, 0.5, 1003},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Histogram
			for _, v := range tc.values {
				h.Record(v)
			}
			if got := h.Quantile(tc.q); got != tc.want {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
}

// The point of the layout: against an exact sorted sample, any quantile is
// off by less than 1/subCount, and never below the truth.
func TestHistogramRelativeError(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]time.Duration, 20000)
	for i := range vals {
		// Log-uniform from 1µs to ~1s, like real latencies.
		vals[i] = time.Duration(float64(int64(1000)<<r.IntN(20)) * (1 + r.Float64()))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		exact := vals[int(q*float64(len(vals))+0.999999)-1]
		got := h.Quantile(q)
		if got < exact || float64(got-exact) > float64(exact)/subCount {
			t.Errorf("q=%v: got %v, exact %v", q, got, exact)
		}
	}
	if h.Max() != vals[len(vals)-1] || h.Min() != vals[0] {
		t.Errorf("min/max = %v/%v, want %v/%v", h.Min(), h.Max(), vals[0], vals[len(vals)-1])
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i * 997)
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{})
	if m.Count() != all.Count() || m.Max() != all.Max() || m.Min() != all.Min() || m.Mean() != all.Mean() {
		t.Fatalf("merged count/min/max/mean %d/%v/%v/%v, want %d/%v/%v/%v",
			m.Count(), m.Min(), m.Max(), m.Mean(), all.Count(), all.Min(), all.Max(), all.Mean())
	}
	for _, q := range []float64{0.1, 0.5, 0.99} {
		if m.Quantile(q) != all.Quantile(q) {
			t.Errorf("q=%v: merged %v, direct %v", q, m.Quantile(q), all.Quantile(q))
		}
	}
}

func TestHistogramNegativeIsZero(t *testing.T) {
	var h Histogram
	h.Record(-time.Second)
	if h.Max() != 0 || h.Quantile(0.5) != 0 || h.Count() != 1 {
		t.Fatalf("negative duration recorded as max %v p50 %v count %d", h.Max(), h.Quantile(0.5), h.Count())
	}
}
