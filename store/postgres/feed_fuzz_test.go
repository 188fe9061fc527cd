package postgres

import (
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2astore"
)

// A notification is read from a channel any client of the database may
// send on: whatever it holds, decoding must neither panic nor report a
// change that breaks the TaskChange rules.
func FuzzDecodeNotification(f *testing.F) {
	ev, _ := a2astore.EncodeEvent(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}})
	f.Add(`{"i":"x","t":"t","p":1,"v":2,"e":[` + string(ev) + `]}`)
	f.Add(`{"i":"x","t":"t","p":1,"v":2,"w":{"id":"t"}}`)
	f.Add(`{"i":"x","t":"t","p":1,"v":3}`)
	f.Add(`{"t":"t","p":-1,"v":0,"e":[1,2,3]}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, payload string) {
		n, err := decodeNotification(payload)
		if err != nil {
			return
		}
		c := n.change()
		if c.ID == "" || c.Version <= c.Prev {
			t.Fatalf("change %+v from %q", c, payload)
		}
		if c.Events != nil && int(c.Version-c.Prev) != len(c.Events) {
			t.Fatalf("%d events for versions %d..%d", len(c.Events), c.Prev, c.Version)
		}
		if c.Task != nil && c.Task.ID != c.ID {
			t.Fatalf("the task %q for a change of %q", c.Task.ID, c.ID)
		}
	})
}
