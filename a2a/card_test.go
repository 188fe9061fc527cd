package a2a

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/internal/schematest"
)

func TestAgentCardMarshal(t *testing.T) {
	tests := []struct {
		name string
		card AgentCard
		want string
	}{
		{"zero card writes required lists as []", AgentCard{},
			`{"name":"","description":"","supportedInterfaces":[],"version":"","capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],"skills":[]}`},
		{"nil tags, scopes and schemes", AgentCard{Name: "a",
			Skills:               []AgentSkill{{ID: "s", Name: "S", Description: "d"}},
			SecurityRequirements: []SecurityRequirement{{}, {Schemes: map[string]StringList{"k": {}}}}},
			`{"name":"a","description":"","supportedInterfaces":[],"version":"","capabilities":{},"securityRequirements":[{"schemes":{}},{"schemes":{"k":{"list":[]}}}],"defaultInputModes":[],"defaultOutputModes":[],"skills":[{"id":"s","name":"S","description":"d","tags":[]}]}`},
		{"full card", AgentCard{
			Name: "Echo", Description: "Echoes <text> & more", Version: "1.2.3",
			SupportedInterfaces: []AgentInterface{{URL: "https://echo.example/a2a", ProtocolBinding: BindingJSONRPC, ProtocolVersion: ProtocolVersion}},
			Provider:            &AgentProvider{Organization: "Acme", URL: "https://acme.example"},
			DocumentationURL:    ptr("https://docs.example"),
			Capabilities: AgentCapabilities{Streaming: Bool(true), PushNotifications: Bool(false), ExtendedAgentCard: Bool(false),
				Extensions: []AgentExtension{{URI: "urn:x", Required: true, Params: map[string]any{"a_b": 1}}}},
			SecuritySchemes: map[string]SecurityScheme{
				"bearer": {HTTPAuth: &HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"}},
				"oauth":  {OAuth2: &OAuth2SecurityScheme{Flows: json.RawMessage(`{"clientCredentials":{"tokenUrl":"https://t","scopes":{"read":"r"}}}`)}},
			},
			SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{"bearer": {List: []string{"read"}}}}},
			DefaultInputModes:    []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Skills:     []AgentSkill{{ID: "echo", Name: "Echo", Description: "d", Tags: []string{"test"}, Examples: []string{"hi"}}},
			Signatures: []AgentCardSignature{{Protected: "p", Signature: "s", Header: map[string]any{"kid": "k"}}},
			IconURL:    ptr("https://icon.example"),
		}, `{"name":"Echo","description":"Echoes \u003ctext\u003e \u0026 more","supportedInterfaces":[{"url":"https://echo.example/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"provider":{"organization":"Acme","url":"https://acme.example"},"version":"1.2.3","documentationUrl":"https://docs.example","capabilities":{"streaming":true,"pushNotifications":false,"extensions":[{"uri":"urn:x","required":true,"params":{"a_b":1}}],"extendedAgentCard":false},"securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"JWT"}},"oauth":{"oauth2SecurityScheme":{"flows":{"clientCredentials":{"tokenUrl":"https://t","scopes":{"read":"r"}}}}}},"securityRequirements":[{"schemes":{"bearer":{"list":["read"]}}}],"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[{"id":"echo","name":"Echo","description":"d","tags":["test"],"examples":["hi"]}],"signatures":[{"protected":"p","signature":"s","header":{"kid":"k"}}],"iconUrl":"https://icon.example"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(&tc.card)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			schematest.Validate(t, "Agent Card", got)
			var back AgentCard
			if err := Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(got), string(again)); diff != "" {
				t.Fatalf("re-encoding differs (-first +second):\n%s", diff)
			}
		})
	}
}

func TestListResponsesValidate(t *testing.T) {
	tasks, err := json.Marshal(ListTasksResponse{Tasks: []Task{*smallTask(), *bigTask()}, NextPageToken: "n", PageSize: 2, TotalSize: 9})
	if err != nil {
		t.Fatal(err)
	}
	schematest.Validate(t, "List Tasks Response", tasks)
	empty, _ := json.Marshal(ListTasksResponse{Tasks: []Task{}})
	schematest.Validate(t, "List Tasks Response", empty)
	cfgs, _ := json.Marshal(ListTaskPushNotificationConfigsResponse{Configs: []TaskPushNotificationConfig{{ID: "c", TaskID: "t", URL: "https://h", Token: "x",
		Authentication: &AuthenticationInfo{Scheme: "Bearer"}}}})
	schematest.Validate(t, "List Task Push Notification Configs Response", cfgs)
}
