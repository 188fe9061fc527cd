package cost_test

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/ext/cost"
)

func Example() {
	md := cost.Metadata(cost.Payload{
		Usage:      cost.Usage{InputTokens: 1500, OutputTokens: 420},
		DurationMs: new(int64(900)),
		CostUSD:    new(0.01),
		Success:    new(true),
	})
	b, _ := json.Marshal(md)
	fmt.Println(string(b))

	// A client reads it back from an artifact's decoded metadata.
	var wire map[string]any
	_ = json.Unmarshal(b, &wire)
	p, ok, err := cost.Parse(wire)
	fmt.Println(ok, err, p.Usage.InputTokens+p.Usage.OutputTokens, *p.CostUSD)

	_, ok, _ = cost.Parse(map[string]any{"unrelated": 1})
	fmt.Println(ok)
	// Output:
	// {"https://proto-labs.ai/a2a/ext/cost-v1":{"usage":{"input_tokens":1500,"output_tokens":420},"durationMs":900,"costUsd":0.01,"success":true}}
	// true <nil> 1920 0.01
	// false
}
