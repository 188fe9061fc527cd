package hitl_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/hitl"
)

func ptr[T any](v T) *T { return &v }

// roundTrip sends m through the wire encoding and back.
func roundTrip(t *testing.T, m *a2a.Message) *a2a.Message {
	t.Helper()
	b, err := a2a.AppendMessage(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	var out a2a.Message
	if err := a2a.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestBuildExtractValidate(t *testing.T) {
	plan := map[string]any{"steps": []any{"build", "deploy"}}
	actions := []hitl.Action{{ID: "approve", Label: "Approve", Style: "primary"}, {ID: "reject", Label: "Reject", Style: "danger"}}
	tests := []struct {
		name string
		msg  *a2a.Message
		want hitl.Found
	}{
		{"input request", hitl.NewMessage("Your email?", hitl.InputRequest("Your email?", hitl.InputEmail, &hitl.InputValidation{Required: true, Pattern: `^\S+@\S+$`}, "s-1")),
			hitl.Found{HITL: &hitl.HITL{Type: hitl.TypeInputRequest, Content: "Your email?", RequiresUserAction: true, SessionID: "s-1", InputType: hitl.InputEmail, Validation: &hitl.InputValidation{Required: true, Pattern: `^\S+@\S+$`}}}},
		{"batch input", hitl.NewMessage("Details", hitl.BatchInputRequest("Details", []hitl.InputField{{Name: "city", Label: "City"}, {Name: "age", Label: "Age", InputType: hitl.InputNumber}}, "s-2")),
			hitl.Found{HITL: &hitl.HITL{Type: hitl.TypeBatchInputRequest, Content: "Details", RequiresUserAction: true, SessionID: "s-2",
				Fields: []hitl.InputField{{Name: "city", Label: "City"}, {Name: "age", Label: "Age", InputType: hitl.InputNumber}}, Actions: []hitl.Action{{ID: "submit", Label: "Submit", Style: "primary"}}}}},
		{"plan confirmation", hitl.NewMessage("Deploy?", hitl.PlanConfirmation("Deploy?", plan, actions)),
			hitl.Found{HITL: &hitl.HITL{Type: hitl.TypePlanConfirmation, Content: "Deploy?", RequiresUserAction: true, Plan: plan, Actions: actions}}},
		{"progress and execution progress", hitl.NewMessage("Halfway", &hitl.Progress{Status: hitl.ProgressInProgress, Message: "Halfway", Progress: hitl.ProgressData{Percent: ptr(50.0), Step: 2, TotalSteps: 4}},
			hitl.ExecutionProgress("Halfway", hitl.ProgressData{Stage: "index"})),
			hitl.Found{Progress: &hitl.Progress{Status: hitl.ProgressInProgress, Message: "Halfway", Progress: hitl.ProgressData{Percent: ptr(50.0), Step: 2, TotalSteps: 4}},
				HITL: &hitl.HITL{Type: hitl.TypeExecutionProgress, Content: "Halfway", Progress: &hitl.ProgressData{Stage: "index"}}}},
		{"error", hitl.NewMessage("Upstream down", &hitl.Error{Type: hitl.ErrorConnection, Message: "Upstream down", Retryable: true, RecoverySuggestions: []string{"retry later"}}),
			hitl.Found{Error: &hitl.Error{Type: hitl.ErrorConnection, Message: "Upstream down", Retryable: true, RecoverySuggestions: []string{"retry later"}}}},
		{"oauth pause", hitl.NewMessage("Connect Gmail", &hitl.OAuthRequired{Connector: "gmail", AuthURL: "https://auth.example.com/start?x=1", SessionID: "s"}),
			hitl.Found{OAuthRequired: &hitl.OAuthRequired{Connector: "gmail", AuthURL: "https://auth.example.com/start?x=1", SessionID: "s"}}},
		{"write confirmation pause", hitl.NewMessage("Send it?", &hitl.WriteConfirmation{CallID: "call-7", ToolName: "send_email"}),
			hitl.Found{WriteConfirmation: &hitl.WriteConfirmation{CallID: "call-7", ToolName: "send_email"}}},
		{"response", hitl.NewResponseMessage("Approved", hitl.Response{ActionID: "approve", SessionID: "s-1", InputValue: ptr("yes")}),
			hitl.Found{Response: &hitl.Response{ActionID: "approve", SessionID: "s-1", InputValue: ptr("yes")}}},
		{"info, success", hitl.NewMessage("FYI", hitl.Info("FYI")), hitl.Found{HITL: &hitl.HITL{Type: hitl.TypeInfo, Content: "FYI"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := hitl.Validate(tc.msg); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := hitl.Extract(roundTrip(t, tc.msg))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Extract (-want +got):\n%s", d)
			}
		})
	}
}

func TestPausedAndRoles(t *testing.T) {
	if m := hitl.NewResponseMessage("ok", hitl.Response{ActionID: "a", SessionID: "s"}); m.Role != a2a.RoleUser {
		t.Error("a response must be a user message")
	}
	if m := hitl.NewMessage("x", hitl.Info("x")); m.Role != a2a.RoleAgent || m.Parts[0].Text != "x" {
		t.Error("an agent message starts with its text part")
	}
	for _, tc := range []struct {
		p    hitl.Payload
		want bool
	}{
		{hitl.Info("x"), false},
		{hitl.InputRequest("x", "", nil, ""), true},
		{&hitl.OAuthRequired{Connector: "c", AuthURL: "https://a"}, true},
		{&hitl.WriteConfirmation{CallID: "c", ToolName: "t"}, true},
		{&hitl.Progress{Status: hitl.ProgressStarted, Message: "m"}, false},
	} {
		if got := hitl.Extract(hitl.NewMessage("x", tc.p)).Paused(); got != tc.want {
			t.Errorf("Paused(%T) = %v", tc.p, got)
		}
	}
}

func TestEmbedDoesNotChangeOriginal(t *testing.T) {
	m := a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("hi"))
	e := hitl.Embed(m, &hitl.Error{Type: hitl.ErrorInternal, Message: "x"})
	if len(m.Parts) != 1 || len(e.Parts) != 2 || hitl.Extract(e).Error == nil || !hitl.Extract(m).Empty() {
		t.Errorf("Embed: original %d parts, copy %d parts", len(m.Parts), len(e.Parts))
	}
}

func TestExtractTask(t *testing.T) {
	ask := hitl.NewMessage("Which?", hitl.InputRequest("Which?", hitl.InputText, nil, "s"))
	prog := hitl.NewMessage("", &hitl.Progress{Status: hitl.ProgressStarted, Message: "go"})
	task := &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: ask},
		History:   []a2a.Message{*a2a.NewMessage(a2a.RoleUser, a2a.TextPart("hi")), *prog},
		Artifacts: []a2a.Artifact{{ArtifactID: "a", Parts: []a2a.Part{hitl.Part(&hitl.Error{Type: hitl.ErrorTimeout, Message: "slow"})}}}}
	got := hitl.ExtractTask(task)
	if len(got) != 3 || got[0].HITL == nil || got[1].Progress == nil || got[2].Error == nil {
		t.Errorf("ExtractTask = %+v", got)
	}
}

