package adapter

import (
	"regexp"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// A stored token counts as expired from half the leeway before its
// expiry: it is renewed before a start rather than refused after it.
// The boundary is exact to the nanosecond.
func TestAdapterExpiredBoundary(t *testing.T) {
	exp := time.Date(2026, 12, 6, 12, 5, 0, 0, time.UTC)
	const leeway = 30 * time.Second
	tests := []struct {
		name string
		exp  time.Time
		now  time.Time
		want bool
	}{
		{"no expiry is never expired", time.Time{}, exp.Add(time.Hour), false},
		{"well before", exp, exp.Add(-time.Minute), false},
		{"a nanosecond before half the leeway", exp, exp.Add(-leeway/2 - time.Nanosecond), false},
		{"at half the leeway before expiry", exp, exp.Add(-leeway / 2), true},
		{"between half the leeway and expiry", exp, exp.Add(-leeway / 4), true},
		{"at expiry", exp, exp, true},
		{"after expiry", exp, exp.Add(time.Hour), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := DefaultSettings()
			set.InvocationTokenLeeway = leeway
			a := &Adapter{clock: &verifyClock{now: tc.now}, set: set}
			if got := a.expired(InboxToken{JTI: "jti-1", ExpiresAt: tc.exp}); got != tc.want {
				t.Fatalf("expired %v, want %v", got, tc.want)
			}
		})
	}
}

// A start, resume or renewal is keyed by its operation and the token id:
// the same pair gives the same key (a start sent again is answered, not
// refused), any other pair another; the key has a UUID's form.
func TestStartKey(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	keys := map[string]string{}
	for _, op := range []string{"start", "resume", "renew"} {
		for _, jti := range []string{"jti-1", "jti-2", ""} {
			k := startKey(op, jti)
			if !uuid.MatchString(k) {
				t.Errorf("startKey(%q, %q) = %q, not a UUID's form", op, jti, k)
			}
			if k != startKey(op, jti) {
				t.Errorf("startKey(%q, %q) differs between calls", op, jti)
			}
			if prev, ok := keys[k]; ok {
				t.Errorf("startKey(%q, %q) = startKey of %s", op, jti, prev)
			}
			keys[k] = op + ":" + jti
		}
	}
	// Pinned: a key the platform stored under an earlier version must
	// still be the key of the same start.
	if got, want := startKey("start", "jti-0001"), startKeyPinned; got != want {
		t.Errorf("startKey(start, jti-0001) = %s, want %s", got, want)
	}
}

// startKeyPinned is startKey("start", "jti-0001"): the first 16 bytes of
// sha256("start:jti-0001") in UUID form with version nibble 8.
const startKeyPinned = "837681db-c1a1-8d15-1d02-9fe4ebbfa5c9"

// grants: the refusal reason the actual billing and tool class give
// against a token's claims, billing first.
func TestGrants(t *testing.T) {
	claims := &delivery.Claims{BillingMode: delivery.BillingAgent, ToolClass: delivery.ToolScoped}
	tests := []struct {
		name   string
		claims *delivery.Claims
		act    Actual
		want   string
	}{
		{"no claims", nil, Actual{BillingMode: delivery.BillingAgent, ToolClass: delivery.ToolChat}, delivery.ReasonInvalidToken},
		{"granted", claims, Actual{BillingMode: delivery.BillingAgent, ToolClass: delivery.ToolScoped}, ""},
		{"less than granted", claims, Actual{BillingMode: delivery.BillingAgent, ToolClass: delivery.ToolChat}, ""},
		{"other billing", claims, Actual{BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolChat}, delivery.ReasonBillingModeMismatch},
		{"unknown billing", &delivery.Claims{BillingMode: delivery.BillingUnknown, ToolClass: delivery.ToolScoped},
			Actual{BillingMode: delivery.BillingUnknown, ToolClass: delivery.ToolChat}, delivery.ReasonBillingModeMismatch},
		{"more tools than granted", claims, Actual{BillingMode: delivery.BillingAgent, ToolClass: delivery.ToolHost}, delivery.ReasonToolClassMismatch},
		{"billing before tools", claims, Actual{BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolHost}, delivery.ReasonBillingModeMismatch},
	}
	for _, tc := range tests {
		if got := grants(tc.claims, tc.act); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
