package identity_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/jwk"
)

// withMembers is the JSON of validClaims(now) with extra members appended
// as written (duplicates included).
func withMembers(t *testing.T, extra string) []byte {
	t.Helper()
	b := mustJSON(t, validClaims(now))
	return append(append(b[:len(b)-1:len(b)-1], ","+extra...), '}')
}

// spaced rewrites a flat JSON object with white space around every colon
// and comma, as a hand-written token might be.
func spaced(t *testing.T, m map[string]any) []byte {
	t.Helper()
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, strconv.Quote(k)+" \t:\n "+string(mustJSON(t, v)))
	}
	return []byte("{ " + strings.Join(parts, " ,\r\n ") + " }")
}

// The claims reader: every member counted once however it is spelled,
// dates as the numbers they are, at the edges of their range.
func TestClaimsEdges(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	v, err := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(name string, value any) []byte {
		c := validClaims(now)
		c[name] = value
		return mustJSON(t, c)
	}
	raw := func(name, value string) []byte {
		c := validClaims(now)
		delete(c, name)
		b := mustJSON(t, c)
		return append(append(b[:len(b)-1:len(b)-1], ","+strconv.Quote(name)+":"+value...), '}')
	}
	sp := spaced(t, validClaims(now))
	spacedTwice := append(sp[:len(sp)-1:len(sp)-1], `, "tenant_id" : "globex"}`...)
	tests := []struct {
		name    string
		payload []byte
		want    error  // nil: verifies
		detail  string // in the error
		check   func(*identity.Claims) bool
	}{
		{name: "white space around colons", payload: spaced(t, validClaims(now))},
		{name: "white space, a member twice", payload: spacedTwice, want: identity.ErrMalformed, detail: "twice"},
		{name: "a brace in a string, then a member twice", payload: withMembers(t, `"agent_name":"{[","tenant_id":"globex"`), want: identity.ErrMalformed, detail: "twice"},
		{name: "a closing brace in a string, then a member twice", payload: withMembers(t, `"agent_name":"}]}","tenant_id":"globex"`), want: identity.ErrMalformed, detail: "twice"},
		{name: "an escaped quote, then a member twice", payload: withMembers(t, `"agent_name":"a\"b\\","tenant_id":"globex"`), want: identity.ErrMalformed, detail: "twice"},
		{name: "a colon in a string, no duplicate", payload: claim("agent_name", `x":"y`)},
		{name: "braces in a string, no duplicate", payload: claim("agent_name", "{[{"),
			check: func(c *identity.Claims) bool { return c.AgentName == "{[{" && c.TenantID == "acme" }},
		{name: "escaped quotes in a string, no duplicate", payload: claim("agent_name", `a"}"\`),
			check: func(c *identity.Claims) bool { return c.AgentName == `a"}"\` }},
		{name: "an escaped name, a member twice", payload: withMembers(t, `"tenant\u005fid":"globex"`), want: identity.ErrMalformed, detail: "twice"},
		{name: "a member twice inside a claim", payload: withMembers(t, `"extra":{"a":1,"a":2}`), want: identity.ErrMalformed, detail: "twice"},
		{name: "a nested member named like a claim", payload: withMembers(t, `"extra":{"tenant_id":"globex","a":["}",{"b":1}]}`),
			check: func(c *identity.Claims) bool { return c.TenantID == "acme" }},
		{name: "exp null", payload: raw("exp", "null"), want: identity.ErrMalformed, detail: "not a number"},
		{name: "exp a string", payload: raw("exp", `"1893456000"`), want: identity.ErrMalformed, detail: "not a number"},
		{name: "exp true", payload: raw("exp", "true"), want: identity.ErrMalformed, detail: "not a number"},
		{name: "exp negative", payload: raw("exp", "-1"), want: identity.ErrMalformed, detail: "out of range"},
		{name: "exp past 9999", payload: raw("exp", "253402300800"), want: identity.ErrMalformed, detail: "out of range"},
		{name: "exp at the end of 9999", payload: raw("exp", "253402300799"),
			check: func(c *identity.Claims) bool { return c.Expiry.Equal(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)) }},
		{name: "exp starting with 9", payload: raw("exp", "9999999999"),
			check: func(c *identity.Claims) bool { return c.Expiry.Unix() == 9999999999 }},
		{name: "nbf zero", payload: raw("nbf", "0"), check: func(c *identity.Claims) bool { return c.NotBefore.Equal(time.Unix(0, 0)) }},
		{name: "iat with a fraction", payload: raw("iat", strconv.FormatInt(now.Unix()-10, 10)+".25"),
			check: func(c *identity.Claims) bool {
				return c.IssuedAt.Equal(now.Add(-10*time.Second + 250*time.Millisecond))
			}},
		{name: "call_id a number", payload: raw("call_id", "5"), want: identity.ErrMalformed, detail: `claim "call_id" is not a string`},
		{name: "call_id null", payload: raw("call_id", "null"), want: identity.ErrMalformed, detail: `claim "call_id" is not a string`},
		{name: "call_id twice", payload: withMembers(t, `"call_id":"call-6"`), want: identity.ErrMalformed, detail: "twice"},
		{name: "call_id", payload: claim("call_id", "call-6"), check: func(c *identity.Claims) bool { return c.CallID == "call-6" }},
		{name: "nbf with an exponent", payload: raw("nbf", "1.5e9"), check: func(c *identity.Claims) bool { return c.NotBefore.Unix() == 1.5e9 }},
		{name: "llm_max_tokens", payload: raw("llm_max_tokens", "1200"), check: func(c *identity.Claims) bool { return c.LLMMaxTokens == 1200 }},
		{name: "llm_max_tokens zero", payload: raw("llm_max_tokens", "0"), check: func(c *identity.Claims) bool { return c.LLMMaxTokens == 0 }},
		{name: "llm_max_tokens negative", payload: raw("llm_max_tokens", "-1"), want: identity.ErrMalformed, detail: `claim "llm_max_tokens" is not a whole number`},
		{name: "llm_max_tokens a fraction", payload: raw("llm_max_tokens", "1.5"), want: identity.ErrMalformed, detail: `claim "llm_max_tokens" is not a whole number`},
		{name: "llm_max_tokens past int64", payload: raw("llm_max_tokens", "9223372036854775808"), want: identity.ErrMalformed, detail: `claim "llm_max_tokens"`},
		{name: "llm_max_tokens a string", payload: raw("llm_max_tokens", `"5"`), want: identity.ErrMalformed, detail: `claim "llm_max_tokens"`},
		{name: "llm_max_tokens null", payload: raw("llm_max_tokens", "null"), want: identity.ErrMalformed, detail: `claim "llm_max_tokens"`},
		{name: "llm_max_cost_usd", payload: raw("llm_max_cost_usd", "0.25"), check: func(c *identity.Claims) bool { return c.LLMMaxCostUSD == 0.25 }},
		{name: "llm_max_cost_usd with an exponent", payload: raw("llm_max_cost_usd", "2.5e-3"), check: func(c *identity.Claims) bool { return c.LLMMaxCostUSD == 0.0025 }},
		{name: "llm_max_cost_usd negative", payload: raw("llm_max_cost_usd", "-0.01"), want: identity.ErrMalformed, detail: `claim "llm_max_cost_usd" is not a number`},
		{name: "llm_max_cost_usd null", payload: raw("llm_max_cost_usd", "null"), want: identity.ErrMalformed, detail: `claim "llm_max_cost_usd" is not a number`},
		{name: "llm_max_cost_usd past float64", payload: raw("llm_max_cost_usd", "1e400"), want: identity.ErrMalformed, detail: `claim "llm_max_cost_usd" is not a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), tc.payload)
			c, err := v.Verify(context.Background(), tok)
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.detail) {
					t.Fatalf("Verify = %v, want %v saying %q", err, tc.want, tc.detail)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v (payload %s)", err, tc.payload)
			}
			if tc.check != nil && !tc.check(c) {
				t.Fatalf("claims %+v", c)
			}
		})
	}
}

