package a2agrpc_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
)

func i32(v int32) *int32   { return &v }
func str(s string) *string { return &s }

var when = time.Date(2026, 3, 4, 5, 6, 7, 891234567, time.UTC)

func fullMessage() *a2a.Message {
	data, _ := a2a.DataPart(map[string]any{"rows": []any{1.5, "x", nil, true, map[string]any{}}})
	return &a2a.Message{
		MessageID: "m-1", ContextID: "c-1", TaskID: "t-1", Role: a2a.RoleUser,
		Parts: []a2a.Part{
			{Kind: a2a.PartText, Text: "<b>hi</b> \u2028 é", Metadata: map[string]any{"k": map[string]any{"deep": []any{1.0}}}},
			a2a.RawPart([]byte{0, 1, 2, 0xfe, 0xff}, "f.bin", "application/octet-stream"),
			a2a.RawPart(nil, "", ""),
			a2a.URLPart("https://example.com/a?b=c", "a", "text/plain"),
			data,
			{Kind: a2a.PartData, Data: json.RawMessage("null")},
			{Kind: a2a.PartData, Data: json.RawMessage(`"just a string"`)},
			{Kind: a2a.PartText},
		},
		Metadata:         map[string]any{"n": 12.5, "s": "v", "b": false, "z": nil, "l": []any{}},
		Extensions:       []string{"urn:e1", "urn:e2"},
		ReferenceTaskIDs: []string{"t-0"},
	}
}

func fullTask() *a2a.Task {
	m := fullMessage()
	return &a2a.Task{
		ID: "t-1", ContextID: "c-1",
		Status:    a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: m, Timestamp: when},
		Artifacts: []a2a.Artifact{{ArtifactID: "a-1", Name: "n", Description: "d", Parts: m.Parts, Metadata: map[string]any{"x": 1.0}, Extensions: []string{"e"}}},
		History:   []a2a.Message{*m, {MessageID: "m-2", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart("ok")}}},
		Metadata:  map[string]any{"cost": map[string]any{"usd": 0.0123}},
	}
}

func fullCard() *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: "agent", Description: "d", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{{URL: "https://a/", ProtocolBinding: a2a.BindingGRPC, Tenant: "t", ProtocolVersion: "1.0"}},
		Provider:            &a2a.AgentProvider{Organization: "o", URL: "https://o"},
		DocumentationURL:    str(""), // set but empty: presence is kept
		IconURL:             str("https://icon"),
		Capabilities: a2a.AgentCapabilities{
			Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false),
			Extensions: []a2a.AgentExtension{{URI: "urn:x", Description: "d", Required: true, Params: map[string]any{"a_b": 1.0}}, {URI: "urn:y"}},
		},
		SecuritySchemes: map[string]a2a.SecurityScheme{
			"key":    {APIKey: &a2a.APIKeySecurityScheme{Description: "d", Location: "header", Name: "X-Key"}},
			"bearer": {HTTPAuth: &a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"}},
			"oauth": {OAuth2: &a2a.OAuth2SecurityScheme{
				Flows:             json.RawMessage(`{"authorizationCode":{"authorizationUrl":"https://a","tokenUrl":"https://t","scopes":{"read":"r"},"pkceRequired":true}}`),
				OAuth2MetadataURL: "https://m",
			}},
			"device": {OAuth2: &a2a.OAuth2SecurityScheme{Flows: json.RawMessage(`{"deviceCode":{"deviceAuthorizationUrl":"https://d","tokenUrl":"https://t","scopes":{"s":"d"}}}`)}},
			"oidc":   {OpenIDConnect: &a2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://oidc"}},
			"mtls":   {MTLS: &a2a.MutualTLSSecurityScheme{}},
		},
		SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"bearer": {}, "oauth": {List: []string{"read", "write"}}}}, {}},
		DefaultInputModes:    []string{"text/plain"},
		DefaultOutputModes:   []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{{ID: "s", Name: "n", Description: "d", Tags: []string{"t"}, Examples: []string{"e"},
			InputModes: []string{"text/plain"}, OutputModes: []string{"application/json"},
			SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"key": {}}}}}},
		Signatures: []a2a.AgentCardSignature{{Protected: "eyJhbGciOiJFUzI1NiJ9", Signature: "c2ln", Header: map[string]any{"kid": "k1"}}},
	}
}

