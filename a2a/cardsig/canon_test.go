package cardsig

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/jcs"
)

// canonCase is one entry of testdata/canonical.json: a card as wire JSON
// and the canonical form @a2a-js/sdk 1.3.0's canonicalizeAgentCard gives
// it (the interop suite re-checks the file against the SDK).
type canonCase struct {
	Name      string          `json:"name"`
	Card      json.RawMessage `json:"card"`
	Canonical string          `json:"canonical"`
}

func loadCanonCases(t testing.TB) []canonCase {
	t.Helper()
	data, err := os.ReadFile("testdata/canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []canonCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestCanonicalizeMatchesReference(t *testing.T) {
	for _, tc := range loadCanonCases(t) {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := CanonicalizeJSON(tc.Card)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.Canonical, string(got)); diff != "" {
				t.Errorf("canonical form (-a2a-js +ours):\n%s", diff)
			}
			// The typed path agrees with the JSON path.
			var card a2a.AgentCard
			if err := a2a.Unmarshal(tc.Card, &card); err != nil {
				t.Fatal(err)
			}
			again, err := Canonicalize(&card)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(got) {
				t.Errorf("Canonicalize(card) = %s, CanonicalizeJSON = %s", again, got)
			}
		})
	}
}

func TestCanonicalizeTypedCards(t *testing.T) {
	base := func() a2a.AgentCard {
		return a2a.AgentCard{Name: "n", Description: "d", Version: "1"}
	}
	tests := []struct {
		name string
		card func() a2a.AgentCard
		want string
	}{
		{"zero card", func() a2a.AgentCard { return a2a.AgentCard{} }, `{}`},
		{"nil and empty lists alike", func() a2a.AgentCard {
			c := base()
			c.Skills = []a2a.AgentSkill{}
			c.DefaultInputModes = nil
			return c
		}, `{"description":"d","name":"n","version":"1"}`},
		{"explicit false streaming kept", func() a2a.AgentCard {
			c := base()
			c.Capabilities.Streaming = a2a.Bool(false)
			return c
		}, `{"capabilities":{"streaming":false},"description":"d","name":"n","version":"1"}`},
		{"unset streaming omitted", func() a2a.AgentCard {
			c := base()
			c.Capabilities.PushNotifications = a2a.Bool(true)
			return c
		}, `{"capabilities":{"pushNotifications":true},"description":"d","name":"n","version":"1"}`},
		{"empty optional URL dropped", func() a2a.AgentCard {
			c := base()
			c.DocumentationURL = new(string)
			return c
		}, `{"description":"d","name":"n","version":"1"}`},
		{"non-ASCII kept as UTF-8", func() a2a.AgentCard {
			c := base()
			c.Name = "Café ☕ 𝄞"
			return c
		}, `{"description":"d","name":"Café ☕ 𝄞","version":"1"}`},
		{"signatures excluded", func() a2a.AgentCard {
			c := base()
			c.Signatures = []a2a.AgentCardSignature{{Protected: "p", Signature: "s"}}
			return c
		}, `{"description":"d","name":"n","version":"1"}`},
		{"extension required false omitted, params stripped", func() a2a.AgentCard {
			c := base()
			c.Capabilities.Extensions = []a2a.AgentExtension{{URI: "u", Params: map[string]any{"a": "", "b": []any{}, "c": map[string]any{"d": nil}, "e": false}}}
			return c
		}, `{"capabilities":{"extensions":[{"params":{"e":false},"uri":"u"}]},"description":"d","name":"n","version":"1"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.card()
			before, _ := json.Marshal(c)
			got, err := Canonicalize(&c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if after, _ := json.Marshal(c); string(after) != string(before) {
				t.Errorf("Canonicalize modified the card:\n%s\n%s", before, after)
			}
		})
	}
}

func TestKeyOrder(t *testing.T) {
	// RFC 8785 §3.2.3's example: sorted by UTF-16 code units.
	tree := map[string]any{
		"\u20ac":     "Euro Sign",
		"\r":         "Carriage Return",
		"\ufb33":     "Hebrew Letter Dalet With Dagesh",
		"1":          "One",
		"\U0001f600": "Emoji: Grinning Face",
		"\u0080":     "Control",
		"\u00f6":     "Latin Small Letter O With Diaeresis",
	}
	// The tree takes the path Canonicalize gives a card: encoding/json,
	// then the canonicalizer.
	data, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jcs.Canonicalize(data, cardDepth)
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	want := `{"\r":"Carriage Return","1":"One","` + "\u0080" + `":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","דּ":"Hebrew Letter Dalet With Dagesh"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
