package a2a

import (
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