func TestValidateProblems(t *testing.T) {
	data := func(key, payload string) a2a.Part {
		return hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`{"` + key + `":` + payload + `}`)}, hitl.MetadataMediaType)
	}
	tests := []struct {
		name string
		msg  *a2a.Message
		want []string
	}{
		{"envelope", &a2a.Message{}, []string{"messageId is required", "role must be", "at least one part"}},
		{"hitl type and content", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{data(hitl.KeyHITL, `{"hitl_type":"shout"}`)}},
			[]string{`part 0 hitl: unknown hitl_type "shout"`, "content is required"}},
		{"hitl wrong type", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{data(hitl.KeyHITL, `{"hitl_type":"info","content":7}`)}},
			[]string{"field content has the wrong type"}},
		{"not an object", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{data(hitl.KeyError, `"boom"`)}},
			[]string{"payload must be a JSON object"}},
		{"input validation", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(hitl.InputRequest("q", "colour", &hitl.InputValidation{MinLength: ptr(5), MaxLength: ptr(2), Pattern: "("}, ""))}},
			[]string{`unknown input_type "colour"`, "min_length exceeds max_length", "pattern does not compile"}},
		{"batch", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(hitl.BatchInputRequest("q", []hitl.InputField{{Name: "a"}, {Name: "a"}}, ""))}},
			[]string{`field name "a" repeated`}},
		{"plan", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(hitl.PlanConfirmation("q", nil, nil))}},
			[]string{"needs a plan", "needs actions"}},
		{"progress", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(&hitl.Progress{Status: "sleeping", Progress: hitl.ProgressData{Percent: ptr(150.0), Step: 5, TotalSteps: 2}})}},
			[]string{`unknown status "sleeping"`, "message is required", "percent must be within 0..100", "step must be within"}},
		{"response", &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{hitl.Part(&hitl.Response{})}},
			[]string{"action_id is required", "session_id is required"}},
		{"oauth", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(&hitl.OAuthRequired{AuthURL: "javascript:alert(1)"})}},
			[]string{"connector is required", "auth_url must be an absolute http(s) URL"}},
		{"write confirmation", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(&hitl.WriteConfirmation{})}},
			[]string{"call_id is required", "tool_name is required"}},
		{"error", &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{hitl.Part(&hitl.Error{})}},
			[]string{"error_type is required", "message is required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := hitl.Validate(tc.msg)
			var ve *hitl.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			all := strings.Join(ve.Problems, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems %q lack %q", ve.Problems, w)
				}
			}
			// A malformed payload is skipped by Extract.
			if f := hitl.Extract(tc.msg); tc.name == "hitl wrong type" && f.HITL != nil {
				t.Error("Extract decoded a malformed payload")
			}
		})
	}
}