// handMade are values with every field set, and the edge cases of each
// kind: optional numbers at 0, explicit false, empty parts of each kind.
func handMade() map[string]any {
	task := fullTask()
	push := &a2a.TaskPushNotificationConfig{Tenant: "tn", ID: "p-1", TaskID: "t-1", URL: "https://hook", Token: "tok",
		Authentication: &a2a.AuthenticationInfo{Scheme: "Bearer", Credentials: "secret"}}
	return map[string]any{
		"send/full": &a2a.SendMessageRequest{Tenant: "tn", Message: fullMessage(),
			Configuration: &a2a.SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, TaskPushNotificationConfig: push, HistoryLength: i32(0), ReturnImmediately: true},
			Metadata:      map[string]any{"k": "v"}},
		"send/empty-config":     &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: "m", Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("x")}}, Configuration: &a2a.SendMessageConfiguration{}},
		"send/no-message":       &a2a.SendMessageRequest{},
		"response/task":         &a2a.SendMessageResponse{Task: task},
		"response/message":      &a2a.SendMessageResponse{Message: fullMessage()},
		"response/empty":        &a2a.SendMessageResponse{},
		"frame/task":            &a2a.StreamResponse{Task: task},
		"frame/message":         &a2a.StreamResponse{Message: fullMessage()},
		"frame/status":          &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: when}, Metadata: map[string]any{"k": 1.0}}},
		"frame/status-zero":     &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{}},
		"frame/artifact":        &a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: task.Artifacts[0], Append: true, LastChunk: true, Metadata: map[string]any{"k": "v"}}},
		"frame/empty":           &a2a.StreamResponse{},
		"task/full":             task,
		"task/empty":            &a2a.Task{},
		"task/every-state":      &a2a.ListTasksResponse{Tasks: everyState(), NextPageToken: "", PageSize: 9, TotalSize: 9},
		"get/full":              &a2a.GetTaskRequest{Tenant: "tn", ID: "t", HistoryLength: i32(0)},
		"get/unset":             &a2a.GetTaskRequest{ID: "t"},
		"list/full":             &a2a.ListTasksRequest{Tenant: "tn", ContextID: "c", Status: a2a.TaskStateAuthRequired, PageSize: i32(100), PageToken: "p", HistoryLength: i32(3), StatusTimestampAfter: "2026-01-02T03:04:05.123456789Z", IncludeArtifacts: true},
		"list/zeros":            &a2a.ListTasksRequest{PageSize: i32(0), HistoryLength: i32(0)},
		"list-response/empty":   &a2a.ListTasksResponse{},
		"cancel/full":           &a2a.CancelTaskRequest{Tenant: "tn", ID: "t", Metadata: map[string]any{"why": "user"}},
		"subscribe/full":        &a2a.SubscribeToTaskRequest{Tenant: "tn", ID: "t"},
		"push/full":             push,
		"push/minimal":          &a2a.TaskPushNotificationConfig{URL: "https://hook"},
		"push-get/full":         &a2a.GetTaskPushNotificationConfigRequest{Tenant: "tn", TaskID: "t", ID: "p"},
		"push-delete/full":      &a2a.DeleteTaskPushNotificationConfigRequest{Tenant: "tn", TaskID: "t", ID: "p"},
		"push-list/full":        &a2a.ListTaskPushNotificationConfigsRequest{Tenant: "tn", TaskID: "t", PageSize: i32(5), PageToken: "p"},
		"push-list-response":    &a2a.ListTaskPushNotificationConfigsResponse{Configs: []a2a.TaskPushNotificationConfig{*push, {URL: "u"}}, NextPageToken: "n"},
		"push-list-response/no": &a2a.ListTaskPushNotificationConfigsResponse{},
		"card-request/full":     &a2a.GetExtendedAgentCardRequest{Tenant: "tn"},
		"card/full":             fullCard(),
		"card/minimal":          &a2a.AgentCard{Name: "a"},
	}
}

