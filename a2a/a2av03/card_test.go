package a2av03_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

func v1Card() *a2a.AgentCard {
	docs, icon := "https://docs.example.com", "https://example.com/icon.png"
	return &a2a.AgentCard{
		Name: "agent", Description: "does things", Version: "2.1.0",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: "https://a.example.com/rest", ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: "1.0"},
			{URL: "https://a.example.com/rpc", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "1.0"},
			{URL: "https://a.example.com/rpc03", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"},
			{URL: "https://a.example.com/grpc03", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "0.3"},
			{URL: "https://a.example.com/grpc", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "1.0"},
		},
		Provider:         &a2a.AgentProvider{Organization: "Example", URL: "https://example.com"},
		DocumentationURL: &docs, IconURL: &icon,
		Capabilities: a2a.AgentCapabilities{
			Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false), ExtendedAgentCard: a2a.Bool(true),
			Extensions: []a2a.AgentExtension{{URI: "https://ext.example/cost", Required: true, Params: map[string]any{"big": json.Number("12345678901234567890")}}},
		},
		SecuritySchemes: map[string]a2a.SecurityScheme{
			"key":    {APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: "X-Key", Description: "d"}},
			"bearer": {HTTPAuth: &a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT"}},
			"oauth":  {OAuth2: &a2a.OAuth2SecurityScheme{Flows: json.RawMessage(`{"clientCredentials":{"tokenUrl":"https://t","scopes":{"read":"r"}}}`)}},
			"oidc":   {OpenIDConnect: &a2a.OpenIDConnectSecurityScheme{OpenIDConnectURL: "https://o/.well-known/openid-configuration"}},
			"mtls":   {MTLS: &a2a.MutualTLSSecurityScheme{}},
		},
		SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"oauth": {List: []string{"read"}}, "key": {List: []string{}}}}},
		DefaultInputModes:    []string{"text/plain"},
		DefaultOutputModes:   []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{
			{ID: "s1", Name: "one", Description: "first", Tags: []string{"a"}, Examples: []string{"ex"}, InputModes: []string{"text/plain"},
				SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"bearer": {List: []string{}}}}}},
			{ID: "s2", Name: "two", Description: "second", Tags: []string{}},
		},
		Signatures: []a2a.AgentCardSignature{{Protected: "p", Signature: "s"}},
	}
}

