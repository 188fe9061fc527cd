package execgw

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
	"novaos.dev/novaos/gateway"
)

func textMsg(s string) *a2a.Message { return a2a.NewMessage(a2a.RoleAgent, a2a.TextPart(s)) }

func statusFrame(st a2a.TaskState, m *a2a.Message) *a2a.StreamResponse {
	return &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: st, Message: m}}}
}

func eventsMessage(evs ...map[string]any) *a2a.Message {
	p, _ := hitl.TaggedDataPart(map[string]any{"events": evs}, hitl.MetadataMediaType)
	return a2a.NewMessage(a2a.RoleAgent, p)
}

func eventTypes(evs []gateway.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func TestTurn(t *testing.T) {
	skillMD, _ := hitl.TaggedDataPart(map[string]any{"model": "m1"}, hitl.SkillMetadataMediaType)
	control, _ := hitl.TaggedDataPart(map[string]any{"secret": "platform only"}, hitl.MetadataMediaType)
	cases := []struct {
		name     string
		known    []gateway.Artifact
		max      int
		frames   []*a2a.StreamResponse
		events   []string
		status   gateway.Status
		reason   string
		pause    string
		output   string
		artifact int
	}{
		{name: "task snapshot with an artifact, completed", frames: []*a2a.StreamResponse{{Task: &a2a.Task{ID: "t", ContextID: "c",
			Status:    a2a.TaskStatus{State: a2a.TaskStateCompleted},
			Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("whole"), skillMD, control}}}}}},
			events: []string{"message.delta"}, status: gateway.StatusCompleted, output: "whole", artifact: 1},
		{name: "a continued task's earlier artifacts are not new", known: []gateway.Artifact{{ArtifactID: "a"}},
			frames: []*a2a.StreamResponse{{Task: &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
				Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("old")}}}}},
				statusFrame(a2a.TaskStateCompleted, textMsg("new answer"))},
			status: gateway.StatusCompleted, output: "new answer"},
		{name: "a message answers", frames: []*a2a.StreamResponse{{Message: textMsg("hi")}},
			events: []string{"message.delta"}, status: gateway.StatusCompleted, output: "hi"},
		{name: "progress then failure with a structured error", frames: []*a2a.StreamResponse{
			statusFrame(a2a.TaskStateWorking, textMsg("thinking")),
			statusFrame(a2a.TaskStateWorking, hitl.NewMessage("", &hitl.Progress{Status: hitl.ProgressInProgress, Message: "half way"})),
			statusFrame(a2a.TaskStateFailed, hitl.NewMessage("", &hitl.Error{Type: hitl.ErrorTimeout, Message: "upstream timed out"})),
		}, events: []string{"status", "status"}, status: gateway.StatusFailed, reason: "the agent failed: upstream timed out"},
		{name: "platform events pass through by name, the gateway's own never", frames: []*a2a.StreamResponse{
			statusFrame(a2a.TaskStateWorking, eventsMessage(
				map[string]any{"event": "tool.call", "tool": "search", "call_id": "c1"},
				map[string]any{"event": "done"},
				map[string]any{"event": "status", "status": "COMPLETED"},
				map[string]any{"event": "Bad Name"},
				map[string]any{"event": "debug.resume", "breakpoint_state": "running"},
				map[string]any{"event": "tool.result", "call_id": "c1", "ok": true})),
			statusFrame(a2a.TaskStateCompleted, eventsMessage(map[string]any{"event": "memory.assembled", "items": 3})),
		}, events: []string{"tool.call", "tool.result", "memory.assembled"}, status: gateway.StatusCompleted},
		{name: "rejected", frames: []*a2a.StreamResponse{statusFrame(a2a.TaskStateRejected, textMsg("not my job"))},
			status: gateway.StatusFailed, reason: "the agent rejected the request: not my job"},
		{name: "failed without a word", frames: []*a2a.StreamResponse{statusFrame(a2a.TaskStateFailed, nil)},
			status: gateway.StatusFailed, reason: "the agent failed: no reason given"},
		{name: "cancelled by the agent", frames: []*a2a.StreamResponse{statusFrame(a2a.TaskStateCanceled, nil)},
			status: gateway.StatusCancelled, reason: "the agent cancelled the task"},
		{name: "oauth pause", frames: []*a2a.StreamResponse{statusFrame(a2a.TaskStateAuthRequired,
			hitl.NewMessage("connect", &hitl.OAuthRequired{Connector: "drive", AuthURL: "https://auth.example.com/x"}))},
			status: gateway.StatusWaitingUser, pause: gateway.EventOAuthRequired},
		{name: "auth required without a payload", frames: []*a2a.StreamResponse{statusFrame(a2a.TaskStateAuthRequired, textMsg("log in"))},
			status: gateway.StatusWaitingUser, pause: gateway.EventOAuthRequired},
		{name: "input required as plain text", frames: []*a2a.StreamResponse{statusFrame(a2a.TaskStateInputRequired, textMsg("which?"))},
			status: gateway.StatusWaitingUser, pause: gateway.EventHITL},
		{name: "chunks append; a resent artifact replaces", frames: []*a2a.StreamResponse{
			{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("ab")}}}},
			{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", Append: true, Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("cd")}}}},
			{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: a2a.Artifact{ArtifactID: "b", Name: "n", Parts: []a2a.Part{a2a.RawPart([]byte{1}, "f.bin", "application/octet-stream")}}}},
			statusFrame(a2a.TaskStateCompleted, nil),
		}, events: []string{"message.delta", "message.delta"}, status: gateway.StatusCompleted, output: "abcd", artifact: 2},
		{name: "past the size limit", max: 5, frames: []*a2a.StreamResponse{
			{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("abc")}}}},
			{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", Append: true, Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("def")}}}},
			statusFrame(a2a.TaskStateCompleted, nil),
		}, events: []string{"message.delta"}, status: gateway.StatusFailed, reason: "the agent's answer is larger than the gateway's limit of 5 bytes", output: "abc", artifact: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			max := c.max
			if max == 0 {
				max = 1 << 20
			}
			tr := newTurn(max, c.known)
			var got []gateway.Event
			for _, f := range c.frames {
				got = append(got, tr.frame(f)...)
			}
			if diff := cmp.Diff(c.events, eventTypes(got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tr.end == nil || tr.end.status != c.status || (c.reason != "" && tr.end.reason != c.reason) {
				t.Fatalf("end %+v, want %s %q", tr.end, c.status, c.reason)
			}
			if c.pause != "" && (tr.end.pause == nil || tr.end.pause.Type != c.pause || !json.Valid(tr.end.pause.Payload)) {
				t.Fatalf("pause %+v, want %s", tr.end.pause, c.pause)
			}
			if tr.output.String() != c.output || len(tr.artifacts) != c.artifact {
				t.Fatalf("output %q, %d artifacts", tr.output.String(), len(tr.artifacts))
			}
			for _, a := range tr.artifacts {
				for _, p := range a.Parts {
					if hitl.Tagged(p, hitl.MetadataMediaType) || strings.Contains(string(p.Data), "platform only") {
						t.Fatalf("the platform's control data shows in %+v", a)
					}
				}
			}
			if c.name == "task snapshot with an artifact, completed" && tr.artifacts[0].SkillMetadata["model"] != "m1" {
				t.Fatalf("skill metadata %+v", tr.artifacts[0].SkillMetadata)
			}
			// A frame after the ending changes nothing.
			if evs := tr.frame(statusFrame(a2a.TaskStateWorking, textMsg("late"))); evs != nil {
				t.Fatalf("a frame after the end made %v", evs)
			}
		})
	}
}

func TestMergeArtifacts(t *testing.T) {
	run := []gateway.Artifact{{ArtifactID: "a", Name: "first", Parts: []a2a.Part{a2a.TextPart("1")}, SkillMetadata: map[string]any{"x": 1.0}}}
	turn := []gateway.Artifact{
		{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart("2")}, SkillMetadata: map[string]any{"y": 2.0}, Metadata: map[string]any{"m": true}},
		{ArtifactID: "b", Parts: []a2a.Part{a2a.TextPart("3")}},
	}
	got := mergeArtifacts(run, turn)
	want := []gateway.Artifact{
		{ArtifactID: "a", Name: "first", Parts: []a2a.Part{a2a.TextPart("1"), a2a.TextPart("2")},
			SkillMetadata: map[string]any{"x": 1.0, "y": 2.0}, Metadata: map[string]any{"m": true}},
		{ArtifactID: "b", Parts: []a2a.Part{a2a.TextPart("3")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if len(run[0].Parts) != 1 || len(run[0].SkillMetadata) != 1 {
		t.Fatal("merging changed the run's artifacts in place")
	}
}
