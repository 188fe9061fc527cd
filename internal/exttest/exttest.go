package exttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/extmeta"
)

// Case is one Parse case: the metadata map and what Parse should make of it.
type Case[P any] struct {
	Name    string
	MD      map[string]any
	Want    P
	WantOK  bool
	WantErr bool
}

// ParseFunc is an extension package's Parse.
type ParseFunc[P any] func(map[string]any) (P, bool, error)

// RunParse runs each case as a subtest. An expected error must match
// extmeta.ErrInvalid and be an *extmeta.Error.
func RunParse[P any](t *testing.T, parse ParseFunc[P], cases []Case[P]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			got, ok, err := parse(c.MD)
			if ok != c.WantOK {
				t.Errorf("ok = %v, want %v", ok, c.WantOK)
			}
			if c.WantErr {
				var e *extmeta.Error
				if !errors.Is(err, extmeta.ErrInvalid) || !errors.As(err, &e) {
					t.Fatalf("err = %v, want an *extmeta.Error matching ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(c.Want, got); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

// RoundTrip checks that each payload survives three trips: the fragment as
// Metadata returns it, the fragment merged into a message that is encoded
// with a2a.AppendMessage and decoded with a2a.Unmarshal (what a client
// sees), and the payload value itself placed under the URI.
func RoundTrip[P any](t *testing.T, uri string, metadata func(P) map[string]any, parse ParseFunc[P], payloads []P) {
	t.Helper()
	for i, p := range payloads {
		frag := metadata(p)
		if len(frag) != 1 || frag[uri] == nil {
			t.Fatalf("payload %d: fragment %v is not keyed by %s alone", i, frag, uri)
		}
		msg := a2a.NewMessage(a2a.RoleAgent, a2a.TextPart("x"))
		msg.Metadata = extmeta.Merge(frag, map[string]any{"other": true})
		enc, err := a2a.AppendMessage(nil, msg)
		if err != nil {
			t.Fatalf("payload %d: encode: %v", i, err)
		}
		var back a2a.Message
		if err := a2a.Unmarshal(enc, &back); err != nil {
			t.Fatalf("payload %d: decode %s: %v", i, enc, err)
		}
		for name, md := range map[string]map[string]any{
			"fragment": frag, "wire": back.Metadata, "typed": {uri: p}, "pointer": {uri: &p},
		} {
			got, ok, err := parse(md)
			if !ok || err != nil {
				t.Errorf("payload %d via %s: ok=%v err=%v", i, name, ok, err)
				continue
			}
			if diff := cmp.Diff(p, got); diff != "" {
				t.Errorf("payload %d via %s (-want +got):\n%s", i, name, diff)
			}
		}
	}
}

// Golden checks that the fragment's value encodes to want byte for byte
// once want's insignificant whitespace is removed (the extensions'
// reference documents print their examples with spaces).
func Golden(t *testing.T, frag map[string]any, uri, want string) {
	t.Helper()
	got, err := json.Marshal(frag[uri])
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(want)); err != nil {
		t.Fatalf("golden %s: %v", want, err)
	}
	if string(got) != compact.String() {
		t.Errorf("fragment\n got %s\nwant %s", got, compact.String())
	}
}

var sink any

// BenchMetadata measures building one fragment.
func BenchMetadata(b *testing.B, metadata func() map[string]any) {
	b.ReportAllocs()
	for b.Loop() {
		sink = metadata()
	}
}

// wire returns frag as a client's JSON decoder sees it.
func wire(b *testing.B, frag map[string]any) map[string]any {
	raw, err := json.Marshal(frag)
	if err != nil {
		b.Fatal(err)
	}
	var md map[string]any
	if err := json.Unmarshal(raw, &md); err != nil {
		b.Fatal(err)
	}
	return md
}

// BenchParse measures Parse on frag after a trip over the wire (a decoded
// map[string]any, what a client holds).
func BenchParse[P any](b *testing.B, frag map[string]any, parse ParseFunc[P]) {
	md := wire(b, frag)
	b.ReportAllocs()
	for b.Loop() {
		p, ok, err := parse(md)
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		sink = p
	}
}

// BenchNaiveParse is the baseline for BenchParse: what a reader without
// the field reader would do, re-encode the decoded value and unmarshal it
// into the payload type (no validation, no field-level errors).
func BenchNaiveParse[P any](b *testing.B, frag map[string]any, uri string) {
	md := wire(b, frag)
	b.ReportAllocs()
	for b.Loop() {
		raw, err := json.Marshal(md[uri])
		if err != nil {
			b.Fatal(err)
		}
		var p P
		if err := json.Unmarshal(raw, &p); err != nil {
			b.Fatal(err)
		}
		sink = p
	}
}
