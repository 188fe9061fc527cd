package a2a

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewID returns an RFC 9562 version-7 UUID string, for message, task,
// context and artifact ids: 48 bits of Unix milliseconds, then 74 random
// bits. Ids made close in time sort close together, so a database indexing
// them adds each new one next to the last instead of on a random page.
func NewID() string {
	var u [16]byte
	_, _ = rand.Read(u[6:]) // crypto/rand.Read never fails on supported platforms
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
