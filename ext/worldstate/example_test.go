package worldstate_test

import (
	"encoding/json"
	"fmt"

	"novaos.dev/novaos/ext/worldstate"
)

func Example() {
	md := worldstate.Metadata(worldstate.Payload{Deltas: []worldstate.Delta{
		{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1},
	}})
	b, _ := json.Marshal(md)
	fmt.Println(string(b))

	p, ok, err := worldstate.Parse(md)
	fmt.Println(ok, err)
	for _, d := range p.Deltas {
		fmt.Println(d.Domain, d.Path, d.Op, d.Value)
	}
	// Output:
	// {"https://proto-labs.ai/a2a/ext/worldstate-delta-v1":{"deltas":[{"domain":"board","path":"data.backlog","op":"inc","value":1}]}}
	// true <nil>
	// board data.backlog inc 1
}