func TestCardFromV1(t *testing.T) {
	c, err := a2av03.CardFromV1(v1Card())
	if err != nil {
		t.Fatal(err)
	}
	// The interface that states 0.3 is the main one; v1-only REST and
	// gRPC are not offered to 0.3 clients.
	if c.URL != "https://a.example.com/rpc03" || c.PreferredTransport != "JSONRPC" || c.ProtocolVersion != "0.3.0" {
		t.Errorf("main = %s %s %s", c.URL, c.PreferredTransport, c.ProtocolVersion)
	}
	want := []a2av03.AgentInterface{
		{URL: "https://a.example.com/rpc03", Transport: "JSONRPC"},
		{URL: "https://a.example.com/rpc", Transport: "JSONRPC"},
		{URL: "https://a.example.com/grpc03", Transport: "GRPC"},
	}
	if diff := cmp.Diff(want, c.AdditionalInterfaces); diff != "" {
		t.Errorf("additionalInterfaces (-want +got):\n%s", diff)
	}
	if !c.SupportsAuthenticatedExtendedCard || c.Signatures != nil {
		t.Errorf("extended card %v, signatures %v", c.SupportsAuthenticatedExtendedCard, c.Signatures)
	}
	wantSchemes := map[string]a2av03.SecurityScheme{
		"key":    {Type: "apiKey", In: "header", Name: "X-Key", Description: "d"},
		"bearer": {Type: "http", Scheme: "Bearer", BearerFormat: "JWT"},
		"oauth":  {Type: "oauth2", Flows: json.RawMessage(`{"clientCredentials":{"tokenUrl":"https://t","scopes":{"read":"r"}}}`)},
		"oidc":   {Type: "openIdConnect", OpenIDConnectURL: "https://o/.well-known/openid-configuration"},
		"mtls":   {Type: "mutualTLS"},
	}
	if diff := cmp.Diff(wantSchemes, c.SecuritySchemes); diff != "" {
		t.Errorf("securitySchemes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]map[string][]string{{"oauth": {"read"}, "key": {}}}, c.Security); diff != "" {
		t.Errorf("security (-want +got):\n%s", diff)
	}

	// Without an interface stating 0.3, the first JSON-RPC one serves.
	v1 := v1Card()
	v1.SupportedInterfaces = v1.SupportedInterfaces[:2]
	if c, err := a2av03.CardFromV1(v1); err != nil || c.URL != "https://a.example.com/rpc" || len(c.AdditionalInterfaces) != 1 {
		t.Errorf("card %+v, %v", c, err)
	}
	v1.SupportedInterfaces = v1.SupportedInterfaces[:1]
	if _, err := a2av03.CardFromV1(v1); !errors.Is(err, a2av03.ErrNoJSONRPCInterface) {
		t.Errorf("REST-only card: %v", err)
	}
}

// TestCardRoundTrip: a v1 card read back from its 0.3 form keeps
// everything but what 0.3 lacks (the interfaces' own versions, the
// signatures of the v1 document, deviceCode flows).
func TestCardRoundTrip(t *testing.T) {
	in := v1Card()
	c03, err := a2av03.CardFromV1(in)
	if err != nil {
		t.Fatal(err)
	}
	wire, err := json.Marshal(c03)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a2av03.ParseCard(wire)
	if err != nil {
		t.Fatalf("%v; card %s", err, wire)
	}
	want := v1Card()
	want.SupportedInterfaces = []a2a.AgentInterface{
		{URL: "https://a.example.com/rpc03", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"},
		{URL: "https://a.example.com/rpc", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: "0.3.0"},
		{URL: "https://a.example.com/grpc03", ProtocolBinding: a2a.BindingGRPC, ProtocolVersion: "0.3.0"},
	}
	want.Signatures = nil
	// Free-form values come back as encoding/json reads them.
	want.Capabilities.Extensions[0].Params = map[string]any{"big": 12345678901234567890.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
}

// TestHybridCard: the hybrid card reads as the v1 card for a v1 reader and
// as the 0.3 card for a 0.3 reader.
func TestHybridCard(t *testing.T) {
	in := v1Card()
	in.Capabilities.Extensions[0].Params = map[string]any{"n": 1.5}
	hybrid, err := a2av03.HybridCard(in)
	if err != nil {
		t.Fatal(err)
	}
	var asV1 a2a.AgentCard
	if err := a2a.Unmarshal(hybrid, &asV1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, &asV1, rawJSON); diff != "" {
		t.Errorf("v1 reading (-want +got):\n%s\nhybrid %s", diff, hybrid)
	}
	var as03 a2av03.AgentCard
	if err := a2av03.Unmarshal(hybrid, &as03); err != nil {
		t.Fatal(err)
	}
	want03, _ := a2av03.CardFromV1(in)
	want03.Signatures = []a2av03.AgentCardSignature{{Protected: "p", Signature: "s"}} // v1's, kept in the hybrid
	if diff := cmp.Diff(want03, &as03, rawJSON); diff != "" {
		t.Errorf("0.3 reading (-want +got):\n%s", diff)
	}
	parsed, err := a2av03.ParseCard(hybrid)
	if err != nil || !cmp.Equal(in, parsed, rawJSON) {
		t.Errorf("ParseCard took the hybrid as 0.3: %v", err)
	}
}

// rawJSON compares raw JSON by value: the hybrid card's members come out
// in another order.
var rawJSON = cmp.Transformer("json", func(r json.RawMessage) any {
	var v any
	if err := json.Unmarshal(r, &v); err != nil {
		return string(r)
	}
	return v
})

func TestCardErrors(t *testing.T) {
	for _, in := range []string{
		`{"name":"a","url":"u","securitySchemes":{"x":{"type":"magic"}}}`,
		`{"name":"a","name":"b"}`,
		`[]`,
		`{"supportedInterfaces":[{"url":1}]}`,
	} {
		if c, err := a2av03.ParseCard([]byte(in)); err == nil {
			t.Errorf("%s: accepted %+v", in, c)
		}
	}
}
