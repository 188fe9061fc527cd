package auth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
)

func TestTokenEndpoint(t *testing.T) {
	i, err := Mount(Deps{BaseURL: "http://novaos.test"}, &Options{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, r := range i.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()
	secret, err := i.Mint(ctx, identity.Claims{TenantID: "acme", AgentID: "inspector", Scopes: []string{"mcp:tools:*", "memory:read:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	post := func(form url.Values, basic string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+TokenPath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basic != "" {
			req.SetBasicAuth("client", url.QueryEscape(basic))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		basic  string
		status int
		errStr string
		scopes []string
	}{
		{"basic secret, all scopes", url.Values{"grant_type": {"client_credentials"}}, secret, 200, "", []string{"mcp:tools:*", "memory:read:*"}},
		{"post secret, narrowed", url.Values{"grant_type": {"client_credentials"}, "client_secret": {secret}, "scope": {"mcp:tools:novaos.memory.query other:scope"}}, "", 200, "", []string{"mcp:tools:novaos.memory.query"}},
		{"no scope granted", url.Values{"grant_type": {"client_credentials"}, "scope": {"gate:operate"}}, secret, 400, "invalid_scope", nil},
		{"wrong grant", url.Values{"grant_type": {"password"}}, secret, 400, "unsupported_grant_type", nil},
		{"no secret", url.Values{"grant_type": {"client_credentials"}}, "", 401, "invalid_client", nil},
		{"forged secret", url.Values{"grant_type": {"client_credentials"}}, secret + "x", 401, "invalid_client", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := post(tc.form, tc.basic)
			if status != tc.status || (tc.errStr != "" && out["error"] != tc.errStr) {
				t.Fatalf("status %d %v, want %d %s", status, out["error"], tc.status, tc.errStr)
			}
			if tc.status != 200 {
				if strings.Contains(out["error_description"].(string), secret) {
					t.Fatal("the error repeats the secret")
				}
				return
			}
			tok, _ := out["access_token"].(string)
			c, err := i.Verify(ctx, tok)
			if err != nil || c.TenantID != "acme" || c.AgentID != "inspector" || strings.Join(c.Scopes, " ") != strings.Join(tc.scopes, " ") {
				t.Fatalf("issued %+v, %v", c, err)
			}
			if out["token_type"] != "Bearer" || out["expires_in"].(float64) > DefaultTTL.Seconds() {
				t.Fatalf("answer %v", out)
			}
		})
	}
	resp, err := http.Get(srv.URL + AuthServerMetadataPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var meta map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil || meta["issuer"] != "http://novaos.test" || meta["token_endpoint"] != "http://novaos.test"+TokenPath {
		t.Fatalf("metadata %v %v", meta, err)
	}
}
