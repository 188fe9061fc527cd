package schemacheck

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// seed 000, novaos_client_sdk.schema_validation: "This module always
// validates against an explicit registry that refuses to resolve any
// external reference (network or filesystem) — a $ref that would require
// fetching fails validation with a clear error instead of ever being
// retrieved."
func TestCompileRefusesExternalRefs(t *testing.T) {
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		schema  any
		wantErr string
	}{
		{"http", map[string]any{"$ref": srv.URL + "/s.json"}, "external references are not fetched"},
		{"file", map[string]any{"$ref": "file://" + filepath.ToSlash(file)}, "external references are not fetched"},
		{"relative to a remote $id", map[string]any{"$id": srv.URL + "/root.json", "$ref": "other.json"}, "external references are not fetched"},
		{"nested", json.RawMessage(`{"properties":{"a":{"$ref":"` + srv.URL + `/a.json"}}}`), "external references are not fetched"},
		{"local", map[string]any{"$defs": map[string]any{"s": map[string]any{"type": "string"}}, "$ref": "#/$defs/s"}, ""},
		{"embedded draft", map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema"}, ""},
		{"over the limit", json.RawMessage(`{"description":"` + strings.Repeat("x", 100) + `"}`), "over the 64-byte limit"},
		{"not a schema", json.RawMessage(`[1]`), "a schema is a JSON object or a boolean"},
		{"not JSON", json.RawMessage(`{`), "EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := 0
			if tt.name == "over the limit" {
				limit = 64
			}
			_, err := Compile(tt.schema, limit)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Compile: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Compile error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if n := fetched.Load(); n != 0 {
		t.Errorf("a remote schema was fetched %d times", n)
	}
}

// seed 000, validate_against_schema: "A list of human-readable validation
// error messages, in the order jsonschema discovers them. Empty list means
// data is valid."
func TestValidateMessages(t *testing.T) {
	many := map[string]any{}
	for i := range 60 {
		many[fmt.Sprintf("k%02d", i)] = "x"
	}
	tests := []struct {
		name   string
		data   any
		schema any
		want   []string
	}{
		{"valid", map[string]any{"a": 1}, map[string]any{"type": "object"}, nil},
		{"root", 1, map[string]any{"type": "string"}, []string{"at /: got number, want string"}},
		{"escaped pointer", map[string]any{"a/b~c": 1}, map[string]any{"properties": map[string]any{"a/b~c": map[string]any{"type": "string"}}},
			[]string{"at /a~1b~0c: got number, want string"}},
		{"capped", many, map[string]any{"additionalProperties": map[string]any{"type": "integer"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate(tt.data, tt.schema)
			if tt.name == "capped" {
				if len(got) != maxMessages+1 || got[maxMessages] != "… and 10 more" {
					t.Fatalf("%d messages, last %q: want %d and a count", len(got), got[len(got)-1], maxMessages+1)
				}
				return
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Validate = %q, want %q", got, tt.want)
			}
		})
	}
}

func ExampleValidate() {
	schema := map[string]any{
		"type":       "object",
		"required":   []any{"name"},
		"properties": map[string]any{"age": map[string]any{"type": "integer", "minimum": 0}},
	}
	fmt.Println(Validate(map[string]any{"name": "Ada", "age": 36}, schema))
	fmt.Println(Validate(map[string]any{"age": -1}, schema))
	// Output:
	// []
	// [at /: missing property 'name' at /age: minimum: got -1, want 0]
}
