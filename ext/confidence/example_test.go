package confidence_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/extmeta"
)

func Example() {
	md := confidence.Metadata(confidence.Payload{Confidence: 0.92, Explanation: "high coverage"})
	b, _ := json.Marshal(md)
	fmt.Println(string(b))

	p, ok, err := confidence.Parse(md)
	fmt.Println(p.Confidence, ok, err)

	_, _, err = confidence.Parse(map[string]any{confidence.URI: map[string]any{"confidence": 1.5}})
	fmt.Println(errors.Is(err, extmeta.ErrInvalid), err)
	// Output:
	// {"https://proto-labs.ai/a2a/ext/confidence-v1":{"confidence":0.92,"explanation":"high coverage"}}
	// 0.92 true <nil>
	// true confidence-v1: confidence: must be a number from 0 to 1
}
