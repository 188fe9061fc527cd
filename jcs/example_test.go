package jcs_test

import (
	"fmt"
	"slices"

	"novaos.dev/novaos/jcs"
)

// A small canonical object written by hand: names sorted in UTF-16 order
// (the emoji, a surrogate pair, sorts before U+FB33), then each member's
// name and value with JCS's escaping and number form.
func Example() {
	members := map[string]float64{"\ufb33": 1e21, "😀": 0.000001, "a\tb": -0.5, "n": 100}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.SortFunc(names, jcs.Compare)

	b := []byte{'{'}
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = jcs.AppendString(b, name)
		b = append(b, ':')
		b = jcs.AppendNumber(b, members[name])
	}
	b = append(b, '}')
	fmt.Println(string(b))
	// Output: {"a\tb":-0.5,"n":100,"😀":0.000001,"דּ":1e+21}
}

// A document in any spelling canonicalizes to one form.
func ExampleCanonicalize() {
	canon, err := jcs.Canonicalize([]byte(`{ "b": 1.0, "a": "\u0078", "c": [1e2] }`), nil)
	fmt.Println(string(canon), err)
	// Output: {"a":"x","b":1,"c":[100]} <nil>
}
