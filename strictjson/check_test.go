package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// gateOptions are the options the gate's decoders check with.
var gateOptions = &Options{Object: true, FoldCase: true, MaxDepth: 64}

func gateConfig() *config { return &config{Options: *gateOptions} }

// The fast path may only ever say "clean" where the token walk agrees;
// where it declines, Check's answer is the walk's.
func TestQuickClean(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	deepArray := func(n int) string { return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}" }
	for _, tc := range []struct {
		doc   string
		quick bool   // quickClean's answer
		want  string // Check's problem, "" for none
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
		if got := quickClean([]byte(tc.doc), gateConfig()); got != tc.quick {
			t.Errorf("quickClean(%.40q) = %v, want %v", tc.doc, got, tc.quick)
		}
		err := Check([]byte(tc.doc), gateOptions)
		var se *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%.40q) = %v, want nil", tc.doc, err)
		case tc.want != "" && (!errors.As(err, &se) || se.Problem != tc.want):
			t.Errorf("Check(%.40q) = %v, want a %s problem", tc.doc, err, tc.want)
		}
	}
}

// TestCheck covers what the gate's options leave out: exact names, any
// value at the top, the default depth bound, and the names Fields lists.
func TestCheck(t *testing.T) {
	write := &Fields{Names: map[string]*Fields{
		"scope":   nil,
		"content": nil,
		"metadata": {Names: map[string]*Fields{
			"tags":   {Items: &Fields{Names: map[string]*Fields{"k": nil}}},
			"custom": {Open: true},
		}},
	}}
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, tc := range []struct {
		name string
		doc  string
		o    *Options
		want *Error // nil: accepted
	}{
		{"exact names keep case variants apart", `{"a":1,"A":2}`, nil, nil},
		{"exact duplicate", `{"x":{"a":1,"a":2}}`, nil, &Error{Problem: Duplicate, Path: "$.x.a", Key: "a"}},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, nil, &Error{Problem: Duplicate, Path: "$.a", Key: "a"}},
		{"duplicate in an array", `[{"k":1},{"k":1,"k":2}]`, nil, &Error{Problem: Duplicate, Path: "$[1].k", Key: "k"}},
		{"odd name quoted in the path", `{"a b":{"c":1,"c":2}}`, nil, &Error{Problem: Duplicate, Path: `$["a b"].c`, Key: "c"}},
		{"array at the top", `[1,"x",null]`, nil, nil},
		{"string at the top", `"x"`, nil, nil},
		{"object required", `"x"`, &Options{Object: true}, &Error{Problem: NotObject, Path: "$"}},
		{"trailing", `1 2`, nil, &Error{Problem: Trailing, Path: "$"}},
		{"default depth", deep(DefaultMaxDepth), nil, nil},
		{"beyond the default depth", deep(DefaultMaxDepth + 1), nil, &Error{Problem: Depth, Path: "$" + strings.Repeat("[0]", DefaultMaxDepth), Limit: DefaultMaxDepth}},
		{"listed names", `{"scope":"run","metadata":{"tags":[{"k":1}],"custom":{"Any":{"x":1}}}}`, &Options{Fields: write}, nil},
		{"case variant unknown", `{"Scope":"run"}`, &Options{Fields: write}, &Error{Problem: Unknown, Path: "$.Scope", Key: "Scope"}},
		{"unknown nested", `{"metadata":{"Tags":[]}}`, &Options{Fields: write}, &Error{Problem: Unknown, Path: "$.metadata.Tags", Key: "Tags"}},
		{"unknown in items", `{"metadata":{"tags":[{"k":1},{"j":2}]}}`, &Options{Fields: write}, &Error{Problem: Unknown, Path: "$.metadata.tags[1].j", Key: "j"}},
		{"escaped unknown", `{"\u0053cope":"run"}`, &Options{Fields: write}, &Error{Problem: Unknown, Path: "$.Scope", Key: "Scope"}},
		{"open object", `{"metadata":{"custom":{"a":1,"B":2}}}`, &Options{Fields: write}, nil},
		{"open object still refuses duplicates", `{"metadata":{"custom":{"a":1,"a":2}}}`, &Options{Fields: write}, &Error{Problem: Duplicate, Path: "$.metadata.custom.a", Key: "a"}},
		{"long name cut", `{"` + strings.Repeat("n", 70) + `":1}`, &Options{Fields: write}, &Error{Problem: Unknown, Path: `$["` + strings.Repeat("n", 64) + `"…]`, Key: strings.Repeat("n", 70)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.doc), tc.o)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Check: %v, want an *Error", err)
			}
			if diff := cmp.Diff(tc.want, se); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Problem: NotObject, Path: "$"}, "expected a JSON object"},
		{&Error{Problem: Duplicate, Path: "$.verdict", Key: "verdict"}, `duplicate member "verdict" at $.verdict`},
		{&Error{Problem: Unknown, Path: "$.Scope", Key: "Scope"}, `unknown member "Scope" at $.Scope`},
		{&Error{Problem: Depth, Path: "$.a", Limit: 64}, "nesting deeper than 64 at $.a"},
		{&Error{Problem: Trailing, Path: "$"}, "trailing data after the JSON value"},
		{&Error{Problem: Syntax, Path: "$.a", Err: errors.New("bad")}, "malformed JSON at $.a: bad"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("%#v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestDecode(t *testing.T) {
	type doc struct {
		A int `json:"a"`
	}
	for _, tc := range []struct {
		name         string
		in           string
		allowUnknown bool
		want         doc
		wantErr      string // a substring; "" for none
	}{
		{"plain", `{"a":1}`, false, doc{A: 1}, ""},
		{"unknown refused", `{"a":1,"b":2}`, false, doc{}, "unknown field"},
		{"unknown allowed", `{"a":1,"b":2}`, true, doc{A: 1}, ""},
		{"duplicate", `{"a":1,"a":2}`, true, doc{}, "duplicate member"},
		{"trailing", `{"a":1}{}`, false, doc{}, "trailing data"},
		{"type", `{"a":"x"}`, false, doc{}, "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got doc
			err := Decode([]byte(tc.in), &got, &Options{Object: true}, tc.allowUnknown)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Decode: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Decode: %v, want an error containing %q", err, tc.wantErr)
			}
			if tc.wantErr == "" {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Decode (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func FuzzQuickClean(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}],"c":"\u00e9"}`, `{"a":1,"A":2}`, `{"a":-0.0e-0}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}",
		`{"params":{"arguments":{"scope":"run"},"name":"write"}}`, `{"params":{"name":"query","arguments":{"query":"q"}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []*config{gateConfig(), {Options: Options{MaxDepth: DefaultMaxDepth}}, {Options: Options{MaxDepth: DefaultMaxDepth, Fields: call}}} {
			if !quickClean(data, c) {
				continue
			}
			if err := walk(data, c); err != nil {
				t.Fatalf("quickClean accepted what the token walk refuses: %v", err)
			}
			if !json.Valid(data) {
				t.Fatal("quickClean accepted invalid JSON")
			}
		}
	})
}

// FuzzCheck: whatever Check accepts is JSON, and an exact check never
// refuses what a folding one accepts.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `[{"a":1},{"a":1}]`, `{"a":1,"A":2}`, `{"a":1,"a":2}`, `1 2`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		exact := Check(data, nil)
		if exact == nil && !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if folded := Check(data, &Options{FoldCase: true}); folded == nil && exact != nil {
			t.Fatalf("the folding check accepted %q, the exact one refused it: %v", data, exact)
		}
	})
}

// The ASCII shortcut of foldKey must fold as the rune-by-rune rule does.
func TestFoldKeyASCII(t *testing.T) {
	var all []byte
	for c := range byte(utf8.RuneSelf) {
		all = append(all, c)
		if got, want := foldKey(string(c)), foldRunes(string(c)); got != want {
			t.Errorf("foldKey(%q) = %q, want %q", c, got, want)
		}
	}
	for _, s := range []string{string(all), "verdict", "VERDICT", "Verdict", "kind", "rule_id_cited", ""} {
		if got, want := foldKey(s), foldRunes(s); got != want {
			t.Errorf("foldKey(%q) = %q, want %q", s, got, want)
		}
	}
}

// call is a JSON-RPC tool call whose arguments depend on the tool.
var call = &Fields{Open: true, Names: map[string]*Fields{
	"params": {Open: true, Union: &Union{Tag: "name", Body: "arguments", Variants: map[string]*Fields{
		"write": {Names: map[string]*Fields{"scope": nil, "content": nil}},
		"query": {Names: map[string]*Fields{"scope": nil, "query": nil}},
	}}},
}}

// TestUnion: a tool call's arguments follow the Fields of the tool its
// name names, in whichever order the two members come; the fast path
// takes a tag-first union without the walk, and the walk says where a
// body read before its tag went wrong.
func TestUnion(t *testing.T) {
	o := &Options{Fields: call}
	for _, tc := range []struct {
		name  string
		doc   string
		quick bool
		want  *Error
	}{
		{"tag first", `{"id":1,"params":{"name":"write","arguments":{"scope":"run","content":"x"}}}`, true, nil},
		{"body first", `{"params":{"arguments":{"scope":"run","content":"x"},"name":"write"}}`, true, nil},
		{"tag first, unknown", `{"params":{"name":"write","arguments":{"scope":"run","query":"x"}}}`, false,
			&Error{Problem: Unknown, Path: "$.params.arguments.query", Key: "query"}},
		{"body first, unknown", `{"params":{"arguments":{"scope":"run","query":"x"}, "name" : "write"}}`, false,
			&Error{Problem: Unknown, Path: "$.params.arguments.query", Key: "query"}},
		{"body first, nested unknown", `{"params":{"arguments":{"scope":"run","content":{"a":1}},"name":"query"}}`, false,
			&Error{Problem: Unknown, Path: "$.params.arguments.content", Key: "content"}},
		{"other tag", `{"params":{"name":"query","arguments":{"scope":"run","query":"x"}}}`, true, nil},
		{"unlisted tag", `{"params":{"name":"other","arguments":{"Anything":1}}}`, true, nil},
		{"no tag", `{"params":{"arguments":{"Anything":1}}}`, true, nil},
		{"escaped tag", `{"params":{"name":"wr\u0069te","arguments":{"Scope":1}}}`, false,
			&Error{Problem: Unknown, Path: "$.params.arguments.Scope", Key: "Scope"}},
		{"tag not a string", `{"params":{"name":5,"arguments":{"Anything":1}}}`, false, nil},
		{"duplicate in a deferred body", `{"params":{"arguments":{"scope":1,"scope":2},"name":"write"}}`, false,
			&Error{Problem: Duplicate, Path: "$.params.arguments.scope", Key: "scope"}},
		{"duplicate tag", `{"params":{"name":"query","arguments":{"query":1},"name":"write"}}`, false,
			&Error{Problem: Duplicate, Path: "$.params.name", Key: "name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quickClean([]byte(tc.doc), &config{Options: Options{Fields: call, MaxDepth: DefaultMaxDepth}}); got != tc.quick {
				t.Errorf("quickClean = %v, want %v", got, tc.quick)
			}
			err := Check([]byte(tc.doc), o)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check: %v, want nil", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Check: %v, want an *Error", err)
			}
			if diff := cmp.Diff(tc.want, se); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnionNested: a deferred body inside a deferred body is walked again
// at its own offset, and its path says where.
func TestUnionNested(t *testing.T) {
	inner := &Fields{Union: &Union{Tag: "kind", Body: "spec", Variants: map[string]*Fields{
		"a": {Names: map[string]*Fields{"x": nil}},
	}}, Names: map[string]*Fields{"kind": nil, "spec": nil}}
	outer := &Fields{Open: true, Union: &Union{Tag: "name", Body: "args", Variants: map[string]*Fields{"t": inner}}}
	for _, tc := range []struct {
		name, doc string
		want      *Error
	}{
		{"clean", `{"args":{"spec":{"x":1},"kind":"a"},"name":"t"}`, nil},
		{"inner unknown", `{"args" : {"spec" : {"y":1} , "kind":"a"}, "name":"t"}`,
			&Error{Problem: Unknown, Path: "$.args.spec.y", Key: "y"}},
		{"inner unknown, escaped", `{"args":{"spec":{"\u0079":1},"kind":"a"},"name":"t"}`,
			&Error{Problem: Unknown, Path: "$.args.spec.y", Key: "y"}},
		{"outer unknown", `{"args":{"kind":"a","zz":1},"name":"t"}`,
			&Error{Problem: Unknown, Path: "$.args.zz", Key: "zz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.doc), &Options{Fields: outer})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Check: %v, want an *Error", err)
			}
			if diff := cmp.Diff(tc.want, se); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
			// The walk alone agrees, at any offset.
			padded := "   " + tc.doc
			var again *Error
			if !errors.As(walk([]byte(padded), &config{Options: Options{Fields: outer, MaxDepth: DefaultMaxDepth}}), &again) || again.Path != tc.want.Path {
				t.Errorf("walk of the padded document: %v, want the problem at %s", again, tc.want.Path)
			}
		})
	}
}
