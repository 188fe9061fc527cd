package pii

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	// Credential-shaped values are assembled at run time so that secret
	// scanners reading this repository do not flag the test itself.
	rep := strings.Repeat
	tests := []struct {
		name string
		in   string
		want []Kind
	}{
		{"clean preference", "User prefers concise summaries in British English.", nil},
		{"dates and versions", "Release 2.4.1 shipped on 2024-03-15; next review 15/04/2024.", nil},
		{"order number fails Luhn", "Order 4111 1111 1111 1112 was refunded.", nil},
		{"email", "Reach the user at jane.doe@example.com for invoices.", []Kind{KindEmail}},
		{"phone", "Her number is +44 20 7946 0958.", []Kind{KindPhone}},
		{"ssn", "SSN 123-45-6789 on file.", []Kind{KindSSN}},
		{"card passes Luhn", "Card 4111 1111 1111 1111 expires soon.", []Kind{KindCard}},
		{"aws key", "key AKIA" + rep("ABCDEFGH", 2) + " for the bucket", []Kind{KindAPIKey}},
		{"openai key", "use sk-proj-" + rep("a1B2", 8), []Kind{KindAPIKey}},
		{"github token", "ghp_" + rep("x", 36), []Kind{KindAPIKey}},
		{"slack token", "xoxb-" + rep("1234", 4), []Kind{KindAPIKey}},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIE...", []Kind{KindPrivateKey}},
		{"openssh private key", "-----BEGIN OPENSSH PRIVATE KEY-----", []Kind{KindPrivateKey}},
		{"jwt", "token eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhZ2VudCJ9." + rep("Zm9v", 6), []Kind{KindJWT}},
		{"password assignment", `db password: "correct-horse"`, []Kind{KindPassword}},
		{"api key assignment", "API_KEY=abcdef123456", []Kind{KindPassword}},
		{"the word password alone", "The user forgot their password yesterday.", nil},
		{"several", "mail a@example.com, card 5555555555554444, secret=hunter22", []Kind{KindEmail, KindCard, KindPassword}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Scan(tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Scan = %v, want %v", got, tt.want)
			}
			// What was found is named, never quoted.
			if s := fmt.Sprint(got); len(tt.in) > 12 && strings.Contains(s, tt.in[len(tt.in)-12:]) {
				t.Errorf("Scan result %q repeats the input", s)
			}
		})
	}
}

func TestLuhn(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want bool
	}{{"4111111111111111", true}, {"4111-1111-1111-1112", false}, {"378282246310005", true}, {"", false}} {
		if got := luhn(tt.in); got != tt.want {
			t.Errorf("luhn(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, s := range []string{"", "a@b.co", "4111 1111 1111 1111", "password=xxxxxx", "-----BEGIN PRIVATE KEY-----"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kinds := Scan(s)
		seen := map[Kind]bool{}
		for _, k := range kinds {
			if seen[k] {
				t.Fatalf("Scan(%q) reports %s twice", s, k)
			}
			seen[k] = true
		}
	})
}
