package strictjson_test

import (
	"errors"
	"fmt"

	"novaos.dev/novaos/strictjson"
)

// A verdict that says kill and then pass is refused, and the error says
// where; so is a field name the reader does not know exactly.
func Example() {
	o := &strictjson.Options{Object: true, FoldCase: true}
	err := strictjson.Check([]byte(`{"verdict":"kill","Verdict":"pass"}`), o)
	var se *strictjson.Error
	if errors.As(err, &se) {
		fmt.Println(se.Problem, se.Path)
	}

	o = &strictjson.Options{Fields: &strictjson.Fields{Names: map[string]*strictjson.Fields{"scope": nil}}}
	fmt.Println(strictjson.Check([]byte(`{"Scope":"run"}`), o))
	// Output:
	// duplicate $.Verdict
	// unknown member "Scope" at $.Scope
}
