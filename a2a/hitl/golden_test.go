package hitl_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
)

// seedGolden reads a golden message of the NovaOS Python SDK's wire form
// (see the README beside the goldens for the section each one follows).
func seedGolden(t *testing.T, name string) (*a2a.Message, any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seed000", name))
	if err != nil {
		t.Fatal(err)
	}
	var m a2a.Message
	if err := a2a.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return &m, jsonValue(t, b)
}

// jsonValue is b decoded as a generic JSON value without the message id,
// which the builder generates.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	delete(v, "messageId")
	return v
}

func withSession(h *hitl.HITL, s string) *hitl.HITL {
	h.SessionID = s
	return h
}

// TestSeed000Golden checks both directions against messages built from
// the NovaOS Python SDK's reference text: each golden parses with Extract
// into what that SDK's builder put in, passes Validate, and (for the A2A
// form, which is what the builder writes) our builder given the same
// inputs writes the same JSON value, so that SDK's parser reads ours as it
// reads its own.
func TestSeed000Golden(t *testing.T) {
	plan := &hitl.HITL{Type: hitl.TypePlanConfirmation, Content: "Deploy v2 to production?", RequiresUserAction: true, SessionID: "session-1",
		Plan:    map[string]any{"steps": []any{"drain", "deploy", "verify"}},
		Actions: []hitl.Action{{ID: "approve", Label: "Approve", Style: "primary"}, {ID: "reject", Label: "Reject", Style: "danger"}}}
	input := hitl.InputRequest("Which address should the invoice go to?", hitl.InputEmail,
		&hitl.InputValidation{Required: true, MaxLength: ptr(254), Pattern: `^\S+@\S+$`, PatternMessage: "an e-mail address", Placeholder: "billing@example.com"}, "session-2")
	batch := hitl.BatchInputRequest("Shipping details", []hitl.InputField{
		{Name: "city", Label: "City", InputType: hitl.InputText},
		{Name: "region", Label: "Region", InputType: hitl.InputSelect, Validation: &hitl.InputValidation{Required: true,
			Options: []map[string]string{{"value": "eu", "label": "Europe"}, {"value": "us", "label": "United States"}}}},
	}, "session-3")
	progress := &hitl.Progress{Status: hitl.ProgressInProgress, Message: "Indexing documents", SessionID: "session-4",
		Progress: hitl.ProgressData{Percent: ptr(50.0), Step: 2, TotalSteps: 4, Stage: "index"}}
	errMsg := &hitl.Error{Type: hitl.ErrorConnection, Message: "The mail server did not answer", SessionID: "session-5",
		Details: map[string]any{"host": "smtp.example.com", "attempts": 3.0}, RecoverySuggestions: []string{"retry in a minute"}, Retryable: true}
	oauth := &hitl.OAuthRequired{Connector: "gmail", AuthURL: "https://auth.example.com/oauth/start?state=abc", SessionID: "session-6",
		Extra: map[string]any{"scopes": []any{"mail.send"}}}
	write := &hitl.WriteConfirmation{CallID: "call-7", ToolName: "send_email", Extra: map[string]any{"arguments": map[string]any{"to": "bob@example.com"}}}
	resp := hitl.Response{ActionID: "approve", SessionID: "session-1", InputValue: ptr("ship it"), Metadata: map[string]any{"source": "web"}}

	tests := []struct {
		file  string
		built *a2a.Message // what our builder writes for the same inputs; nil for a form only read
		want  hitl.Found
	}{
		{"plan_confirmation.json", hitl.NewMessage(plan.Content, plan), hitl.Found{HITL: plan}},
		{"input_request.json", hitl.NewMessage(input.Content, input), hitl.Found{HITL: input}},
		{"batch_input_request.json", hitl.NewMessage(batch.Content, batch), hitl.Found{HITL: batch}},
		{"progress.json", hitl.NewMessage(progress.Message, progress), hitl.Found{Progress: progress}},
		{"error.json", hitl.NewMessage(errMsg.Message, errMsg), hitl.Found{Error: errMsg}},
		{"oauth_required.json", hitl.NewMessage("Connect your mail account to continue.", oauth), hitl.Found{OAuthRequired: oauth}},
		{"write_confirmation.json", hitl.NewMessage("Confirm sending this email?", write), hitl.Found{WriteConfirmation: write}},
		{"hitl_response.json", hitl.NewResponseMessage("Approved", resp), hitl.Found{Response: &resp}},
		{"acp_shaped.json", nil, hitl.Found{HITL: plan}},
		{"acp_shaped_content_type.json", nil, hitl.Found{Error: errMsg}},
		{"legacy_metadata.json", nil, hitl.Found{Progress: progress}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			msg, golden := seedGolden(t, tc.file)
			if err := hitl.Validate(msg); err != nil {
				t.Errorf("Validate(golden): %v", err)
			}
			if d := cmp.Diff(tc.want, hitl.Extract(msg)); d != "" {
				t.Errorf("Extract(golden) (-want +got):\n%s", d)
			}
			if tc.built == nil {
				return
			}
			b, err := a2a.AppendMessage(nil, tc.built)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(golden, jsonValue(t, b)); d != "" {
				t.Errorf("our builder differs from seed 000's (-seed +ours):\n%s", d)
			}
		})
	}
}

// TestUntaggedDataIsNotControlData: the marker, not the shape of the data,
// makes a part control data, so an agent's output that happens to have a
// "hitl" key, or skill metadata, is never read as a pause.
func TestUntaggedDataIsNotControlData(t *testing.T) {
	payload := json.RawMessage(`{"hitl":{"hitl_type":"info","content":"x","requires_user_action":true}}`)
	for _, tc := range []struct {
		name string
		part a2a.Part
		want bool
	}{
		{"untagged", a2a.Part{Kind: a2a.PartData, Data: payload}, false},
		{"application/json", a2a.Part{Kind: a2a.PartData, Data: payload, MediaType: "application/json"}, false},
		{"skill metadata marker", hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: payload}, hitl.SkillMetadataMediaType), false},
		{"control marker under mediaType", hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: payload}, hitl.MetadataMediaType), true},
		{"control marker under another key", a2a.Part{Kind: a2a.PartData, Data: payload, Metadata: map[string]any{"contentType": hitl.MetadataMediaType}}, true},
		{"control marker as the part's mediaType", a2a.Part{Kind: a2a.PartData, Data: payload, MediaType: hitl.MetadataMediaType}, true},
		{"JSON string in a tagged data part", hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(strconvQuote(string(payload)))}, hitl.MetadataMediaType), true},
		{"raw bytes with the marker", a2a.RawPart(payload, "", hitl.MetadataMediaType), true},
		{"text that is not JSON", a2a.Part{Kind: a2a.PartText, Text: "hitl", MediaType: hitl.MetadataMediaType}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := a2a.NewMessage(a2a.RoleAgent, tc.part)
			if got := hitl.Extract(m).HITL != nil; got != tc.want {
				t.Errorf("HITL found = %v, want %v", got, tc.want)
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestTagCopiesMetadata: Tag must not write into a map the caller shares.
func TestTagCopiesMetadata(t *testing.T) {
	md := map[string]any{"x": 1.0}
	p := hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`{}`), Metadata: md}, hitl.MetadataMediaType)
	if len(md) != 1 || p.Metadata[hitl.PartKey] != hitl.MetadataMediaType || p.Metadata["x"] != 1.0 {
		t.Errorf("Tag: caller's map %v, part's %v", md, p.Metadata)
	}
}
