package a2a

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// schemaFieldNames are the multi-word field names of the wire model, the ones
// a snake_case writer spells differently.
var schemaFieldNames = []string{
	"messageId", "contextId", "taskId", "referenceTaskIds", "mediaType", "artifactId", "lastChunk",
	"statusUpdate", "artifactUpdate", "acceptedOutputModes", "taskPushNotificationConfig", "historyLength",
	"returnImmediately", "pageSize", "pageToken", "nextPageToken", "totalSize", "statusTimestampAfter",
	"includeArtifacts", "supportedInterfaces", "protocolBinding", "protocolVersion", "documentationUrl",
	"securitySchemes", "securityRequirements", "defaultInputModes", "defaultOutputModes", "iconUrl",
	"pushNotifications", "extendedAgentCard", "inputModes", "outputModes", "apiKeySecurityScheme",
	"httpAuthSecurityScheme", "oauth2SecurityScheme", "openIdConnectSecurityScheme", "mtlsSecurityScheme",
	"bearerFormat", "oauth2MetadataUrl", "openIdConnectUrl", "authorizationCode", "authorizationUrl",
	"tokenUrl", "refreshUrl",
}

var camelKey = regexp.MustCompile(`"([a-z][a-zA-Z0-9]*)":`)

// camelToSnakeKeys rewrites every known multi-word field name in a JSON text
// to snake_case, the way a proto-native writer would emit it.
func camelToSnakeKeys(s string) string {
	known := map[string]bool{}
	for _, n := range schemaFieldNames {
		known[n] = true
	}
	return camelKey.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-2]
		if !known[name] {
			return m
		}
		var b strings.Builder
		for i := 0; i < len(name); i++ {
			c := name[i]
			if c >= 'A' && c <= 'Z' {
				b.WriteByte('_')
				c += 'a' - 'A'
			}
			b.WriteByte(c)
		}
		return `"` + b.String() + `":`
	})
}

