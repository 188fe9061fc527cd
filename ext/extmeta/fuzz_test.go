package extmeta_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/ext/worldstate"
)

// checkParser parses v as the extension uri's payload; a payload that
// parses must survive Metadata and parse back equal.
func checkParser[P any](t *testing.T, uri string, v any, parse func(map[string]any) (P, bool, error), metadata func(P) map[string]any) {
	p, ok, err := parse(map[string]any{uri: v})
	if !ok {
		t.Fatalf("%s: ok = false for a present key", uri)
	}
	if err != nil {
		return
	}
	back, ok, err := parse(metadata(p))
	if !ok || err != nil {
		t.Fatalf("%s: %+v does not parse back: %v", uri, p, err)
	}
	if diff := cmp.Diff(p, back); diff != "" {
		t.Fatalf("%s: round trip (-first +second):\n%s", uri, diff)
	}
}

// FuzzParse feeds arbitrary JSON to the four parsers, both decoded and raw.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"usage":{"input_tokens":1500,"output_tokens":420},"durationMs":900,"costUsd":0.01,"success":true}`,
		`{"confidence":0.92,"explanation":"high coverage"}`,
		`{"deltas":[{"domain":"board","path":"data.backlog","op":"inc","value":1}]}`,
		`{"toolCallId":"call_1","name":"file_bug","phase":"completed","result":"BUG-12"}`,
		`{"usage":{"input_tokens":1e300}}`, `[]`, `null`, `{"deltas":[null]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		inputs := []any{json.RawMessage(data)}
		if json.Unmarshal(data, &v) == nil {
			inputs = append(inputs, v)
		}
		for _, in := range inputs {
			checkParser(t, cost.URI, in, cost.Parse, cost.Metadata)
			checkParser(t, confidence.URI, in, confidence.Parse, confidence.Metadata)
			checkParser(t, worldstate.URI, in, worldstate.Parse, worldstate.Metadata)
			checkParser(t, toolcall.URI, in, toolcall.Parse, toolcall.Metadata)
		}
	})
}