func TestInputValidationCheck(t *testing.T) {
	v := &hitl.InputValidation{Required: true, MinLength: ptr(2), MaxLength: ptr(5), Pattern: `^[a-z]+$`, PatternMessage: "lower-case letters only"}
	for value, want := range map[string]string{"": "required", "a": "at least 2", "abcdef": "at most 5", "ABC": "lower-case letters only", "abc": ""} {
		err := v.Check(hitl.InputText, value)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("Check(%q) = %v, want %q", value, err, want)
		}
	}
	num := &hitl.InputValidation{MinValue: ptr(1.0), MaxValue: ptr(10.0)}
	for value, want := range map[string]string{"x": "not a number", "0": "at least 1", "11": "at most 10", "5": "", "": ""} {
		err := num.Check(hitl.InputNumber, value)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("Check(%q) = %v, want %q", value, err, want)
		}
	}
	sel := &hitl.InputValidation{Options: []map[string]string{{"value": "red"}, {"value": "blue", "label": "Blue"}}}
	if sel.Check(hitl.InputSelect, "green") == nil || sel.Check(hitl.InputSelect, "red") != nil {
		t.Error("select options")
	}
}

func FuzzExtractValidate(f *testing.F) {
	f.Add([]byte(`{"hitl":{"hitl_type":"input_request","content":"q","metadata":{"validation":{"pattern":"(a+)+$","min_length":-1}}}}`))
	f.Add([]byte(`{"oauth":{"connector":"c","auth_url":"https://x","extra":1},"error":[]}`))
	f.Add([]byte(`{"progress":{"status":"started","message":"m","progress":{"percent":1e309}}}`))
	f.Add([]byte(`"{\"write_confirmation\":{\"call_id\":7}}"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		var md map[string]any
		_ = json.Unmarshal(data, &md) // the legacy form: the same object as message metadata
		m := &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Metadata: md, Parts: []a2a.Part{
			hitl.Tag(a2a.Part{Kind: a2a.PartData, Data: data}, hitl.MetadataMediaType),
			{Kind: a2a.PartText, Text: string(data), MediaType: hitl.MetadataMediaType},
		}}
		found := hitl.Extract(m)
		err := hitl.Validate(m)
		if err == nil && found.HITL != nil && found.HITL.Validation != nil {
			_ = found.HITL.Validation.Check(found.HITL.InputType, "probe")
		}
	})
}

func TestFromFrame(t *testing.T) {
	ask := hitl.NewMessage("Send?", &hitl.WriteConfirmation{CallID: "c", ToolName: "send_email"})
	prog := hitl.Part(&hitl.Progress{Status: hitl.ProgressInProgress, Message: "half"})
	for _, tc := range []struct {
		name string
		f    *a2a.StreamResponse
		ok   func(hitl.Found) bool
	}{
		{"status", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: ask}}}, func(f hitl.Found) bool { return f.WriteConfirmation != nil && f.Paused() }},
		{"artifact", &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{Artifact: a2a.Artifact{Parts: []a2a.Part{prog}}}}, func(f hitl.Found) bool { return f.Progress != nil }},
		{"message", &a2a.StreamResponse{Message: ask}, func(f hitl.Found) bool { return f.WriteConfirmation != nil }},
		{"task", &a2a.StreamResponse{Task: &a2a.Task{Status: a2a.TaskStatus{Message: ask}}}, func(f hitl.Found) bool { return f.WriteConfirmation != nil }},
		{"nothing", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{}}, hitl.Found.Empty},
		{"nil", nil, hitl.Found.Empty},
	} {
		if got := hitl.FromFrame(tc.f); !tc.ok(got) {
			t.Errorf("%s: FromFrame = %+v", tc.name, got)
		}
	}
}
