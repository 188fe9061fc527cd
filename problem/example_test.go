package problem_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"novaos.dev/novaos/problem"
)

// A refusal travels as JSON and comes back as an error a caller can
// branch on by its type.
func Example() {
	sent, _ := json.Marshal(&problem.Problem{Type: problem.TypeMalformedJSON, Title: "Malformed JSON", Status: 400,
		Detail: `duplicate member "scope" at $.scope`, Errors: []problem.FieldError{{Field: "scope", Message: "named twice"}}})
	fmt.Println(string(sent))

	var p problem.Problem
	_ = json.Unmarshal(sent, &p)
	var err error = &p
	var got *problem.Problem
	fmt.Println(errors.As(err, &got) && got.Type == problem.TypeMalformedJSON, err)
	// Output:
	// {"type":"https://novaos.dev/problems/malformed-json","title":"Malformed JSON","status":400,"detail":"duplicate member \"scope\" at $.scope","errors":[{"field":"scope","message":"named twice"}]}
	// true problem: 400 Malformed JSON: duplicate member "scope" at $.scope
}