// An attacker-chosen value in an error is quoted whole up to 64 bytes and
// cut after that.
func TestErrorQuotesShortValuesWhole(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }})
	for _, n := range []int{63, 64, 65, 200} {
		kid := strings.Repeat("k", n)
		tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", kid)), mustJSON(t, validClaims(now)))
		_, err := v.Verify(context.Background(), tok)
		if !errors.Is(err, identity.ErrUnknownKey) {
			t.Fatalf("kid of %d bytes: %v", n, err)
		}
		whole := strings.Contains(err.Error(), strconv.Quote(kid))
		cut := strings.Contains(err.Error(), strconv.Quote(kid[:min(n, 64)]+"…"))
		if (n <= 64) != whole || (n > 64) != cut {
			t.Errorf("kid of %d bytes: %v", n, err)
		}
	}
}

// The size limits take exactly their size.
func TestSizeLimitsAtTheirEdge(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	for _, tc := range []struct {
		max int
		ok  bool
	}{{len(tok), true}, {len(tok) - 1, false}} {
		v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, MaxTokenBytes: tc.max})
		if _, err := v.Verify(context.Background(), tok); (err == nil) != tc.ok {
			t.Errorf("a %d-byte token, MaxTokenBytes %d: %v", len(tok), tc.max, err)
		}
	}

	body, _ := json.Marshal(jwk.NewKeySet(ed.Key))
	body = append(body, "      "...)
	for _, tc := range []struct {
		max int64
		ok  bool
	}{{int64(len(body)), true}, {int64(len(body)) - 1, false}} {
		ks := newKeyServer(t)
		ks.body = body
		src, _ := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{Policy: loopback(), MaxBytes: tc.max})
		if _, err := src.Key(context.Background(), ed.KeyID()); (err == nil) != tc.ok {
			t.Errorf("a %d-byte key set, MaxBytes %d: %v", len(body), tc.max, err)
		}
	}

	for n, want := range map[int]bool{255: true, 256: true, 257: false} {
		s := "a:" + strings.Repeat("b", n-2)
		if got := identity.ValidScope(s); got != want {
			t.Errorf("ValidScope of %d bytes = %v, want %v", n, got, want)
		}
	}
}