func TestUnmarshalSnakeCaseTask(t *testing.T) {
	in := `{
	  "id": "t1", "context_id": "c1", "unknown_top": {"x_y": 1},
	  "status": {"state": "completed", "timestamp": "2026-01-02T03:04:05.123456Z",
	    "message": {"message_id": "m0", "role": "agent", "task_id": "t1", "parts": [{"text": "done", "media_type": "text/plain"}]}},
	  "artifacts": [{"artifact_id": "a1", "name": "n", "parts": [
	    {"raw": "aGk=", "media_type": "application/octet-stream", "metadata": {"keep_me": {"and_me": 1}}},
	    {"data": {"snake_key": [{"inner_key": 12345678901234567890}]}, "media_type": "application/json"}],
	    "extra_field": true}],
	  "history": [{"message_id": "m1", "role": "ROLE_USER", "reference_task_ids": ["t0"], "parts": [{"url": "https://x"}],
	    "metadata": {"user_key": "v"}, "extensions": ["urn:e"]}],
	  "metadata": {"tenant_id": "acme", "nested_map": {"deep_key": true}}
	}`
	var got Task
	if err := Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := Task{
		ID: "t1", ContextID: "c1",
		Status: TaskStatus{State: TaskStateCompleted, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC),
			Message: &Message{MessageID: "m0", Role: RoleAgent, TaskID: "t1", Parts: []Part{{Kind: PartText, Text: "done", MediaType: "text/plain"}}}},
		Artifacts: []Artifact{{ArtifactID: "a1", Name: "n", Parts: []Part{
			{Kind: PartRaw, Raw: []byte("hi"), MediaType: "application/octet-stream", Metadata: map[string]any{"keep_me": map[string]any{"and_me": 1.0}}},
			{Kind: PartData, Data: json.RawMessage(`{"snake_key": [{"inner_key": 12345678901234567890}]}`), MediaType: "application/json"},
		}}},
		History: []Message{{MessageID: "m1", Role: RoleUser, ReferenceTaskIDs: []string{"t0"}, Parts: []Part{{Kind: PartURL, URL: "https://x"}},
			Metadata: map[string]any{"user_key": "v"}, Extensions: []string{"urn:e"}}},
		Metadata: map[string]any{"tenant_id": "acme", "nested_map": map[string]any{"deep_key": true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestUnmarshalSnakeCaseRequests(t *testing.T) {
	tests := []struct {
		name string
		in   string
		into func() any
		want any
	}{
		{
			name: "send message request",
			in: `{"tenant":"x","message":{"message_id":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},
			      "configuration":{"accepted_output_modes":["text/plain"],"history_length":3,"return_immediately":true,
			        "task_push_notification_config":{"task_id":"t","url":"https://h","authentication":{"scheme":"Bearer"}}},
			      "metadata":{"trace_id":"abc"}}`,
			into: func() any { return new(SendMessageRequest) },
			want: &SendMessageRequest{Tenant: "x", Message: &Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("hi")}},
				Configuration: &SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: ptr(int32(3)), ReturnImmediately: true,
					TaskPushNotificationConfig: &TaskPushNotificationConfig{TaskID: "t", URL: "https://h", Authentication: &AuthenticationInfo{Scheme: "Bearer"}}},
				Metadata: map[string]any{"trace_id": "abc"}},
		},
		{
			name: "list tasks request",
			in:   `{"context_id":"c","status":"TASK_STATE_WORKING","page_size":10,"page_token":"p","history_length":0,"status_timestamp_after":"2026-01-01T00:00:00Z","include_artifacts":true}`,
			into: func() any { return new(ListTasksRequest) },
			want: &ListTasksRequest{ContextID: "c", Status: TaskStateWorking, PageSize: ptr(int32(10)), PageToken: "p", HistoryLength: ptr(int32(0)),
				StatusTimestampAfter: "2026-01-01T00:00:00Z", IncludeArtifacts: true},
		},
		{
			name: "stream response",
			in:   `{"status_update":{"task_id":"t","context_id":"c","status":{"state":"input-required"},"metadata":{"a_b":1}}}`,
			into: func() any { return new(StreamResponse) },
			want: &StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateInputRequired}, Metadata: map[string]any{"a_b": 1.0}}},
		},
		{
			name: "artifact update",
			in:   `{"artifact_update":{"task_id":"t","context_id":"c","append":true,"last_chunk":true,"artifact":{"artifact_id":"a","parts":[{"text":"x"}]}}}`,
			into: func() any { return new(StreamResponse) },
			want: &StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Append: true, LastChunk: true, Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("x")}}}},
		},
		{
			name: "escaped key",
			in:   `{"id":"t","context\u005fid":"c"}`,
			into: func() any { return new(Task) },
			want: &Task{ID: "t", ContextID: "c"},
		},
		{
			name: "unknown fields at every level",
			in:   `{"id":"t","kind":"task","x_y":[{"a_b":1}],"status":{"state":"TASK_STATE_WORKING","extra_thing":{}},"history":[{"message_id":"m","kind":"message","parts":[{"text":"x","kind":"text"}]}]}`,
			into: func() any { return new(Task) },
			want: &Task{ID: "t", Status: TaskStatus{State: TaskStateWorking}, History: []Message{{MessageID: "m", Parts: []Part{TextPart("x")}}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.into()
			if err := Unmarshal([]byte(tc.in), got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestUnmarshalSnakeCaseAgentCard(t *testing.T) {
	in := `{
	  "name": "a", "description": "d", "version": "1",
	  "supported_interfaces": [{"url": "https://a", "protocol_binding": "JSONRPC", "protocol_version": "1.0", "tenant": "t"}],
	  "documentation_url": "https://docs", "icon_url": "https://icon",
	  "capabilities": {"streaming": true, "push_notifications": false, "extended_agent_card": true,
	    "extensions": [{"uri": "urn:x", "required": true, "params": {"snake_param": {"inner_key": 1}}}]},
	  "security_schemes": {
	    "my_api_key": {"api_key_security_scheme": {"location": "header", "name": "X-Key"}},
	    "my_oauth": {"oauth2_security_scheme": {"oauth2_metadata_url": "https://m",
	      "flows": {"authorization_code": {"authorization_url": "https://auth", "token_url": "https://tok", "scopes": {"read_all": "Read", "write_all": "Write"}}}}},
	    "oidc": {"open_id_connect_security_scheme": {"open_id_connect_url": "https://oidc"}},
	    "bearer": {"http_auth_security_scheme": {"scheme": "Bearer", "bearer_format": "JWT"}},
	    "mtls": {"mtls_security_scheme": {"description": "m"}}
	  },
	  "security_requirements": [{"schemes": {"my_oauth": {"list": ["read_all"]}}}],
	  "default_input_modes": ["text/plain"], "default_output_modes": ["application/json"],
	  "skills": [{"id": "s", "name": "S", "description": "sd", "tags": ["t"], "input_modes": ["text/plain"],
	    "security_requirements": [{"schemes": {"my_api_key": {"list": []}}}]}],
	  "signatures": [{"protected": "p", "signature": "s", "header": {"key_id": "k1"}}]
	}`
	var got AgentCard
	if err := Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	want := AgentCard{
		Name: "a", Description: "d", Version: "1",
		SupportedInterfaces: []AgentInterface{{URL: "https://a", ProtocolBinding: BindingJSONRPC, ProtocolVersion: "1.0", Tenant: "t"}},
		DocumentationURL:    ptr("https://docs"), IconURL: ptr("https://icon"),
		Capabilities: AgentCapabilities{Streaming: Bool(true), PushNotifications: Bool(false), ExtendedAgentCard: Bool(true),
			Extensions: []AgentExtension{{URI: "urn:x", Required: true, Params: map[string]any{"snake_param": map[string]any{"inner_key": 1.0}}}}},
		SecuritySchemes: map[string]SecurityScheme{
			"my_api_key": {APIKey: &APIKeySecurityScheme{Location: "header", Name: "X-Key"}},
			"my_oauth": {OAuth2: &OAuth2SecurityScheme{OAuth2MetadataURL: "https://m",
				Flows: json.RawMessage(`{"authorizationCode": {"authorizationUrl": "https://auth", "tokenUrl": "https://tok", "scopes": {"read_all": "Read", "write_all": "Write"}}}`)}},
			"oidc":   {OpenIDConnect: &OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://oidc"}},
			"bearer": {HTTPAuth: &HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"}},
			"mtls":   {MTLS: &MutualTLSSecurityScheme{Description: "m"}},
		},
		SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{"my_oauth": {List: []string{"read_all"}}}}},
		DefaultInputModes:    []string{"text/plain"}, DefaultOutputModes: []string{"application/json"},
		Skills: []AgentSkill{{ID: "s", Name: "S", Description: "sd", Tags: []string{"t"}, InputModes: []string{"text/plain"},
			SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{"my_api_key": {List: []string{}}}}}}},
		Signatures: []AgentCardSignature{{Protected: "p", Signature: "s", Header: map[string]any{"key_id": "k1"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// The snake_case fixture helper must produce something the tolerant reader
// maps back to the same value, for every encoder fixture.
func TestUnmarshalSnakeCaseRoundTrip(t *testing.T) {
	for name, task := range map[string]*Task{"small": smallTask(), "big": bigTask()} {
		t.Run(name, func(t *testing.T) {
			camel, err := AppendTask(nil, task)
			if err != nil {
				t.Fatal(err)
			}
			snake := camelToSnakeKeys(string(camel))
			if snake == string(camel) || !strings.Contains(snake, `"context_id"`) {
				t.Fatalf("fixture not snake_cased: %s", snake)
			}
			var fromCamel, fromSnake Task
			if err := Unmarshal(camel, &fromCamel); err != nil {
				t.Fatal(err)
			}
			if err := Unmarshal([]byte(snake), &fromSnake); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromCamel, fromSnake); diff != "" {
				t.Fatalf("(-camel +snake):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ``},
		{"truncated plain", `{"id":"t"`},
		{"truncated snake", `{"context_id":"t"`},
		{"garbage after value", `{"context_id":"t"} x`},
		{"bad literal in snake", `{"context_id":tru}`},
		{"unterminated string key", `{"context_id`},
		{"missing colon", `{"context_id" "x"}`},
		{"wrong type", `{"context_id":5}`},
		{"bad part", `{"history":[{"message_id":"m","parts":[{}]}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var task Task
			err := Unmarshal([]byte(tc.in), &task)
			if err == nil {
				t.Fatalf("Unmarshal(%q) succeeded", tc.in)
			}
			var syn *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if !errors.As(err, &syn) && !errors.As(err, &typ) && !errors.Is(err, ErrPartContent) {
				t.Fatalf("Unmarshal(%q) = %T %v, want an encoding/json error", tc.in, err, err)
			}
		})
	}
}

func TestCamelizeKeys(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"a_b":1}`, `{"aB":1}`},
		{` { "a_b" : [ {"c_d" : "e_f"} ] } `, ` { "aB" : [ {"cD" : "e_f"} ] } `},
		{`{"metadata":{"a_b":{"c_d":1}},"x_y":2}`, `{"metadata":{"a_b":{"c_d":1}},"xY":2}`},
		{`{"params":{"a_b":1},"header":{"a_b":1},"data":{"a_b":1}}`, `{"params":{"a_b":1},"header":{"a_b":1},"data":{"a_b":1}}`},
		{`{"security_schemes":{"my_key":{"api_key_security_scheme":{}}}}`, `{"securitySchemes":{"my_key":{"apiKeySecurityScheme":{}}}}`},
		{`{"flows":{"client_credentials":{"token_url":"u","scopes":{"a_b":"c"}}}}`, `{"flows":{"clientCredentials":{"tokenUrl":"u","scopes":{"a_b":"c"}}}}`},
		{`[{"a_b":1},2,"x_y",null]`, `[{"aB":1},2,"x_y",null]`},
		// Case variants of field names are neutralized, their values left alone.
		{`{"Metadata":{"a_b":1},"DATA":{"c_d":2},"Security_Schemes":{"my_k":{"x_y":1}}}`, `{"":{"a_b":1},"":{"c_d":2},"":{"my_k":{"x_y":1}}}`},
		{`{"ID":"x","id":"y","\u017Ftate":1}`, `{"":"x","id":"y","":1}`},
		{`{"x":"\"a_b\":"}`, `{"x":"\"a_b\":"}`},
		{`{"a__b_c":1,"_lead":2,"trail_":3,"a_1":4}`, `{"aBC":1,"lead":2,"trail":3,"a1":4}`},
	}
	for _, tc := range tests {
		got, err := normalizeKeys([]byte(tc.in))
		if err != nil {
			t.Errorf("normalizeKeys(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("normalizeKeys(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a_b"`, `{"a_b":}`, `[1,`, `{"a":1,}`, `"abc`, `{"a_b":1 "c":2}`, `{"a\`, `[`, `{1:2}`} {
		if _, err := normalizeKeys([]byte(bad)); err == nil {
			t.Errorf("normalizeKeys(%q) succeeded", bad)
		}
	}
}