func everyState() []a2a.Task {
	var out []a2a.Task
	for s := a2a.TaskStateUnspecified; s <= a2a.TaskStateAuthRequired; s++ {
		out = append(out, a2a.Task{ID: s.String(), Status: a2a.TaskStatus{State: s}})
	}
	return out
}

// TestRoundTrip converts every fixture and hand-made value to protobuf,
// through the wire bytes, and back: the model value must come back as it
// went, up to what no reader of its JSON could tell apart.
func TestRoundTrip(t *testing.T) {
	cases := handMade()
	for name, v := range fixtures(t) {
		cases[name] = v
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			k := kindOf(t, v)
			pb, err := k.to(v)
			if err != nil {
				t.Fatalf("ToPB: %v", err)
			}
			wire, err := proto.Marshal(pb)
			if err != nil {
				t.Fatalf("proto.Marshal: %v", err)
			}
			read := k.newPB()
			if err := proto.Unmarshal(wire, read); err != nil {
				t.Fatalf("proto.Unmarshal: %v", err)
			}
			back, err := k.from(read)
			if err != nil {
				t.Fatalf("FromPB: %v", err)
			}
			if d := cmp.Diff(v, back, modelOpts); d != "" {
				t.Errorf("a2a → pb → a2a changed the value (-want +got):\n%s", d)
			}
		})
	}
}

// TestSameJSON is the differential test: for every fixture and hand-made
// value, the a2a package's JSON and protojson.Marshal of the conversion
// are the same JSON value (see jsonValue for what "same" forgives).
func TestSameJSON(t *testing.T) {
	cases := handMade()
	for name, v := range fixtures(t) {
		cases[name] = v
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			k := kindOf(t, v)
			pb, err := k.to(v)
			if err != nil {
				t.Fatalf("ToPB: %v", err)
			}
			sameWire(t, k, v, pb)
		})
	}
}

