package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// seed 000, ToolBindings connector call: params_schema is validated
// client-side "via the same validate_against_schema used for Ex10
// structured extraction", whose schema_validation section says "a $ref that
// would require fetching fails validation with a clear error instead of
// ever being retrieved" — a file as much as a URL.
func TestConnectorSchemaRefusesFileRef(t *testing.T) {
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string
		ok     bool
	}{
		{"local definitions resolve", `{"$defs":{"o":{"type":"object"}},"$ref":"#/$defs/o"}`, true},
		{"file ref refused", `{"$ref":"file://` + filepath.ToSlash(file) + `"}`, false},
		{"remote ref refused", `{"$ref":"https://example.com/schema.json"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newFakeGateway(t, result(okResult))
			resp, err := testBindings(t, g, nil).Connector.Call(t.Context(), &ConnectorCall{ConnectorID: "c", Operation: "o",
				Params: map[string]any{"n": 1}, ParamsSchema: json.RawMessage(tt.schema)})
			if tt.ok {
				if err != nil || !resp.Success {
					t.Fatalf("%+v, %v", resp, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidArgument) || len(g.recorded()) != 0 {
				t.Fatalf("%+v, %v (%d requests): want the schema refused before any call", resp, err, len(g.recorded()))
			}
		})
	}
}
