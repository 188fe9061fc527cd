package a2a

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckVersion(t *testing.T) {
	tests := []struct {
		name      string
		value     string
		supported []string
		wantErr   bool
		wantReq   string // requestedVersion in the error metadata
	}{
		{name: "absent means 0.3", value: "", wantErr: true, wantReq: "0.3"},
		{name: "blank means 0.3", value: "  ", wantErr: true, wantReq: "0.3"},
		{name: "0.3", value: "0.3", wantErr: true, wantReq: "0.3"},
		{name: "1.0", value: "1.0"},
		{name: "patch ignored", value: "1.0.3"},
		{name: "padded", value: " 1.0 "},
		{name: "0.5", value: "0.5", wantErr: true, wantReq: "0.5"},
		{name: "2.0", value: "2.0", wantErr: true, wantReq: "2.0"},
		{name: "1.1", value: "1.1", wantErr: true, wantReq: "1.1"},
		{name: "major only", value: "1", wantErr: true, wantReq: "1"},
		{name: "garbage truncated", value: strings.Repeat("x", 100), wantErr: true, wantReq: strings.Repeat("x", 32)},
		{name: "0.3 when supported", value: "", supported: []string{"0.3", "1.0"}},
		{name: "1.0 with several supported", value: "1.0.9", supported: []string{"0.3", "1.0"}},
		{name: "patch in supported list ignored", value: "1.0", supported: []string{"1.0.1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := CheckVersion(tc.value, tc.supported...)
			if !tc.wantErr {
				if e != nil {
					t.Fatalf("CheckVersion(%q) = %v", tc.value, e)
				}
				return
			}
			if e == nil {
				t.Fatalf("CheckVersion(%q) = nil, want VersionNotSupported", tc.value)
			}
			if e.Code != CodeVersionNotSupported || e.Metadata["requestedVersion"] != tc.wantReq {
				t.Fatalf("error = %d %v", e.Code, e.Metadata)
			}
		})
	}
}

