package worldstate_test

import (
	"encoding/json"
	"testing"

	"novaos.dev/novaos/ext/worldstate"
	"novaos.dev/novaos/internal/exttest"
)

func TestGolden(t *testing.T) {
	// The extension's Python usage sample.
	exttest.Golden(t, worldstate.Metadata(worldstate.Payload{Deltas: []worldstate.Delta{
		{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1},
	}}), worldstate.URI, `{"deltas": [{"domain": "board", "path": "data.backlog", "op": "inc", "value": 1}]}`)
	exttest.Golden(t, worldstate.Metadata(worldstate.Payload{}), worldstate.URI, `{"deltas":[]}`)
	exttest.Golden(t, worldstate.Metadata(worldstate.Payload{Deltas: []worldstate.Delta{
		{Domain: "crm", Path: "deal.stage", Op: worldstate.OpSet, Value: nil},
		{Domain: "crm", Path: "deal.notes", Op: worldstate.OpPush, Value: map[string]any{"by": "agent"}},
	}}), worldstate.URI, `{"deltas":[{"domain":"crm","path":"deal.stage","op":"set","value":null},{"domain":"crm","path":"deal.notes","op":"push","value":{"by":"agent"}}]}`)
}

func TestRoundTrip(t *testing.T) {
	// Free-form values are those a JSON decoder produces (float64 numbers),
	// so that the wire trip gives back equal values.
	exttest.RoundTrip(t, worldstate.URI, worldstate.Metadata, worldstate.Parse, []worldstate.Payload{
		{Deltas: []worldstate.Delta{{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1.0}}},
		{Deltas: []worldstate.Delta{
			{Domain: "crm", Path: "deal.stage", Op: worldstate.OpSet, Value: "won"},
			{Domain: "crm", Path: "deal.tags", Op: worldstate.OpPush, Value: []any{"a", map[string]any{"b": true}}},
			{Domain: "crm", Path: "deal.owner", Op: worldstate.OpSet, Value: nil},
		}},
		{Deltas: []worldstate.Delta{}},
	})
}

func TestParse(t *testing.T) {
	obj := func(s string) map[string]any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{worldstate.URI: v}
	}
	exttest.RunParse(t, worldstate.Parse, []exttest.Case[worldstate.Payload]{
		{Name: "absent", MD: map[string]any{}},
		{Name: "one delta", MD: obj(`{"deltas":[{"domain":"d","path":"p","op":"inc","value":-2.5,"note":"x"}]}`), WantOK: true,
			Want: worldstate.Payload{Deltas: []worldstate.Delta{{Domain: "d", Path: "p", Op: worldstate.OpInc, Value: -2.5}}}},
		{Name: "empty", MD: obj(`{"deltas":[]}`), WantOK: true, Want: worldstate.Payload{Deltas: []worldstate.Delta{}}},
		{Name: "deltas missing", MD: obj(`{}`), WantOK: true, WantErr: true},
		{Name: "deltas not an array", MD: obj(`{"deltas":{}}`), WantOK: true, WantErr: true},
		{Name: "delta not an object", MD: obj(`{"deltas":["x"]}`), WantOK: true, WantErr: true},
		{Name: "unknown op", MD: obj(`{"deltas":[{"domain":"d","path":"p","op":"del","value":1}]}`), WantOK: true, WantErr: true},
		{Name: "empty domain", MD: obj(`{"deltas":[{"domain":"","path":"p","op":"set","value":1}]}`), WantOK: true, WantErr: true},
		{Name: "path missing", MD: obj(`{"deltas":[{"domain":"d","op":"set","value":1}]}`), WantOK: true, WantErr: true},
		{Name: "value missing", MD: obj(`{"deltas":[{"domain":"d","path":"p","op":"set"}]}`), WantOK: true, WantErr: true},
		{Name: "inc of a string", MD: obj(`{"deltas":[{"domain":"d","path":"p","op":"inc","value":"1"}]}`), WantOK: true, WantErr: true},
		{Name: "second delta bad", MD: obj(`{"deltas":[{"domain":"d","path":"p","op":"set","value":1},{"domain":"d","path":"p","op":7,"value":1}]}`), WantOK: true, WantErr: true},
	})
}

func TestErrorNamesTheDelta(t *testing.T) {
	_, _, err := worldstate.Parse(map[string]any{worldstate.URI: map[string]any{"deltas": []any{
		map[string]any{"domain": "d", "path": "p", "op": "set", "value": 1},
		map[string]any{"domain": "d", "path": "p", "op": "inc", "value": "x"},
	}}})
	if err == nil || err.Error() != "worldstate-delta-v1: deltas[1].value: must be a finite number for op inc" {
		t.Errorf("err = %v", err)
	}
	_, _, err = worldstate.Parse(map[string]any{worldstate.URI: map[string]any{"deltas": []any{map[string]any{"domain": 3}}}})
	if err == nil || err.Error() != "worldstate-delta-v1: deltas[0].domain: is a number, want a string" {
		t.Errorf("err = %v", err)
	}
}

var benchPayload = worldstate.Payload{Deltas: []worldstate.Delta{{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1}}}

func BenchmarkMetadata(b *testing.B) {
	exttest.BenchMetadata(b, func() map[string]any { return worldstate.Metadata(benchPayload) })
}

func BenchmarkParse(b *testing.B) {
	exttest.BenchParse(b, worldstate.Metadata(benchPayload), worldstate.Parse)
}

func BenchmarkParseNaive(b *testing.B) {
	exttest.BenchNaiveParse[worldstate.Payload](b, worldstate.Metadata(benchPayload), worldstate.URI)
}
