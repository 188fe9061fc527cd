package tools

import "testing"

func TestActionClass(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		ann  *Annotations
		want Class
	}{
		{"novaos.memory.write", nil, ClassRead},
		{"novaos.knowledge.ingest", nil, ClassRead},
		{"novaos.agents.call", nil, ClassRead},
		{"novaos.http.fetch", nil, ClassRead},
		{"novaos.hitl.request_input", nil, ClassRead},
		{"novaos.notify.webhook", nil, ClassWrite},
		{"novaos.files.read", nil, ClassRead},
		{"novaos.files.delete", nil, ClassWrite},
		{"novaos.connector.slack.list-channels", nil, ClassRead},
		{"novaos.connector.licensed.gmail.send", nil, ClassWrite},
		{"novaos.github.searchIssues", nil, ClassRead},
		{"novaos.github.create_issue", nil, ClassWrite},
		{"novaos.upstream.frobnicate", nil, ClassWrite},
		{"novaos.upstream.create_entities", &Annotations{ReadOnly: &yes}, ClassRead},
		{"novaos.upstream.get_thing", &Annotations{ReadOnly: &no}, ClassWrite},
		{"novaos.upstream.read_graph", &Annotations{ReadOnly: &yes, Destructive: &yes}, ClassWrite},
		{"novaos.notify.webhook", &Annotations{ReadOnly: &yes}, ClassRead},
		{"novaos.upstream.list_things", &Annotations{Idempotent: &yes}, ClassRead},
	}
	for _, tt := range tests {
		if got := ActionClass(tt.name, tt.ann); got != tt.want {
			t.Errorf("ActionClass(%s, %+v) = %s, want %s", tt.name, tt.ann, got, tt.want)
		}
		if tt.ann == nil && RequiresWriteHITL(tt.name) != (tt.want == ClassWrite) {
			t.Errorf("RequiresWriteHITL(%s) disagrees with ActionClass", tt.name)
		}
	}
}
