package memorysvc

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolSchemasAreObjects walks every tool's input and output schema as
// a client receives it: the root is an object schema (type "object"), and
// every schema inside it, in properties, items, additionalProperties and
// the combinators, is a JSON object. Strict MCP clients (the TypeScript
// SDK's listTools, the Inspector's --strict mode) refuse a boolean schema
// where the MCP schema wants an object; the one boolean kept is
// additionalProperties false, which closes an object and is no property
// schema.
func TestToolSchemasAreObjects(t *testing.T) {
	s, _ := newService(t, nil)
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCPServer("test").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 8 {
		t.Errorf("%d tools, want 8", len(res.Tools))
	}
	for _, tool := range res.Tools {
		for kind, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			root, ok := v.(map[string]any)
			if !ok || root["type"] != "object" {
				t.Errorf("%s %s schema: root %s is not an object schema with type \"object\"", tool.Name, kind, b)
				continue
			}
			for _, p := range nonObjectSchemas(root, "") {
				t.Errorf("%s %s schema: %s", tool.Name, kind, p)
			}
		}
	}
}

// nonObjectSchemas lists the places in schema s (at path) that hold a
// schema which is not a JSON object.
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
	if props, ok := s["properties"]; ok {
		m, ok := props.(map[string]any)
		if !ok {
			bad = append(bad, path+".properties is not an object")
		}
		for k, p := range m {
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
	for _, k := range []string{"$defs", "definitions", "patternProperties", "dependentSchemas"} {
		if m, ok := s[k].(map[string]any); ok {
			for name, sub := range m {
				check(sub, path+"."+k+"."+name)
			}
		}
	}
	return bad
}