func TestParseExtensions(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   []string
	}{
		{"none", nil, nil},
		{"empty header", []string{""}, nil},
		{"one", []string{"urn:a"}, []string{"urn:a"}},
		{"comma list", []string{"urn:a, urn:b,urn:c"}, []string{"urn:a", "urn:b", "urn:c"}},
		{"several header lines", []string{"urn:a", "urn:b, urn:c"}, []string{"urn:a", "urn:b", "urn:c"}},
		{"duplicates and blanks", []string{" urn:a ,, urn:a", ",urn:b,", "urn:a"}, []string{"urn:a", "urn:b"}},
		{"urls with query", []string{"https://ext.example/v1?x=1, https://other/v2"}, []string{"https://ext.example/v1?x=1", "https://other/v2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParseExtensions(tc.values)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNegotiateExtensions(t *testing.T) {
	declared := []AgentExtension{
		{URI: "urn:required", Required: true},
		{URI: "urn:optional"},
		{URI: "urn:also"},
	}
	tests := []struct {
		name      string
		requested []string
		declared  []AgentExtension
		want      []string
		wantErr   string // missing extension named in the error
	}{
		{name: "all known", requested: []string{"urn:also", "urn:required", "urn:optional"}, declared: declared,
			want: []string{"urn:also", "urn:required", "urn:optional"}},
		{name: "unknown ignored", requested: []string{"urn:unknown", "urn:required"}, declared: declared, want: []string{"urn:required"}},
		{name: "required missing", requested: []string{"urn:optional"}, declared: declared, wantErr: "urn:required"},
		{name: "nothing requested, required declared", declared: declared, wantErr: "urn:required"},
		{name: "nothing declared", requested: []string{"urn:a"}, want: nil},
		{name: "nothing at all", want: nil},
		{name: "optional only", requested: []string{"urn:optional"}, declared: declared[1:], want: []string{"urn:optional"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, e := NegotiateExtensions(tc.requested, tc.declared)
			if tc.wantErr != "" {
				if e == nil {
					t.Fatalf("NegotiateExtensions = %v, want ExtensionSupportRequired", got)
				}
				if e.Code != CodeExtensionSupportRequired || e.Metadata["extension"] != tc.wantErr || !strings.Contains(e.Message, tc.wantErr) {
					t.Fatalf("error = %d %q %v", e.Code, e.Message, e.Metadata)
				}
				return
			}
			if e != nil {
				t.Fatal(e)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNegotiateFromHeaders(t *testing.T) {
	// The usual server flow: several header lines, then negotiation.
	requested := ParseExtensions([]string{"urn:optional", "urn:required, urn:nope"})
	got, e := NegotiateExtensions(requested, []AgentExtension{{URI: "urn:required", Required: true}, {URI: "urn:optional"}})
	if e != nil {
		t.Fatal(e)
	}
	if diff := cmp.Diff([]string{"urn:optional", "urn:required"}, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

func TestParseExtensionsLimit(t *testing.T) {
	many := func(n int) string {
		uris := make([]string, n)
		for i := range uris {
			uris[i] = "https://x.example/ext/" + strings.Repeat("a", i%7) + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
		}
		return strings.Join(uris, ",")
	}
	tests := []struct {
		name     string
		values   []string
		max, len int
		want     int    // URIs read
		wantErr  string // part of the error message
	}{
		{name: "within bounds", values: []string{many(64)}, max: 64, len: 256, want: 64},
		{name: "repeats count once", values: []string{strings.Repeat("https://a,", 100_000), "https://b"}, max: 2, want: 2},
		{name: "one too many", values: []string{many(64), "https://one-more"}, max: 64, wantErr: "more than 64 extensions"},
		{name: "URI too long", values: []string{"https://a/" + strings.Repeat("x", 300)}, len: 256, wantErr: "longer than 256 bytes"},
		{name: "unbounded", values: []string{many(1000)}, want: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, e := ParseExtensionsLimit(tc.values, tc.max, tc.len)
			if tc.wantErr != "" {
				if e == nil || e.Code != CodeInvalidRequest || !strings.Contains(e.Message, tc.wantErr) {
					t.Fatalf("error %v, want -32600 containing %q", e, tc.wantErr)
				}
				return
			}
			if e != nil || len(got) != tc.want {
				t.Fatalf("%d URIs, error %v; want %d", len(got), e, tc.want)
			}
		})
	}
}

// TestParseExtensionsLinear: a header of a megabyte of distinct URIs used
// to take seconds (each URI was compared with every earlier one). The
// comparisons stay within a constant per URI, and a bounded read stops at
// the first URI past the bound; counting them, not time, keeps the test
// deaf to a busy machine.
func TestParseExtensionsLinear(t *testing.T) {
	var b strings.Builder
	n := 0
	for ; b.Len() < 1<<20; n++ {
		b.WriteString("https://e.example/")
		b.WriteString(strings.Repeat("q", n%5))
		b.WriteString(itoaTest(n))
		b.WriteByte(',')
	}
	var all extensionsCost
	got, e := parseExtensions([]string{b.String()}, 0, 0, &all)
	if e != nil || len(got) != n || all.read != n {
		t.Fatalf("%d URIs of %d read, %d kept, error %v", all.read, n, len(got), e)
	}
	// Comparing every pair would make n²/2, here about 2·10⁹.
	if limit := 9 * n; all.compared > limit {
		t.Errorf("%d comparisons for %d URIs, want at most %d", all.compared, n, limit)
	}

	var bounded extensionsCost
	if _, e := parseExtensions([]string{b.String()}, 64, 1024, &bounded); e == nil {
		t.Fatal("a megabyte of URIs passed the default bounds")
	}
	if bounded.read != 65 {
		t.Errorf("refusing read %d URIs, want 65 (the first past the bound of 64)", bounded.read)
	}
}

func itoaTest(i int) string { return strconv.Itoa(i) }

func FuzzParseExtensions(f *testing.F) {
	f.Add("https://a, https://b,https://a", 2, 16)
	f.Add(",,  ,", 0, 0)
	f.Fuzz(func(t *testing.T, header string, maxURIs, maxLen int) {
		maxURIs, maxLen = maxURIs%100, maxLen%300
		got, e := ParseExtensionsLimit([]string{header, header}, maxURIs, maxLen)
		if e != nil {
			if e.Code != CodeInvalidRequest {
				t.Fatalf("code %d", e.Code)
			}
			return
		}
		seen := map[string]bool{}
		for _, u := range got {
			if u == "" || u != strings.TrimSpace(u) || strings.Contains(u, ",") || seen[u] {
				t.Fatalf("bad entry %q in %q", u, got)
			}
			if maxLen > 0 && len(u) > maxLen {
				t.Fatalf("entry of %d bytes passed a bound of %d", len(u), maxLen)
			}
			seen[u] = true
		}
		if maxURIs > 0 && len(got) > maxURIs {
			t.Fatalf("%d entries passed a bound of %d", len(got), maxURIs)
		}
		if want := ParseExtensions([]string{header}); !slices.Equal(want, got) {
			t.Fatalf("bounded %q, unbounded %q", got, want)
		}
	})
}
