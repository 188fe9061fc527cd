package postgres

import (
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
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

// A write's notification carries its events or task when they fit, and
// only its versions when they do not; either way it decodes.
func TestNotifyPayload(t *testing.T) {
	db := &DB{instance: "inst"}
	small, _ := a2astore.EncodeEvent(&a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t\n\"1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}})
	big, _ := a2astore.EncodeEvent(&a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t\n\"1",
		Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(strings.Repeat("x", maxNotifyPayload))}}}})
	whole, _ := a2astore.EncodeTask("acme", "", &a2a.Task{ID: "t\n\"1", Status: a2a.TaskStatus{State: a2a.TaskStateCanceled}})
	for _, tc := range []struct {
		name          string
		events        [][]byte
		whole         []byte
		settle        bool
		events2, task bool
	}{
		{name: "events", events: [][]byte{small, small}, events2: true},
		{name: "task", whole: whole, task: true},
		{name: "settlement", whole: whole, settle: true, task: true},
		{name: "too large", events: [][]byte{small, big}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := a2asrv.Version(3 + len(tc.events))
			if tc.whole != nil {
				next = 4
			}
			args := db.notifyArgs("t\n\"1", 3, next, tc.events, tc.whole, tc.settle)
			payload := args[3].(string)
			if len(payload) > maxNotifyPayload {
				t.Fatalf("payload of %d bytes", len(payload))
			}
			n, err := decodeNotification(payload)
			if err != nil {
				t.Fatalf("decode %q: %v", payload, err)
			}
			if want := map[bool]string{false: "inst", true: settledBy}[tc.settle]; n.Instance != want {
				t.Errorf("origin %q, want %q", n.Instance, want)
			}
			c := n.change()
			if c.ID != "t\n\"1" || c.Prev != 3 || c.Version != next {
				t.Errorf("change %+v", c)
			}
			if (c.Events != nil) != tc.events2 || (c.Task != nil) != tc.task {
				t.Errorf("change carries events %v, task %v; want %v, %v", c.Events != nil, c.Task != nil, tc.events2, tc.task)
			}
		})
	}
}
