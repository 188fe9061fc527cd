package gate

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"novaos.dev/novaos/envconfig"
)

func TestConfigFromEnv(t *testing.T) {
	const key = "sk-very-secret-key-123"
	tests := []struct {
		name      string
		env       map[string]string
		wantURL   string
		wantToken string
		wantErr   string
	}{
		{"our names", map[string]string{URLEnv: "https://gate.example", TokenEnv: key}, "https://gate.example", key, ""},
		{"seed names", map[string]string{SeedURLEnv: "http://127.0.0.1:8080", SeedSDKKeyEnv: key}, "http://127.0.0.1:8080", key, ""},
		{"ours win", map[string]string{URLEnv: "https://ours", SeedURLEnv: "https://seed", TokenEnv: key, SeedSDKKeyEnv: "other"}, "https://ours", key, ""},
		{"empty ours falls back", map[string]string{URLEnv: "", SeedURLEnv: "https://seed", TokenEnv: key}, "https://seed", key, ""},
		{"no url", map[string]string{TokenEnv: key}, "", "", "no gate URL: set NOVAOS_GATE_URL (or NOVARCH_SERVER_URL)"},
		{"no token", map[string]string{URLEnv: "https://gate.example"}, "", "", "no gate token: set NOVAOS_TOKEN (or NOVARCH_SDK_KEY)"},
		{"relative url", map[string]string{URLEnv: "gate.example", TokenEnv: key}, "", "", "absolute http(s) URL"},
		{"ftp url", map[string]string{URLEnv: "ftp://gate.example", TokenEnv: key}, "", "", "absolute http(s) URL"},
		{"credentials in url", map[string]string{URLEnv: "https://user:" + key + "@gate.example", TokenEnv: key}, "", "", "must not carry credentials"},
		// seed 000, novaos_client_sdk.config.validate_host_allowed: "No-ops
		// when no allowlist is configured … Raises ValueError if an
		// allowlist is configured and url's hostname doesn't end with any
		// entry in it" (on a label boundary here: see package envconfig).
		{"allowed host", map[string]string{URLEnv: "https://gate.novaos.example", TokenEnv: key, envconfig.AllowedHostsEnv: "novaos.example,localhost"}, "https://gate.novaos.example", key, ""},
		{"host not allowed", map[string]string{URLEnv: "https://gate.elsewhere.example", TokenEnv: key, envconfig.AllowedHostsEnv: "novaos.example"}, "", "", `host not in the allowed hosts: "gate.elsewhere.example"`},
		{"empty list: no restriction", map[string]string{URLEnv: "https://gate.elsewhere.example", TokenEnv: key, envconfig.AllowedHostsEnv: ""}, "https://gate.elsewhere.example", key, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			c, err := ConfigFromEnv(lookup)
			if tt.wantErr != "" {
				var k *KillError
				if !errors.As(err, &k) || k.Reason != ReasonConfig || !strings.Contains(err.Error(), tt.wantErr) ||
					strings.Contains(tt.wantErr, "allowed hosts") != errors.Is(err, envconfig.ErrHostNotAllowed) {
					t.Fatalf("err = %v, want fail_closed_config containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), key) {
					t.Fatalf("error leaks the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.URL != tt.wantURL || c.Token.Reveal() != tt.wantToken {
				t.Fatalf("got %q / token ok=%v", c.URL, c.Token.Reveal() == tt.wantToken)
			}
			for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
				if strings.Contains(s, key) {
					t.Fatalf("formatted config leaks the key: %s", s)
				}
			}
		})
	}
}
