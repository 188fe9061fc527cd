package extmeta_test

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/extmeta"
)

// Several extensions on one artifact: merge their fragments.
func ExampleMerge() {
	md := extmeta.Merge(
		cost.Metadata(cost.Payload{Usage: cost.Usage{InputTokens: 10, OutputTokens: 5}}),
		confidence.Metadata(confidence.Payload{Confidence: 0.8}),
	)
	b, _ := json.Marshal(md)
	fmt.Println(string(b))
	// Output:
	// {"https://proto-labs.ai/a2a/ext/confidence-v1":{"confidence":0.8},"https://proto-labs.ai/a2a/ext/cost-v1":{"usage":{"input_tokens":10,"output_tokens":5}}}
}
