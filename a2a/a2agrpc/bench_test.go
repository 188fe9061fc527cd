package a2agrpc_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
)

// benchTask is a task with a 20-message history and the artifacts of
// fullTask: the size of a real multi-turn conversation.
func benchTask() *a2a.Task {
	t := fullTask()
	t.History = nil
	for i := range 20 {
		role := a2a.RoleUser
		if i%2 == 1 {
			role = a2a.RoleAgent
		}
		t.History = append(t.History, a2a.Message{
			MessageID: fmt.Sprintf("m-%02d", i), ContextID: t.ContextID, TaskID: t.ID, Role: role,
			Parts:    []a2a.Part{a2a.TextPart(fmt.Sprintf("Turn %d: could you summarise the quarterly numbers and list the top three risks?", i))},
			Metadata: map[string]any{"turn": float64(i), "lang": "en"},
		})
	}
	return t
}

// BenchmarkTask sets the gRPC path for one task (conversion plus protobuf)
// beside the JSON-RPC path (the a2a package's encoder and reader), in the
// same run, both ways.
func BenchmarkTask(b *testing.B) {
	task := benchTask()
	js, err := a2a.AppendTask(nil, task)
	if err != nil {
		b.Fatal(err)
	}
	pb, err := a2agrpc.TaskToPB(task)
	if err != nil {
		b.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode/json", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		buf := make([]byte, 0, len(js))
		for b.Loop() {
			if _, err := a2a.AppendTask(buf[:0], task); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/grpc", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		for b.Loop() {
			pb, err := a2agrpc.TaskToPB(task)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := proto.Marshal(pb); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.SetBytes(int64(len(js)))
		for b.Loop() {
			var t a2a.Task
			if err := a2a.Unmarshal(js, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/grpc", func(b *testing.B) {
		b.SetBytes(int64(len(wire)))
		for b.Loop() {
			var p a2apb.Task
			if err := proto.Unmarshal(wire, &p); err != nil {
				b.Fatal(err)
			}
			if _, err := a2agrpc.TaskFromPB(&p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