// A JWKS caches for CacheTTL and refetches for an unknown kid at most once
// per RefreshInterval: the values given, or the defaults when zero, each
// up to the instant it ends.
func TestJWKSIntervals(t *testing.T) {
	tests := []struct {
		name           string
		ttl, interval  time.Duration
		wantTTL, wantI time.Duration
	}{
		{"given", time.Minute, 5 * time.Second, time.Minute, 5 * time.Second},
		{"defaults", 0, 0, identity.DefaultCacheTTL, identity.DefaultRefreshInterval},
		{"negative", -time.Second, -time.Second, identity.DefaultCacheTTL, identity.DefaultRefreshInterval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestKey(t, identity.EdDSA)
			ks := newKeyServer(t, a.Key)
			clk := &clock{t: now}
			src, err := identity.NewJWKS(identity.JWKSURL(ks.URL), &identity.JWKSOptions{Policy: loopback(), Now: clk.Now,
				CacheTTL: tc.ttl, RefreshInterval: tc.interval})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			fetches := func(want int64) {
				t.Helper()
				if n := ks.fetches.Load(); n != want {
					t.Fatalf("at %s: %d fetches, want %d", clk.Now().Sub(now), n, want)
				}
			}
			src.Key(ctx, a.KeyID())
			fetches(1)
			// Unknown kids: no refetch until the interval has passed, one
			// at its very end.
			clk.Add(tc.wantI - time.Nanosecond)
			src.Key(ctx, "unknown")
			fetches(1)
			clk.Add(time.Nanosecond)
			src.Key(ctx, "unknown")
			src.Key(ctx, "unknown-2")
			fetches(2)
			// The known key: from the cache until CacheTTL after the last
			// fetch, fetched again at its very end.
			clk.Add(tc.wantTTL - time.Nanosecond)
			if _, err := src.Key(ctx, a.KeyID()); err != nil {
				t.Fatal(err)
			}
			fetches(2)
			clk.Add(time.Nanosecond)
			if _, err := src.Key(ctx, a.KeyID()); err != nil {
				t.Fatal(err)
			}
			fetches(3)
		})
	}
}