// TestNormalizations pins the conversions that change a value on purpose.
func TestNormalizations(t *testing.T) {
	offset, err := a2agrpc.ListTasksRequestToPB(&a2a.ListTasksRequest{StatusTimestampAfter: "2026-01-02T03:04:05.5+02:00"})
	if err != nil {
		t.Fatal(err)
	}
	back, err := a2agrpc.ListTasksRequestFromPB(offset)
	if err != nil {
		t.Fatal(err)
	}
	if back.StatusTimestampAfter != "2026-01-02T01:04:05.5Z" {
		t.Errorf("statusTimestampAfter = %q, want it in UTC", back.StatusTimestampAfter)
	}
	pl := a2agrpc.ListTaskPushNotificationConfigsRequestToPB(&a2a.ListTaskPushNotificationConfigsRequest{PageSize: i32(0)})
	if got := a2agrpc.ListTaskPushNotificationConfigsRequestFromPB(pl).PageSize; got != nil {
		t.Errorf("page size 0 read back as %d, want unset (the proto field has no presence)", *got)
	}
	inc := a2agrpc.ListTasksRequestFromPB
	r, err := inc(&a2apb.ListTasksRequest{IncludeArtifacts: proto.Bool(false)})
	if err != nil || r.IncludeArtifacts {
		t.Errorf("include_artifacts=false read as %v, %v", r, err)
	}
	task, err := a2agrpc.TaskToPB(&a2a.Task{Status: a2a.TaskStatus{State: a2a.TaskState(42)}, History: []a2a.Message{{Role: a2a.Role(9)}}})
	if err != nil {
		t.Fatal(err)
	}
	if task.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_UNSPECIFIED || task.GetHistory()[0].GetRole() != a2apb.Role_ROLE_UNSPECIFIED {
		t.Errorf("out-of-range model enums became %v / %v, want UNSPECIFIED as the JSON encoder writes them", task.GetStatus().GetState(), task.GetHistory()[0].GetRole())
	}
	bad := string([]byte{'a', 0xff, 0xfe, 'b'})
	m, err := a2agrpc.SendMessageRequestToPB(&a2a.SendMessageRequest{Tenant: bad, Message: &a2a.Message{MessageID: bad, Parts: []a2a.Part{a2a.TextPart(bad)},
		Metadata: map[string]any{bad: bad}, Extensions: []string{"ok", bad}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(m); err != nil {
		t.Errorf("a request with invalid UTF-8 did not marshal: %v", err)
	}
	const fixed = "a\uFFFD\uFFFDb" // one U+FFFD per bad byte, as the JSON encoder writes it
	if m.GetTenant() != fixed || m.GetMessage().GetMessageId() != fixed || m.GetMessage().GetParts()[0].GetText() != fixed ||
		m.GetMessage().GetExtensions()[1] != fixed || m.GetMessage().GetMetadata().GetFields()[fixed].GetStringValue() != fixed {
		t.Errorf("invalid UTF-8 not replaced: %v", m)
	}
}

// TestEnumsAgree: the conversions cast enum numbers, so each number must
// name the same value on both sides.
func TestEnumsAgree(t *testing.T) {
	for s := a2a.TaskStateUnspecified; s <= a2a.TaskStateAuthRequired; s++ {
		if got := a2apb.TaskState(s).String(); got != s.String() {
			t.Errorf("task state %d: proto %s, model %s", s, got, s)
		}
	}
	if n := len(a2apb.TaskState_name); n != int(a2a.TaskStateAuthRequired)+1 {
		t.Errorf("the proto has %d task states, the model %d", n, a2a.TaskStateAuthRequired+1)
	}
	for r := a2a.RoleUnspecified; r <= a2a.RoleAgent; r++ {
		if got := a2apb.Role(r).String(); got != r.String() {
			t.Errorf("role %d: proto %s, model %s", r, got, r)
		}
	}
	if n := len(a2apb.Role_name); n != int(a2a.RoleAgent)+1 {
		t.Errorf("the proto has %d roles, the model %d", n, a2a.RoleAgent+1)
	}
}

func textPart(s string) *a2apb.Part { return &a2apb.Part{Content: &a2apb.Part_Text{Text: s}} }

func msgWith(parts ...*a2apb.Part) *a2apb.Message {
	return &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Parts: parts}
}

// TestFromPBRefuses lists what reading refuses, with the error each gets.
func TestFromPBRefuses(t *testing.T) {
	nan := structpb.NewNumberValue(math.NaN())
	tests := []struct {
		name string
		in   proto.Message
		want error
		path string
	}{
		{"part without content", &a2apb.SendMessageRequest{Message: msgWith(textPart("ok"), &a2apb.Part{MediaType: "text/plain"})}, a2a.ErrPartContent, "message.parts[1]"},
		{"data part without value", &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_Message{Message: msgWith(&a2apb.Part{Content: &a2apb.Part_Data{}})}}, a2agrpc.ErrNoValue, "message.parts[0].data"},
		{"value without kind deep in data", &a2apb.SendMessageRequest{Message: msgWith(&a2apb.Part{Content: &a2apb.Part_Data{Data: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{{}}})}})}, a2agrpc.ErrNoValue, "message.parts[0].data[0]"},
		{"NaN in metadata", &a2apb.CancelTaskRequest{Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"x": nan}}}, a2agrpc.ErrNumber, `metadata."x"`},
		{"infinity in part metadata", &a2apb.Task{History: []*a2apb.Message{msgWith(&a2apb.Part{Content: &a2apb.Part_Text{}, Metadata: &structpb.Struct{Fields: map[string]*structpb.Value{"y": structpb.NewNumberValue(math.Inf(1))}}})}}, a2agrpc.ErrNumber, `history[0].parts[0].metadata."y"`},
		{"unknown role", &a2apb.SendMessageResponse{Payload: &a2apb.SendMessageResponse_Message{Message: &a2apb.Message{Role: 3}}}, a2agrpc.ErrEnumValue, "message.role"},
		{"negative role", &a2apb.SendMessageRequest{Message: &a2apb.Message{Role: -1}}, a2agrpc.ErrEnumValue, "message.role"},
		{"unknown task state", &a2apb.Task{Status: &a2apb.TaskStatus{State: 9}}, a2agrpc.ErrEnumValue, "status.state"},
		{"unknown state filter", &a2apb.ListTasksRequest{Status: 42}, a2agrpc.ErrEnumValue, "status"},
		{"status update with unknown state", &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_StatusUpdate{StatusUpdate: &a2apb.TaskStatusUpdateEvent{Status: &a2apb.TaskStatus{State: 100}}}}, a2agrpc.ErrEnumValue, "statusUpdate.status.state"},
		{"timestamp after 9999", &a2apb.Task{Status: &a2apb.TaskStatus{Timestamp: &timestamppb.Timestamp{Seconds: 253402300800}}}, nil, "status.timestamp"},
		{"timestamp nanos out of range", &a2apb.ListTasksRequest{StatusTimestampAfter: &timestamppb.Timestamp{Nanos: 1e9}}, nil, "statusTimestampAfter"},
		{"artifact part without content", &a2apb.StreamResponse{Payload: &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: &a2apb.TaskArtifactUpdateEvent{Artifact: &a2apb.Artifact{Parts: []*a2apb.Part{{}}}}}}, a2a.ErrPartContent, "artifactUpdate.artifact.parts[0]"},
		{"list of tasks", &a2apb.ListTasksResponse{Tasks: []*a2apb.Task{{}, {Status: &a2apb.TaskStatus{State: 10}}}}, a2agrpc.ErrEnumValue, "tasks[1].status.state"},
		{"struct that contains itself", &a2apb.CancelTaskRequest{Metadata: cyclicStruct()}, a2agrpc.ErrDepth, `metadata."self"."self"`},
		{"card extension params", &a2apb.AgentCard{Capabilities: &a2apb.AgentCapabilities{Extensions: []*a2apb.AgentExtension{{Params: &structpb.Struct{Fields: map[string]*structpb.Value{"p": {}}}}}}}, a2agrpc.ErrNoValue, `capabilities.extensions[0].params."p"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kindOf(t, pbModel(tt.in)).from(tt.in)
			if err == nil {
				t.Fatal("converted; want an error")
			}
			var fe *a2agrpc.FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, tt.path) || len(fe.Path) > len(tt.path) && tt.want != a2agrpc.ErrDepth {
				t.Errorf("error %.300v: want a *FieldError at %q", err, tt.path)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v: want one that matches %v", err, tt.want)
			}
		})
	}
}

// pbModel returns a zero model value of the kind that converts pb, for
// kindOf.
func pbModel(pb proto.Message) any {
	name := string(pb.ProtoReflect().Descriptor().Name())
	for _, k := range kinds {
		if k.name == name {
			v, err := k.from(k.newPB())
			if err != nil {
				panic(err)
			}
			return v
		}
	}
	panic("no kind for " + name)
}

// TestToPBRefuses lists what writing refuses: what the JSON encoders
// refuse too, and what a oneof cannot carry.
func TestToPBRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want error
		path string
	}{
		{"data part that is not JSON", &a2a.SendMessageRequest{Message: &a2a.Message{Parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage("{nope")}}}}, nil, "message.parts[0].data"},
		{"NaN in metadata", &a2a.Task{Metadata: map[string]any{"x": []any{1.0, math.NaN()}}}, a2agrpc.ErrNumber, `metadata."x"[1]`},
		{"infinite float32", &a2a.CancelTaskRequest{Metadata: map[string]any{"x": float32(math.Inf(-1))}}, a2agrpc.ErrNumber, `metadata."x"`},
		{"json.Number out of range", &a2a.SendMessageRequest{Metadata: map[string]any{"n": json.Number("1e400")}}, nil, `metadata."n"`},
		{"unmarshalable metadata", &a2a.SendMessageRequest{Metadata: map[string]any{"f": func() {}}}, nil, `metadata."f"`},
		{"task and message", &a2a.SendMessageResponse{Task: &a2a.Task{}, Message: &a2a.Message{}}, a2agrpc.ErrOneof, ""},
		{"two stream members", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{}, ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{}}, a2agrpc.ErrOneof, ""},
		{"timestamp after 9999", &a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{Status: a2a.TaskStatus{Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}, nil, "statusUpdate.status.timestamp"},
		{"statusTimestampAfter not RFC 3339", &a2a.ListTasksRequest{StatusTimestampAfter: "yesterday"}, nil, "statusTimestampAfter"},
		{"map that contains itself", &a2a.CancelTaskRequest{Metadata: cyclicMap()}, a2agrpc.ErrDepth, `metadata."self"."self"`},
		{"data nested deeper than protobuf reads", &a2a.StreamResponse{Message: &a2a.Message{Parts: []a2a.Part{{Kind: a2a.PartData, Data: nested(3001)}}}}, a2agrpc.ErrDepth, `message.parts[0].data."a"`},
		{"two security scheme members", &a2a.AgentCard{SecuritySchemes: map[string]a2a.SecurityScheme{"s": {MTLS: &a2a.MutualTLSSecurityScheme{}, HTTPAuth: &a2a.HTTPAuthSecurityScheme{}}}}, a2agrpc.ErrOneof, `securitySchemes."s"`},
		{"OAuth flows of the wrong shape", &a2a.AgentCard{SecuritySchemes: map[string]a2a.SecurityScheme{"o": {OAuth2: &a2a.OAuth2SecurityScheme{Flows: json.RawMessage(`{"clientCredentials":{"tokenUrl":5}}`)}}}}, nil, `securitySchemes."o".oauth2SecurityScheme.flows`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kindOf(t, tt.in).to(tt.in)
			if err == nil {
				t.Fatal("converted; want an error")
			}
			var fe *a2agrpc.FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, tt.path) || len(fe.Path) > len(tt.path) && tt.want != a2agrpc.ErrDepth {
				t.Errorf("error %.300v: want a *FieldError at %q", err, tt.path)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v: want one that matches %v", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "a2agrpc: ") {
				t.Errorf("error %q does not say where it comes from", err)
			}
		})
	}
}

func cyclicMap() map[string]any {
	m := map[string]any{}
	m["self"] = m
	return m
}

func cyclicStruct() *structpb.Struct {
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	s.Fields["self"] = structpb.NewStructValue(s)
	return s
}

// nested returns a JSON object n levels deep.
func nested(n int) json.RawMessage {
	return json.RawMessage(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
}

// TestDeepValues: the deepest value ToPB writes is one protobuf reads.
func TestDeepValues(t *testing.T) {
	in := &a2a.Task{ID: "t", History: []a2a.Message{{MessageID: "m", Parts: []a2a.Part{{Kind: a2a.PartData, Data: nested(3000)}}}}}
	pb, err := a2agrpc.TaskToPB(in)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	var read a2apb.Task
	if err := proto.Unmarshal(wire, &read); err != nil {
		t.Fatalf("protobuf cannot read the deepest value ToPB writes: %v", err)
	}
	back, err := a2agrpc.TaskFromPB(&read)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, back, modelOpts); d != "" {
		t.Errorf("(-want +got):\n%.2000s", d)
	}
}
