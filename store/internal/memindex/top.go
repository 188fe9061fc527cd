package memindex

import "slices"

// ranked is a slot offered to topSlots.
type ranked struct {
	score float64
	seq   int64
	slot  uint32
}

// worse orders results: by score, and among equal scores the newer memory
// is worse, so ties go to the older one whatever order slots are offered
// in.
func worse(a, b ranked) bool {
	return a.score < b.score || a.score == b.score && a.seq > b.seq
}

// topSlots keeps the k best slots offered (a min-heap on worse).
type topSlots struct {
	k int
	h []ranked
}

func newTop(k int) *topSlots { return &topSlots{k: k} }

func (t *topSlots) offer(slot uint32, seq int64, score float64) {
	r := ranked{score, seq, slot}
	if len(t.h) < t.k {
		t.h = append(t.h, r)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if t.k == 0 || !worse(t.h[0], r) {
		return
	}
	t.h[0] = r
	for i := 0; ; {
		l, least := 2*i+1, i
		if l < len(t.h) && worse(t.h[l], t.h[least]) {
			least = l
		}
		if l+1 < len(t.h) && worse(t.h[l+1], t.h[least]) {
			least = l + 1
		}
		if least == i {
			break
		}
		t.h[i], t.h[least] = t.h[least], t.h[i]
		i = least
	}
}

// sorted returns the kept slots, best first.
func (t *topSlots) sorted() []ranked {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b ranked) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return out
}
