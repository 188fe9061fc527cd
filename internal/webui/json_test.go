package webui

import "testing"

func TestPretty(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026 \u003C"}`, "{\n  \"a\": \"<b> & <\"\n}"},
		{`"\\u003c"`, `"\\u003c"`},
		{`"\\\u003c"`, `"\\<"`},
		{`"\u00e9\n"`, `"\u00e9\n"`},
		{`not json <`, `not json <`},
	} {
		if got := PrettyJSON([]byte(tc.in)); got != tc.want {
			t.Errorf("PrettyJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func FuzzPrettyJSON(f *testing.F) {
	for _, s := range []string{`{"a":"\u003cb\u003e"}`, `"\\\u003c"`, `[1,2,{"x":null}]`, `not json`, `"\u00`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := PrettyJSON(b)
		if out == "" && len(b) > 0 {
			t.Fatalf("PrettyJSON(%q) is empty", b)
		}
	})
}
