package bench

import (
	"math"
	"math/bits"
	"time"
)

// The histogram keeps values below 2*subCount exactly and every larger
// value in one of subCount buckets per power of two, so a reported quantile
// is at most 1/subCount (under 1%) above the true one, whatever the range,
// in a fixed 58 KiB per histogram. That is what lets every worker record
// every latency without locks or growing memory, unlike a sorted sample.
const (
	subBits  = 7
	subCount = 1 << subBits
	nBuckets = (64-subBits)*subCount + subCount
)

// Histogram records durations. The zero value is ready to use; it is not
// safe for concurrent use (give each goroutine its own and [Histogram.Merge]).
type Histogram struct {
	counts []uint64
	n      uint64
	sum    float64
	min    int64
	max    int64
}

func bucketOf(v uint64) int {
	if v < 2*subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bucketHigh is the largest value that falls into bucket i.
func bucketHigh(i int) uint64 {
	if i < 2*subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	mant := uint64(i%subCount + subCount)
	return mant<<shift + (1<<shift - 1)
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, nBuckets)
	}
	v := max(int64(d), 0)
	h.counts[bucketOf(uint64(v))]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += float64(v)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if h.counts == nil {
		h.counts = make([]uint64, nBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of values recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest value recorded, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest value recorded, exactly.
func (h *Histogram) Min() time.Duration { return time.Duration(h.min) }

// Mean is the exact arithmetic mean.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(math.Round(h.sum / float64(h.n)))
}

// Quantile returns the value at or below which a fraction q (0..1) of the
// recorded values fall, rounded up to its bucket's upper bound and never
// above Max. It is 0 for an empty histogram.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(int64(bucketHigh(i)), h.max))
		}
	}
	return time.Duration(h.max)
}
