package conventions_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/conventions"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/ext/worldstate"
	"novaos.dev/novaos/internal/schematest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var triage = conventions.Agent{
	Name: "triage", Description: "Files bugs", Version: "1.0.0",
	URL:    "https://agents.example.com/triage",
	Skills: []a2a.AgentSkill{{ID: "file_bug", Name: "File bug", Description: "Files a bug"}},
}

func TestCard(t *testing.T) {
	tests := []struct {
		name   string
		opts   *conventions.Options
		golden string
	}{
		{"defaults", nil, "card-defaults.json"},
		{"bearer and subset", &conventions.Options{
			Bearer: true, Extensions: []string{toolcall.URI, cost.URI}, PushNotifications: true,
			APIKeyHeader: "X-Agent-Key", Provider: &a2a.AgentProvider{Organization: "Example", URL: "https://example.com"},
		}, "card-bearer-subset.json"},
		{"no extensions", &conventions.Options{Extensions: []string{}, DisableStreaming: true}, "card-no-extensions.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			card, err := conventions.Card(triage, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(card, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			schematest.Validate(t, "Agent Card", got)
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(bytes.TrimSpace(want)), string(got)); diff != "" {
				t.Errorf("card (-want +got), rerun with -update if intended:\n%s", diff)
			}
			// The card reads back with the tolerant decoder unchanged.
			var back a2a.AgentCard
			if err := a2a.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(card, &back, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decoded card (-built +decoded):\n%s", diff)
			}
		})
	}
}

func TestCardSchemes(t *testing.T) {
	for _, bearer := range []bool{false, true} {
		card, err := conventions.Card(triage, &conventions.Options{Bearer: bearer})
		if err != nil {
			t.Fatal(err)
		}
		// Every requirement names a declared scheme, and every scheme is
		// required by some alternative.
		used := map[string]bool{}
		for _, r := range card.SecurityRequirements {
			for name := range r.Schemes {
				if _, ok := card.SecuritySchemes[name]; !ok {
					t.Errorf("bearer=%v: requirement names undeclared scheme %q", bearer, name)
				}
				used[name] = true
			}
		}
		if len(used) != len(card.SecuritySchemes) {
			t.Errorf("bearer=%v: schemes %v, required %v", bearer, card.SecuritySchemes, used)
		}
		key := card.SecuritySchemes[conventions.APIKeySchemeName].APIKey
		if key == nil || key.Location != "header" || key.Name != "X-API-Key" {
			t.Errorf("apiKey scheme = %+v", key)
		}
		_, hasBearer := card.SecuritySchemes[conventions.BearerSchemeName]
		if hasBearer != bearer {
			t.Errorf("bearer=%v: bearer scheme present = %v", bearer, hasBearer)
		}
	}
}

func TestDeclarations(t *testing.T) {
	all := conventions.Declarations(nil)
	want := []a2a.AgentExtension{cost.Declaration(), confidence.Declaration(), worldstate.Declaration(), toolcall.Declaration()}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	got := conventions.Declarations([]string{toolcall.URI, toolcall.URI, "", "https://example.com/ext/x-v1"})
	want = []a2a.AgentExtension{toolcall.Declaration(), {URI: "https://example.com/ext/x-v1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subset (-want +got):\n%s", diff)
	}
	for _, d := range all {
		if d.Required || d.Description == "" {
			t.Errorf("%s: required=%v description=%q", d.URI, d.Required, d.Description)
		}
	}
}

func TestCardIncomplete(t *testing.T) {
	for _, ag := range []conventions.Agent{{Version: "1", URL: "u"}, {Name: "n", URL: "u"}, {Name: "n", Version: "1"}} {
		if _, err := conventions.Card(ag, nil); !errors.Is(err, conventions.ErrIncomplete) {
			t.Errorf("Card(%+v) err = %v, want ErrIncomplete", ag, err)
		}
	}
}

func TestCardDoesNotShareOptions(t *testing.T) {
	p := &a2a.AgentProvider{Organization: "A", URL: "https://a.example"}
	modes := []string{"text/plain"}
	card, _ := conventions.Card(triage, &conventions.Options{Provider: p, DefaultInputModes: modes})
	card.Provider.Organization = "B"
	card.DefaultInputModes[0] = "x"
	if p.Organization != "A" || modes[0] != "text/plain" {
		t.Error("the card shares storage with the options")
	}
}
