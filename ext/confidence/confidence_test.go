package confidence_test

import (
	"encoding/json"
	"testing"

	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/internal/exttest"
)

func TestGolden(t *testing.T) {
	// The extension's Python usage sample: confidence_metadata(0.92, explanation="high coverage").
	exttest.Golden(t, confidence.Metadata(confidence.Payload{Confidence: 0.92, Explanation: "high coverage"}),
		confidence.URI, `{"confidence": 0.92, "explanation": "high coverage"}`)
	exttest.Golden(t, confidence.Metadata(confidence.Payload{Confidence: 0, Success: new(false)}),
		confidence.URI, `{"confidence":0,"success":false}`)
}

func TestRoundTrip(t *testing.T) {
	exttest.RoundTrip(t, confidence.URI, confidence.Metadata, confidence.Parse, []confidence.Payload{
		{Confidence: 0.92, Explanation: "high coverage"},
		{Confidence: 1, Success: new(true)},
		{Confidence: 0},
	})
}

func TestParse(t *testing.T) {
	obj := func(s string) map[string]any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{confidence.URI: v}
	}
	exttest.RunParse(t, confidence.Parse, []exttest.Case[confidence.Payload]{
		{Name: "absent", MD: map[string]any{"https://proto-labs.ai/a2a/ext/cost-v1": map[string]any{}}},
		{Name: "full", MD: obj(`{"confidence":0.5,"explanation":"why","success":true,"extra":1}`), WantOK: true,
			Want: confidence.Payload{Confidence: 0.5, Explanation: "why", Success: new(true)}},
		{Name: "integer bounds", MD: obj(`{"confidence":1}`), WantOK: true, Want: confidence.Payload{Confidence: 1}},
		{Name: "missing", MD: obj(`{"explanation":"why"}`), WantOK: true, WantErr: true},
		{Name: "above one", MD: obj(`{"confidence":1.01}`), WantOK: true, WantErr: true},
		{Name: "negative", MD: obj(`{"confidence":-0.1}`), WantOK: true, WantErr: true},
		{Name: "string", MD: obj(`{"confidence":"0.5"}`), WantOK: true, WantErr: true},
		{Name: "explanation not a string", MD: obj(`{"confidence":0.5,"explanation":3}`), WantOK: true, WantErr: true},
		{Name: "not an object", MD: obj(`0.5`), WantOK: true, WantErr: true},
		{Name: "typed out of range", MD: map[string]any{confidence.URI: confidence.Payload{Confidence: 2}}, WantOK: true, WantErr: true},
	})
}

var benchPayload = confidence.Payload{Confidence: 0.92, Explanation: "high coverage"}

func BenchmarkMetadata(b *testing.B) {
	exttest.BenchMetadata(b, func() map[string]any { return confidence.Metadata(benchPayload) })
}

func BenchmarkParse(b *testing.B) {
	exttest.BenchParse(b, confidence.Metadata(benchPayload), confidence.Parse)
}

func BenchmarkParseNaive(b *testing.B) {
	exttest.BenchNaiveParse[confidence.Payload](b, confidence.Metadata(benchPayload), confidence.URI)
}
