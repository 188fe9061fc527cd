package a2a_test

import (
	"reflect"
	"testing"

	"novaos.dev/novaos/a2a"
)

func TestJSONFieldName(t *testing.T) {
	type sample struct {
		Plain    string
		Tagged   string `json:"tagged"`
		Options  string `json:",omitempty"`
		Skipped  string `json:"-"`
		Dash     string `json:"-,"`
		unexport string
	}
	want := map[string]struct {
		name string
		ok   bool
	}{
		"Plain": {"Plain", true}, "Tagged": {"tagged", true}, "Options": {"Options", true},
		"Skipped": {"", false}, "Dash": {"-", true}, "unexport": {"", false},
	}
	for f := range reflect.TypeFor[sample]().Fields() {
		name, ok := a2a.JSONFieldName(f)
		if w := want[f.Name]; name != w.name || ok != w.ok {
			t.Errorf("%s: (%q, %v), want (%q, %v)", f.Name, name, ok, w.name, w.ok)
		}
	}
}
