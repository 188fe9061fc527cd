package a2astore

import (
	"crypto/rand"
	"encoding/base64"

	"novaos.dev/novaos/a2a"
)

// TaskNotification returns the push notification for a task written whole
// (TaskStore.Create, Update, or a config's first notification): a
// StreamResponse carrying the task, made of the bytes EncodeTask returned
// without decoding them again.
func TaskNotification(body []byte) []byte {
	out := make([]byte, 0, len(body)+len(`{"task":}`))
	out = append(out, `{"task":`...)
	out = append(out, body...)
	return append(out, '}')
}

// AppendNotifications returns the push notifications an append queues: one
// per event, the bytes EncodeAppend returned for them, or, when it returned
// none because the append was compacted, the events encoded now.
func AppendNotifications(events []*a2a.StreamResponse, bodies [][]byte) ([][]byte, error) {
	if len(bodies) == len(events) {
		return bodies, nil
	}
	out := make([][]byte, len(events))
	for i, ev := range events {
		var err error
		if out[i], err = EncodeEvent(ev); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NewLease returns a fresh claim token for a push outbox's claim.
func NewLease() string {
	b := make([]byte, 12)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
