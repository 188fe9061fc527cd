package secret_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"novaos.dev/novaos/secret"
)

const plain = "tok-0123456789abcdef"

// Every way a Value can be rendered hides the plaintext.
func TestNeverRendered(t *testing.T) {
	v := secret.New(plain)
	type holder struct {
		Public  string
		Token   secret.Value
		private secret.Value
		Ptr     *secret.Value
	}
	h := holder{"x", v, v, &v}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("m", "token", v, "holder", h)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("m", "token", v, "holder", h)
	js, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	txt, _ := v.MarshalText()
	renders := map[string]string{
		"String":   v.String(),
		"GoString": v.GoString(),
		"json":     string(js),
		"text":     string(txt),
		"logs":     logs.String(),
		"error":    fmt.Errorf("wrapped %v: %w", v, errors.New("x")).Error(),
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		renders[verb] = fmt.Sprintf(verb, v)
		renders[verb+" holder"] = fmt.Sprintf(verb, h)
		renders[verb+" &holder"] = fmt.Sprintf(verb, &h)
	}
	for name, s := range renders {
		// Compare without echoing the rendering: on failure it would
		// hold the secret.
		if strings.Contains(s, plain) || strings.Contains(s, fmt.Sprintf("%x", plain)) {
			t.Errorf("%s shows the plaintext", name)
		}
	}
	if !strings.Contains(renders["%v"], secret.Redacted) {
		t.Errorf("%%v = %q, want %s", renders["%v"], secret.Redacted)
	}
}

func TestEqual(t *testing.T) {
	v := secret.New(plain)
	tests := []struct {
		name string
		v    secret.Value
		in   string
		want bool
	}{
		{"same", v, plain, true},
		{"other", v, "tok-0123456789abcdeF", false},
		{"prefix", v, plain[:5], false},
		{"longer", v, plain + "x", false},
		{"empty candidate", v, "", false},
		{"zero value", secret.Value{}, "", false},
		{"empty value", secret.New(""), "", false},
	}
	for _, tc := range tests {
		if got := tc.v.Equal(tc.in); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
	if v.Reveal() != plain || v.IsZero() || !(secret.Value{}).IsZero() || secret.New("").Reveal() != "" {
		t.Error("Reveal/IsZero do not round-trip")
	}
}
