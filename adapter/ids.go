package adapter

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// NewID returns an RFC 9562 version-7 UUID. Ids from one process are
// strictly increasing, even within a millisecond or when the clock steps
// back: the 12 bits after the timestamp count on, and a count that runs
// out borrows the next millisecond.
func NewID() string { return ids.next(time.Now()) }

var ids idSource

type idSource struct {
	mu  sync.Mutex
	ms  uint64
	ctr uint16 // 12 bits
}

func (s *idSource) next(now time.Time) string {
	var u [16]byte
	_, _ = rand.Read(u[8:]) // crypto/rand.Read never fails on supported platforms
	ms := uint64(now.UnixMilli())
	s.mu.Lock()
	if ms > s.ms {
		s.ms = ms
		var r [2]byte
		_, _ = rand.Read(r[:])
		s.ctr = binary.BigEndian.Uint16(r[:]) & 0x07ff // start low: room to count on
	} else {
		s.ctr++
		if s.ctr > 0x0fff {
			s.ms++
			s.ctr = 0
		}
	}
	ms, ctr := s.ms, s.ctr
	s.mu.Unlock()
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | byte(ctr>>8)
	u[7] = byte(ctr)
	u[8] = u[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:], u[10:])
	return string(out[:])
}
