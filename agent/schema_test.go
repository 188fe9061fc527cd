package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seed 000, novaos_client_sdk.schema_validation.validate_against_schema:
// "A list of human-readable validation error messages, in the order
// jsonschema discovers them. Empty list means data is valid. A malformed
// schema (e.g. an invalid regex in a pattern keyword, or a $ref this
// function refuses to resolve) also produces an error message here rather
// than raising"; and "a $ref that would require fetching fails validation
// with a clear error instead of ever being retrieved".
func TestValidateAgainstSchema(t *testing.T) {
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()

	person := map[string]any{
		"type":     "object",
		"required": []any{"name", "age"},
		"properties": map[string]any{
			"name": map[string]any{"type": "string"},
			"age":  map[string]any{"type": "integer", "minimum": 0},
		},
	}
	tests := []struct {
		name   string
		data   any
		schema any
		want   []string // exact messages; nil means valid
		has    []string // substrings of the messages, in order, when the exact text is the library's
	}{
		{name: "valid map", data: map[string]any{"name": "Ada", "age": 36}, schema: person},
		{name: "valid struct", data: struct {
			Name string `json:"name"`
			Age  int    `json:"age"`
		}{"Ada", 36}, schema: person},
		{name: "valid raw JSON", data: json.RawMessage(`{"name":"Ada","age":36}`), schema: json.RawMessage(`{"type":"object"}`)},
		{name: "one violation", data: map[string]any{"name": "Ada", "age": -1}, schema: person,
			want: []string{"at /age: minimum: got -1, want 0"}},
		{name: "every violation, in order", data: map[string]any{"name": 7, "age": "old"}, schema: person,
			has: []string{"at /age:", "at /name:"}},
		{name: "missing property", data: map[string]any{"name": "Ada"}, schema: person,
			has: []string{"at /: missing property 'age'"}},
		{name: "pointer escaped", data: map[string]any{"a/b": 1}, schema: map[string]any{
			"properties": map[string]any{"a/b": map[string]any{"type": "string"}}},
			has: []string{"at /a~1b:"}},
		{name: "invalid pattern is a message", data: "x", schema: map[string]any{"pattern": "("},
			has: []string{"invalid schema:"}},
		{name: "schema not an object", data: "x", schema: []any{1},
			want: []string{"invalid schema: a schema is a JSON object or a boolean"}},
		{name: "remote $ref refused, never fetched", data: "x", schema: map[string]any{"$ref": srv.URL + "/s.json"},
			has: []string{"external references are not fetched"}},
		{name: "file $ref refused", data: "x", schema: map[string]any{"$ref": "file:///etc/passwd"},
			has: []string{"external references are not fetched"}},
		{name: "local $ref resolves", data: map[string]any{"n": "x"}, schema: map[string]any{
			"$defs":      map[string]any{"num": map[string]any{"type": "number"}},
			"properties": map[string]any{"n": map[string]any{"$ref": "#/$defs/num"}}},
			has: []string{"at /n:"}},
		{name: "known draft by $schema", data: 1, schema: map[string]any{
			"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}},
		{name: "false schema rejects", data: 1, schema: false, has: []string{"at /:"}},
		{name: "schema too large", data: 1, schema: map[string]any{"description": strings.Repeat("x", MaxOutputSchemaBytes)},
			has: []string{"invalid schema:", "over the"}},
		{name: "data that does not encode", data: func() {}, schema: person,
			has: []string{"does not encode as JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateAgainstSchema(tt.data, tt.schema)
			if tt.has == nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("messages (-want +got):\n%s", diff)
				}
				return
			}
			joined := strings.Join(got, "\n")
			at := 0
			for _, s := range tt.has {
				i := strings.Index(joined[at:], s)
				if i < 0 {
					t.Fatalf("messages %q lack %q (in order)", got, s)
				}
				at += i
			}
		})
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("the schema's remote $ref was fetched %d times", n)
	}
}

// seed 000, AgentExecutionContext.output_schema: "Caller-supplied JSON
// Schema for structured extraction (Ex10), if any. None when the caller
// didn't supply one."
func TestContextValidateOutput(t *testing.T) {
	tests := []struct {
		name   string
		schema map[string]any
		out    any
		want   int // messages
	}{
		{"no schema: anything passes", nil, 42, 0},
		{"matches", map[string]any{"type": "integer"}, 42, 0},
		{"mismatch", map[string]any{"type": "string"}, 42, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var schema map[string]any
			a := oneSkill(func(c *Context) (Result, error) {
				schema, got = c.OutputSchema(), c.ValidateOutput(tt.out)
				return Result{}, nil
			})
			req := request("hi")
			if tt.schema != nil {
				req.Metadata = map[string]any{ContextMetadataKey: map[string]any{"output_schema": tt.schema}}
			}
			if _, err := run(t, a, req); err != nil {
				t.Fatal(err)
			}
			if !cmp.Equal(schema, tt.schema) {
				t.Errorf("OutputSchema = %v, want %v", schema, tt.schema)
			}
			if len(got) != tt.want {
				t.Errorf("ValidateOutput = %q, want %d messages", got, tt.want)
			}
		})
	}
}
