package a2a

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seed 000, novaos_client_sdk.a2a_artifact: the revision "is carried
// instead under ARTIFACT_REVISION_KEY inside metadata … Artifact.from_dict
// lifts the key back out into Artifact.revision"; and (a2a_task) "bool is
// rejected ahead of int for the reason _coerce_revision gives: True is an
// int in Python".
func TestArtifactRevision(t *testing.T) {
	tests := []struct {
		name string
		md   map[string]any
		want int
	}{
		{"absent", nil, DefaultArtifactRevision},
		{"float from JSON", map[string]any{ArtifactRevisionKey: 3.0}, 3},
		{"int", map[string]any{ArtifactRevisionKey: 4}, 4},
		{"json.Number", map[string]any{ArtifactRevisionKey: json.Number("5")}, 5},
		{"bool rejected", map[string]any{ArtifactRevisionKey: true}, DefaultArtifactRevision},
		{"string rejected", map[string]any{ArtifactRevisionKey: "2"}, DefaultArtifactRevision},
		{"fraction rejected", map[string]any{ArtifactRevisionKey: 2.5}, DefaultArtifactRevision},
		{"below the default", map[string]any{ArtifactRevisionKey: 0.0}, DefaultArtifactRevision},
		{"negative", map[string]any{ArtifactRevisionKey: -7.0}, DefaultArtifactRevision},
		{"huge", map[string]any{ArtifactRevisionKey: 1e300}, DefaultArtifactRevision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Artifact{Metadata: tt.md}).Revision(); got != tt.want {
				t.Errorf("Revision() = %d, want %d", got, tt.want)
			}
		})
	}
}

// seed 000, Artifact.to_dict: "revision is folded into metadata under
// ARTIFACT_REVISION_KEY — and only when it is past the default, so an
// artifact nobody has revised carries no metadata it did not ask for."
func TestArtifactRevisionWire(t *testing.T) {
	tests := []struct {
		name     string
		in       Artifact
		revision int
		wantJSON string
	}{
		{"default writes nothing", Artifact{ArtifactID: "a"}, DefaultArtifactRevision, `{"artifactId":"a"}`},
		{"default removes the key", Artifact{ArtifactID: "a", Metadata: map[string]any{ArtifactRevisionKey: 4.0}}, DefaultArtifactRevision, `{"artifactId":"a"}`},
		{"default keeps other metadata", Artifact{ArtifactID: "a", Metadata: map[string]any{"k": "v", ArtifactRevisionKey: 4.0}}, DefaultArtifactRevision, `{"artifactId":"a","metadata":{"k":"v"}}`},
		{"past the default", Artifact{ArtifactID: "a"}, 2, `{"artifactId":"a","metadata":{"novaos.dev/revision":2}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := tt.in.Metadata[ArtifactRevisionKey]
			got := tt.in.WithRevision(tt.revision)
			if tt.in.Metadata[ArtifactRevisionKey] != orig {
				t.Errorf("WithRevision changed its receiver's metadata")
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.wantJSON {
				t.Errorf("wire = %s, want %s", b, tt.wantJSON)
			}
			var back Artifact
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Revision() != tt.revision {
				t.Errorf("read back revision %d, want %d", back.Revision(), tt.revision)
			}
		})
	}
}

// seed 000, Artifact.revised: "artifact_id, name and description are
// carried over unchanged … When True, parts extends the existing content
// rather than replacing it … A new Artifact; the receiver is left
// unmodified"; TaskArtifactUpdateEvent.apply_to: "An update for an id not
// yet seen appends the artifact … and an update for a known id revises it,
// extending or replacing its parts according to append."
func TestArtifactRevisedAndApplyTo(t *testing.T) {
	a1 := Artifact{ArtifactID: "a", Name: "report", Description: "d", Parts: []Part{TextPart("one")}}
	other := Artifact{ArtifactID: "b", Parts: []Part{TextPart("other")}}
	tests := []struct {
		name  string
		in    []Artifact
		ev    TaskArtifactUpdateEvent
		want  []Artifact
		revAt int // the revision of want[revAt]
		rev   int
	}{
		{"new id appends the artifact", []Artifact{other},
			TaskArtifactUpdateEvent{Artifact: a1},
			[]Artifact{other, a1}, 1, DefaultArtifactRevision},
		{"append extends the parts", []Artifact{a1, other},
			TaskArtifactUpdateEvent{Artifact: Artifact{ArtifactID: "a", Name: "ignored", Parts: []Part{TextPart("two")}}, Append: true},
			[]Artifact{{ArtifactID: "a", Name: "report", Description: "d", Parts: []Part{TextPart("one"), TextPart("two")}, Metadata: map[string]any{ArtifactRevisionKey: 2}}, other}, 0, 2},
		{"replace swaps the parts", []Artifact{a1.WithRevision(3)},
			TaskArtifactUpdateEvent{Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("new")}}},
			[]Artifact{{ArtifactID: "a", Name: "report", Description: "d", Parts: []Part{TextPart("new")}, Metadata: map[string]any{ArtifactRevisionKey: 4}}}, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := json.Marshal(tt.in)
			got := tt.ev.ApplyTo(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ApplyTo (-want +got):\n%s", diff)
			}
			if got[tt.revAt].Revision() != tt.rev {
				t.Errorf("revision = %d, want %d", got[tt.revAt].Revision(), tt.rev)
			}
			after, _ := json.Marshal(tt.in)
			if string(before) != string(after) {
				t.Errorf("ApplyTo changed its input:\n%s\n%s", before, after)
			}
		})
	}
}
