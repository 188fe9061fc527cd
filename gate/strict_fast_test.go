package gate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// The fast path may only ever say "clean" where the token walk agrees;
// where it declines, CheckStructure's answer is the walk's.
func TestQuickClean(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	deepArray := func(n int) string { return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}" }
	for _, tc := range []struct {
		doc   string
		quick bool   // quickClean's answer
		want  string // CheckStructure's problem, "" for none
	}{
		{`{}`, true, ""},
		{` {"a":1,"b":[true,false,null,"x\n\u00e9",-0.5e+10,{}],"c":{"a":2}} `, true, ""},
		{`{"a":"é\u0000 \/"}`, true, ""},
		{deep(64), true, ""},
		{deep(65), false, "depth"},
		{deepArray(64), true, ""},
		{deepArray(65), false, "depth"},
		{`{"a":1,"a":2}`, false, "duplicate"},
		{`{"a":1,"A":2}`, false, "duplicate"},
		{`{"a":{"b":1},"c":{"b":1}}`, true, ""},
		{`{"a":1,"\u0061":2}`, false, "duplicate"},
		{"{\"\u212Aind\":1,\"kind\":2}", false, "duplicate"},
		{`{"é":1,"É":2}`, false, "duplicate"},
		{`{"\u00e9":1}`, false, ""},
		{`{"a":1} {}`, false, "trailing"},
		{`{"a":1}x`, false, "trailing"},
		{`[1]`, false, "not_object"},
		{`{"a":01}`, false, "syntax"},
		{`{"a":1.}`, false, "syntax"},
		{`{"a":-}`, false, "syntax"},
		{`{"a":1e}`, false, "syntax"},
		{`{"a":tru}`, false, "syntax"},
		{`{"a":"\x"}`, false, "syntax"},
		{`{"a":"\u12"}`, false, "syntax"},
		{"{\"a\":\"\x01\"}", false, "syntax"},
		{`{"a":1,}`, false, "syntax"},
		{`{"a" 1}`, false, "syntax"},
		{`{"a":1`, false, "syntax"},
		{``, false, "syntax"},
	} {
		if got := quickClean([]byte(tc.doc)); got != tc.quick {
			t.Errorf("quickClean(%.40q) = %v, want %v", tc.doc, got, tc.quick)
		}
		err := CheckStructure([]byte(tc.doc))
		var se *StructureError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckStructure(%.40q) = %v, want nil", tc.doc, err)
		case tc.want != "" && (!errors.As(err, &se) || se.Problem != tc.want):
			t.Errorf("CheckStructure(%.40q) = %v, want a %s problem", tc.doc, err, tc.want)
		}
	}
}

func FuzzQuickClean(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}],"c":"\u00e9"}`, `{"a":1,"A":2}`, `{"a":-0.0e-0}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !quickClean(data) {
			return
		}
		if err := walkStructure(data); err != nil {
			t.Fatalf("quickClean accepted what the token walk refuses: %v", err)
		}
		if !json.Valid(data) {
			t.Fatal("quickClean accepted invalid JSON")
		}
	})
}
