package builtin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/builtin"
	"novaos.dev/novaos/tools"
)

// allTools lists the tools of every server built in this package with
// their defaults (the connectors' from a fake host).
func allTools(t *testing.T) []toolgw.Tool {
	t.Helper()
	notify, err := builtin.Notify(nil)
	if err != nil {
		t.Fatal(err)
	}
	web, err := builtin.HTTP(&builtin.HTTPOptions{AllowedDomains: []string{"*.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	agents, err := builtin.Agents(&fakeCaller{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conns := connectorsFor(t, newConnectorHost(t), nil)
	var out []toolgw.Tool
	for _, p := range []toolgw.Provider{notify, web, builtin.HITL(), agents, conns} {
		list, err := p.Tools(context.Background(), testCaller())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, list...)
	}
	return out
}

func compile(t *testing.T, name string, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("%s: schema %s: %v", name, schema, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("tool.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("tool.json")
	if err != nil {
		t.Fatalf("%s: schema %s does not compile: %v", name, schema, err)
	}
	return s
}

// Every tool has a valid name, object schemas a strict MCP client takes,
// an answer shape in its description, annotations, and the class the
// platform's rules give its server.
func TestToolDescriptors(t *testing.T) {
	wantClass := map[string]tools.Class{
		builtin.NotifyWebhook: tools.ClassWrite, builtin.HTTPFetch: tools.ClassRead,
		builtin.HITLRequestInput: tools.ClassRead, builtin.AgentsCall: tools.ClassRead,
	}
	list := allTools(t)
	if len(list) != 4+len(catalogTools) {
		t.Fatalf("%d tools", len(list))
	}
	for _, tl := range list {
		t.Run(tl.Name, func(t *testing.T) {
			if !tools.ValidName(tl.Name) {
				t.Error("not a valid tool name")
			}
			if tl.Description == "" || tl.Annotations == nil {
				t.Error("no description or annotations")
			}
			for kind, schema := range map[string]json.RawMessage{"input": tl.InputSchema, "output": tl.OutputSchema} {
				if schema == nil && kind == "output" {
					continue
				}
				compile(t, tl.Name, schema)
				var root map[string]any
				if err := json.Unmarshal(schema, &root); err != nil || root["type"] != "object" {
					t.Errorf("%s schema %s: root is not an object schema", kind, schema)
					continue
				}
				for _, p := range nonObjectSchemas(root, "") {
					t.Errorf("%s schema: %s", kind, p)
				}
			}
			if want, ok := wantClass[tl.Name]; ok {
				if got := tools.ActionClass(tl.Name, tl.Annotations); got != want {
					t.Errorf("class %s, want %s", got, want)
				}
			}
		})
	}
}

// The schemas take the arguments the SDK bindings send and refuse what
// the tools refuse.
func TestToolSchemas(t *testing.T) {
	byName := map[string]toolgw.Tool{}
	for _, tl := range allTools(t) {
		byName[tl.Name] = tl
	}
	tests := []struct {
		tool string
		args string
		ok   bool
	}{
		{builtin.NotifyWebhook, `{"url":"https://hooks.example.com/x","payload":{"a":1}}`, true},
		{builtin.NotifyWebhook, `{"url":"https://hooks.example.com/x","payload":null,"headers":{"X-Sig":"1"}}`, true},
		{builtin.NotifyWebhook, `{"url":"https://hooks.example.com/x"}`, false},
		{builtin.NotifyWebhook, `{"url":"https://hooks.example.com/x","payload":1,"headers":{"X A":"1"}}`, false},
		{builtin.NotifyWebhook, `{"url":"https://hooks.example.com/x","payload":1,"headers":{"X-A":1}}`, false},
		{builtin.HTTPFetch, `{"url":"https://api.example.com/"}`, true},
		{builtin.HTTPFetch, `{"url":"https://api.example.com/","method":"HEAD"}`, true},
		{builtin.HTTPFetch, `{"url":"https://api.example.com/","method":"POST"}`, false},
		{builtin.HTTPFetch, `{"url":"https://api.example.com/","body":"x"}`, false},
		{builtin.HITLRequestInput, `{"prompt":"approve?","input_type":"text"}`, true},
		{builtin.HITLRequestInput, `{}`, false},
		{builtin.AgentsCall, `{"agent":"inst-2","message":"hi","skill_id":"s","data":{"a":1}}`, true},
		{builtin.AgentsCall, `{"agent":"inst-2","message":""}`, false},
		{builtin.AgentsCall, `{"agent":"inst-2","message":"hi","data":[1]}`, false},
		{"novaos.connector.slack.send_message", `{"channel":"#a","text":"b"}`, true},
		{"novaos.connector.slack.send_message", `{"channel":"#a"}`, false},
		{"novaos.connector.slack.list_channels", `{"anything":true}`, true},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i, tc.tool), func(t *testing.T) {
			tl, ok := byName[tc.tool]
			if !ok {
				t.Fatalf("no tool %s", tc.tool)
			}
			s := compile(t, tc.tool, tl.InputSchema)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tc.args)))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(doc); (err == nil) != tc.ok {
				t.Errorf("%s: valid %v, want %v (%v)", tc.args, err == nil, tc.ok, err)
			}
		})
	}
}

// nonObjectSchemas lists the places in schema s (at path) that hold a
// schema which is not a JSON object: strict MCP clients refuse boolean
// schemas there (additionalProperties false, which closes an object, is
// no property schema).
func nonObjectSchemas(s map[string]any, path string) []string {
	var bad []string
	check := func(v any, at string) {
		sub, ok := v.(map[string]any)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is %v, not an object schema", at, v))
			return
		}
		bad = append(bad, nonObjectSchemas(sub, at)...)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k, p := range props {
			check(p, path+".properties."+k)
		}
	}
	for _, k := range []string{"items", "not", "contains", "propertyNames", "if", "then", "else"} {
		if sub, ok := s[k]; ok {
			check(sub, path+"."+k)
		}
	}
	if ap, ok := s["additionalProperties"]; ok && ap != false {
		check(ap, path+".additionalProperties")
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if list, ok := s[k].([]any); ok {
			for i, sub := range list {
				check(sub, fmt.Sprintf("%s.%s[%d]", path, k, i))
			}
		}
	}
	return bad
}
