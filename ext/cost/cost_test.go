package cost_test

import (
	"encoding/json"
	"testing"

	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/internal/exttest"
)

func TestGolden(t *testing.T) {
	// The examples of the extension's reference: its metadata-convention
	// sample and its Python usage sample.
	exttest.Golden(t, cost.Metadata(cost.Payload{
		Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}, CostUSD: new(0.01), Success: new(true),
	}), cost.URI, `{ "usage": { "input_tokens": 1500, "output_tokens": 420 }, "costUsd": 0.01, "success": true }`)
	exttest.Golden(t, cost.Metadata(cost.Payload{
		Usage:      cost.Usage{InputTokens: 1500, OutputTokens: 420},
		DurationMs: new(int64(900)), CostUSD: new(0.01), Success: new(true),
	}), cost.URI, `{"usage": {"input_tokens": 1500, "output_tokens": 420}, "durationMs": 900, "costUsd": 0.01, "success": true}`)
	exttest.Golden(t, cost.Metadata(cost.Payload{
		Usage:   cost.Usage{InputTokens: 1, OutputTokens: 2, CacheCreationInputTokens: new(int64(3)), CacheReadInputTokens: new(int64(0))},
		CostUSD: new(0.0), Success: new(false),
	}), cost.URI, `{"usage":{"input_tokens":1,"output_tokens":2,"cache_creation_input_tokens":3,"cache_read_input_tokens":0},"costUsd":0,"success":false}`)
}

func TestRoundTrip(t *testing.T) {
	exttest.RoundTrip(t, cost.URI, cost.Metadata, cost.Parse, []cost.Payload{
		{Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}},
		{
			Usage:      cost.Usage{InputTokens: 1, OutputTokens: 2, CacheCreationInputTokens: new(int64(3)), CacheReadInputTokens: new(int64(4))},
			DurationMs: new(int64(0)), CostUSD: new(0.0134), Success: new(false),
		},
	})
}

func TestParse(t *testing.T) {
	obj := func(s string) map[string]any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{cost.URI: v}
	}
	exttest.RunParse(t, cost.Parse, []exttest.Case[cost.Payload]{
		{Name: "absent", MD: map[string]any{"https://example.com/other": map[string]any{}}},
		{Name: "nil map"},
		{Name: "minimal", MD: obj(`{"usage":{"input_tokens":1,"output_tokens":2}}`), WantOK: true,
			Want: cost.Payload{Usage: cost.Usage{InputTokens: 1, OutputTokens: 2}}},
		{Name: "unknown fields ignored", MD: obj(`{"usage":{"input_tokens":1,"output_tokens":2,"total":3},"model":"m"}`), WantOK: true,
			Want: cost.Payload{Usage: cost.Usage{InputTokens: 1, OutputTokens: 2}}},
		{Name: "integral float", MD: obj(`{"usage":{"input_tokens":1e3,"output_tokens":2.0}}`), WantOK: true,
			Want: cost.Payload{Usage: cost.Usage{InputTokens: 1000, OutputTokens: 2}}},
		{Name: "raw JSON", MD: map[string]any{cost.URI: json.RawMessage(`{"usage":{"input_tokens":5,"output_tokens":6},"success":true}`)}, WantOK: true,
			Want: cost.Payload{Usage: cost.Usage{InputTokens: 5, OutputTokens: 6}, Success: new(true)}},
		{Name: "null", MD: map[string]any{cost.URI: nil}, WantOK: true, WantErr: true},
		{Name: "not an object", MD: obj(`[1]`), WantOK: true, WantErr: true},
		{Name: "invalid raw JSON", MD: map[string]any{cost.URI: json.RawMessage(`{"usage":`)}, WantOK: true, WantErr: true},
		{Name: "usage missing", MD: obj(`{"costUsd":1}`), WantOK: true, WantErr: true},
		{Name: "usage not an object", MD: obj(`{"usage":3}`), WantOK: true, WantErr: true},
		{Name: "input_tokens missing", MD: obj(`{"usage":{"output_tokens":2}}`), WantOK: true, WantErr: true},
		{Name: "fractional tokens", MD: obj(`{"usage":{"input_tokens":1.5,"output_tokens":2}}`), WantOK: true, WantErr: true},
		{Name: "string tokens", MD: obj(`{"usage":{"input_tokens":"1","output_tokens":2}}`), WantOK: true, WantErr: true},
		{Name: "negative tokens", MD: obj(`{"usage":{"input_tokens":-1,"output_tokens":2}}`), WantOK: true, WantErr: true},
		{Name: "negative cache tokens", MD: obj(`{"usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":-4}}`), WantOK: true, WantErr: true},
		{Name: "negative duration", MD: obj(`{"usage":{"input_tokens":1,"output_tokens":2},"durationMs":-1}`), WantOK: true, WantErr: true},
		{Name: "negative cost", MD: obj(`{"usage":{"input_tokens":1,"output_tokens":2},"costUsd":-0.5}`), WantOK: true, WantErr: true},
		{Name: "success not a boolean", MD: obj(`{"usage":{"input_tokens":1,"output_tokens":2},"success":"yes"}`), WantOK: true, WantErr: true},
		{Name: "typed value out of range", MD: map[string]any{cost.URI: cost.Payload{DurationMs: new(int64(-5))}}, WantOK: true, WantErr: true},
	})
}

func TestValidate(t *testing.T) {
	for name, p := range map[string]cost.Payload{
		"NaN cost":      {CostUSD: new(nan())},
		"negative cost": {CostUSD: new(-1.0)},
		"negative out":  {Usage: cost.Usage{OutputTokens: -1}},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("%s: Validate = nil", name)
		}
	}
	if err := (cost.Payload{}).Validate(); err != nil {
		t.Errorf("zero payload: %v", err)
	}
}

func nan() float64 { var z float64; return z / z }

var benchPayload = cost.Payload{Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}, DurationMs: new(int64(900)), CostUSD: new(0.01), Success: new(true)}

func BenchmarkMetadata(b *testing.B) {
	exttest.BenchMetadata(b, func() map[string]any { return cost.Metadata(benchPayload) })
}

func BenchmarkParse(b *testing.B) {
	exttest.BenchParse(b, cost.Metadata(benchPayload), cost.Parse)
}

func BenchmarkParseNaive(b *testing.B) {
	exttest.BenchNaiveParse[cost.Payload](b, cost.Metadata(benchPayload), cost.URI)
}
