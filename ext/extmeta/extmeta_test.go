package extmeta_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/ext/extmeta"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		in   []map[string]any
		want map[string]any
	}{
		{"nothing", nil, nil},
		{"only empty", []map[string]any{nil, {}}, nil},
		{"two", []map[string]any{{"a": 1}, {"b": 2}}, map[string]any{"a": 1, "b": 2}},
		{"later wins", []map[string]any{{"a": 1}, {"a": 2}}, map[string]any{"a": 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, extmeta.Merge(tc.in...)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	a := map[string]any{"a": 1}
	m := extmeta.Merge(a)
	m["a"] = 9
	if a["a"] != 1 {
		t.Error("Merge returned a map sharing storage with its input")
	}
}

func TestFragment(t *testing.T) {
	f := extmeta.Fragment("u", struct {
		B int `json:"b"`
		A int `json:"a"`
	}{1, 2})
	if raw, ok := f["u"].(json.RawMessage); !ok || string(raw) != `{"b":1,"a":2}` {
		t.Errorf("fragment = %#v, want the payload's JSON in field order", f["u"])
	}
	bad := make(chan int)
	if f := extmeta.Fragment("u", bad); f["u"] != any(bad) {
		t.Errorf("unencodable payload: fragment = %#v, want the value itself", f["u"])
	}
}

func TestError(t *testing.T) {
	err := extmeta.Invalid("https://example.com/ext/thing-v1", "a.b", "is wrong")
	if !errors.Is(err, extmeta.ErrInvalid) || err.Error() != "thing-v1: a.b: is wrong" {
		t.Errorf("err = %v", err)
	}
	if err := extmeta.Invalid("u", "", "bad"); err.Error() != "u: bad" {
		t.Errorf("err = %v", err)
	}
}

type pay struct {
	N int64 `json:"n"`
}

func (p pay) Validate() error {
	if p.N < 0 {
		return extmeta.Invalid("u", "n", "negative")
	}
	return nil
}

func readPay(r *extmeta.Reader) pay {
	n, _ := r.Int("n", true)
	return pay{N: n}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		v       any
		want    pay
		wantErr bool
	}{
		{"map", map[string]any{"n": 3.0}, pay{3}, false},
		{"json.Number", map[string]any{"n": json.Number("4")}, pay{4}, false},
		{"int", map[string]any{"n": 5}, pay{5}, false},
		{"raw", json.RawMessage(`{"n":6}`), pay{6}, false},
		{"bytes", []byte(`{"n":7}`), pay{7}, false},
		{"typed", pay{8}, pay{8}, false},
		{"pointer", &pay{9}, pay{9}, false},
		{"nil pointer", (*pay)(nil), pay{}, true},
		{"other struct", struct {
			N int `json:"n"`
		}{10}, pay{10}, false},
		{"trailing data", json.RawMessage(`{"n":1} {}`), pay{}, true},
		{"string", "x", pay{}, true},
		{"too big for float", map[string]any{"n": 1e300}, pay{}, true},
		{"validate", map[string]any{"n": -1.0}, pay{}, true},
		{"unencodable", make(chan int), pay{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := extmeta.Parse(map[string]any{"u": tc.v}, "u", readPay)
			if !ok {
				t.Fatal("ok = false for a present key")
			}
			if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, extmeta.ErrInvalid)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