// leakyKeys returns a key together with an error, as a broken key source
// might: the error wins, also for a token verified before.
type leakyKeys struct {
	key *jwk.Key
	err error
}

func (l *leakyKeys) Key(context.Context, string) (*jwk.Key, error) { return l.key, l.err }

func TestKeySourceErrorWinsOverMemory(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src := &leakyKeys{key: ed.Key}
	v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }})
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	if _, err := v.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	src.err = identity.ErrKeysUnavailable
	if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identity.ErrKeysUnavailable) {
		t.Fatalf("a key source failing beside a remembered token: %v, want its error", err)
	}
}

// The cache remembers every token up to CacheSize, then stays at it; a
// remembered token costs far fewer allocations than a signature check.
func TestCacheFillsToItsSize(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, CacheSize: 8})
	off, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, CacheSize: -1})
	ctx := context.Background()
	var toks []string
	for i := range 12 {
		c := validClaims(now)
		c["run_id"] = "run-" + strconv.Itoa(i)
		toks = append(toks, sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, c)))
		if _, err := v.Verify(ctx, toks[i]); err != nil {
			t.Fatal(err)
		}
		if n, want := identity.RememberedTokens(v), min(i+1, 8); n != want {
			t.Fatalf("after %d tokens: %d remembered, want %d", i+1, n, want)
		}
	}
	last := toks[len(toks)-1]
	remembered := testing.AllocsPerRun(20, func() { v.Verify(ctx, last) })
	checked := testing.AllocsPerRun(20, func() { off.Verify(ctx, last) })
	if remembered*4 > checked {
		t.Errorf("a remembered token costs %.0f allocations, a checked one %.0f: the cache is not used", remembered, checked)
	}
}

// A signature spelled with spare bits set in its last character (the
// same bytes, another spelling) is refused: the token is not canonical.
func TestNonCanonicalSignatureRefused(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, CacheSize: -1})
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, validClaims(now)))
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	if len(sig)%4 != 2 {
		t.Fatalf("an Ed25519 signature is %d characters", len(sig))
	}
	i := strings.IndexByte(alphabet, tok[len(tok)-1])
	for _, spare := range []int{1, 2, 4, 8} {
		forged := tok[:len(tok)-1] + string(alphabet[i|spare])
		if _, err := v.Verify(context.Background(), forged); !errors.Is(err, identity.ErrMalformed) || !strings.Contains(err.Error(), "canonical") {
			t.Errorf("spare bit %d set: %v, want ErrMalformed, not canonical", spare, err)
		}
	}
	// A part one character past a whole group can encode no byte at all.
	for _, extra := range []string{"A", "AAA"} {
		if n := len(sig) + len(extra); n%4 != 1 {
			continue
		}
		if _, err := v.Verify(context.Background(), tok+extra); !errors.Is(err, identity.ErrMalformed) || !strings.Contains(err.Error(), "canonical") {
			t.Errorf("a signature of %d characters: %v, want ErrMalformed, not canonical", len(sig)+len(extra), err)
		}
	}
}

// A negative leeway means none; zero means the default.
func TestLeewayNoneAndDefault(t *testing.T) {
	ed := newTestKey(t, identity.EdDSA)
	src, _ := identity.NewStaticKeys(ed.Key)
	c := validClaims(now)
	c["exp"] = now.Add(-time.Second).Unix()
	tok := sign(t, ed, "EdDSA", mustJSON(t, header("EdDSA", ed.KeyID())), mustJSON(t, c))
	for _, tc := range []struct {
		leeway time.Duration
		ok     bool
	}{{0, true}, {-1, false}, {time.Second, true}, {time.Nanosecond, false}} {
		v, _ := identity.New(src, identity.Options{Issuer: testIssuer, Now: func() time.Time { return now }, Leeway: tc.leeway})
		if _, err := v.Verify(context.Background(), tok); (err == nil) != tc.ok {
			t.Errorf("leeway %s, a second past exp: %v, want ok %v", tc.leeway, err, tc.ok)
		}
	}
}
