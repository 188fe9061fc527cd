package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/jwk"
)

// Signed agent cards both ways with @a2a-js/sdk 1.3.0 (js/cardsig.mjs):
// its canonicalizeAgentCard, generateAgentCardSignature and
// verifyAgentCardSignature against a2a/cardsig, on the canonicalization
// table of a2a/cardsig/testdata (non-ASCII text, explicit false optional
// booleans, empty lists, numbers, key order, OAuth flows, snake_case).

// cardsigNode runs js/cardsig.mjs mode with input as JSON and decodes its
// output into out.
func cardsigNode(t *testing.T, mode string, input, out any) {
	t.Helper()
	node, dir := jsPeer(t)
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "cardsig.mjs", mode)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node cardsig.mjs %s: %v\nstderr:\n%s", mode, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node cardsig.mjs %s output: %v\n%s", mode, err, stdout.String())
	}
}

type cardsigCase struct {
	Name      string          `json:"name"`
	Card      json.RawMessage `json:"card"`
	Canonical string          `json:"canonical"`
}

func cardsigCases(t *testing.T) []cardsigCase {
	t.Helper()
	data, err := os.ReadFile("../a2a/cardsig/testdata/canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []cardsigCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

func TestCardsigCanonicalMatchesJS(t *testing.T) {
	cases := cardsigCases(t)
	cards := make([]json.RawMessage, len(cases))
	for i, c := range cases {
		cards[i] = c.Card
	}
	var js []string
	cardsigNode(t, "canon", cards, &js)
	if len(js) != len(cases) {
		t.Fatalf("%d canonical forms for %d cards", len(js), len(cases))
	}
	for i, c := range cases {
		ours, err := cardsig.CanonicalizeJSON(c.Card)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if diff := cmp.Diff(js[i], string(ours)); diff != "" {
			t.Errorf("%s: canonical form (-a2a-js +ours):\n%s", c.Name, diff)
		}
		if js[i] != c.Canonical {
			t.Errorf("%s: a2a-js no longer gives the recorded form:\n%s\n%s", c.Name, js[i], c.Canonical)
		}
	}
}

type jsSigned struct {
	Card json.RawMessage `json:"card"`
	JWKS json.RawMessage `json:"jwks"`
}

// TestCardsigJSSignsWeVerify: every table card signed by a2a-js with each
// algorithm verifies with cardsig, and stops verifying when tampered with
// or checked against a key set without the signer's key.
func TestCardsigJSSignsWeVerify(t *testing.T) {
	cases := cardsigCases(t)
	type req struct {
		Card json.RawMessage `json:"card"`
		Alg  string          `json:"alg"`
	}
	var reqs []req
	for _, alg := range jwk.Algorithms {
		for _, c := range cases {
			reqs = append(reqs, req{c.Card, alg})
		}
	}
	var signed []jsSigned
	cardsigNode(t, "sign", reqs, &signed)
	if len(signed) != len(reqs) {
		t.Fatalf("%d results for %d cards", len(signed), len(reqs))
	}
	stranger, err := jwk.GenerateKey(jwk.EdDSA)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range signed {
		name := reqs[i].Alg + "/" + cases[i%len(cases)].Name
		var card a2a.AgentCard
		if err := a2a.Unmarshal(s.Card, &card); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		keys, err := jwk.ParseKeySet(s.JWKS)
		if err != nil || keys.Len() != 1 {
			t.Fatalf("%s: JWKS %s: %v", name, s.JWKS, err)
		}
		v, err := cardsig.Verify(&card, keys, nil)
		if err != nil {
			t.Errorf("%s: a2a-js signature does not verify: %v", name, err)
			continue
		}
		if v.Algorithm != reqs[i].Alg {
			t.Errorf("%s: verified as %s", name, v.Algorithm)
		}
		_, err = cardsig.Verify(&card, jwk.NewKeySet(stranger), nil)
		if !errors.Is(err, cardsig.ErrInvalidSignature) || (len(card.Signatures) == 1 && !errors.Is(err, cardsig.ErrUnknownKey)) {
			t.Errorf("%s: verified against a stranger's key set: %v", name, err)
		}
		card.Version += "-tampered"
		if _, err := cardsig.Verify(&card, keys, nil); !errors.Is(err, cardsig.ErrInvalidSignature) {
			t.Errorf("%s: tampered card: %v", name, err)
		}
	}
}

// TestCardsigWeSignJSVerifies: every table card signed by cardsig with
// each algorithm verifies with a2a-js's verifier; a tampered copy does not.
func TestCardsigWeSignJSVerifies(t *testing.T) {
	cases := cardsigCases(t)
	type req struct {
		Card json.RawMessage `json:"card"`
		JWKS *jwk.KeySet     `json:"jwks"`
	}
	var reqs []req
	var names []string
	for _, alg := range jwk.Algorithms {
		key, err := jwk.GenerateKey(alg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			var card a2a.AgentCard
			if err := a2a.Unmarshal(c.Card, &card); err != nil {
				t.Fatal(err)
			}
			signed, err := cardsig.Sign(&card, key, &cardsig.SignOptions{JKU: "https://agents.example.com/.well-known/jwks.json"})
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(signed)
			if err != nil {
				t.Fatal(err)
			}
			reqs = append(reqs, req{data, jwk.NewKeySet(key)})
			names = append(names, alg+"/"+c.Name)
			// The same card, tampered: a2a-js must reject it.
			signed.Name += " (forged)"
			data, _ = json.Marshal(signed)
			reqs = append(reqs, req{data, jwk.NewKeySet(key)})
			names = append(names, alg+"/"+c.Name+"/tampered")
		}
	}
	var results []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	cardsigNode(t, "verify", reqs, &results)
	if len(results) != len(reqs) {
		t.Fatalf("%d results for %d cards", len(results), len(reqs))
	}
	for i, r := range results {
		want := !strings.HasSuffix(names[i], "/tampered")
		if r.OK != want {
			t.Errorf("%s: a2a-js verify ok=%v (%s), want %v", names[i], r.OK, r.Error, want)
		}
	}
}
