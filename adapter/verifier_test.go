package adapter

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/delivery"
)

// verifyClock is a hand-moved Clock for the tests of this area.
type verifyClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *verifyClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *verifyClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	return ctx.Err()
}

func (c *verifyClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *verifyClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// verifyKeys is a KeySource over a fixed map that counts its calls.
type verifyKeys struct {
	mu    sync.Mutex
	keys  map[string]ed25519.PublicKey
	err   error
	calls int
}

func (k *verifyKeys) Key(_ context.Context, kid string) (ed25519.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	if k.err != nil {
		return nil, k.err
	}
	if key, ok := k.keys[kid]; ok {
		return key, nil
	}
	return nil, fmt.Errorf("test source: %w", ErrUnknownKey)
}

// verifyAllow is an AllowList over a fixed set.
type verifyAllow struct {
	subs     map[string]bool
	err      error
	versions []int64
}

func (a *verifyAllow) Allowed(_ context.Context, sub string, v int64) (bool, error) {
	a.versions = append(a.versions, v)
	return a.subs[sub], a.err
}

var (
	verifyT0    = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	verifySeed  = []byte("novaos adapter verifier test key")
	verifyPriv  = ed25519.NewKeyFromSeed(verifySeed)
	verifyPub   = verifyPriv.Public().(ed25519.PublicKey)
	verifyOther = ed25519.NewKeyFromSeed([]byte("another key, not the platform..."))
)

const (
	verifyAgent  = "agt-0193c0de-lotse"
	verifyIssuer = "https://novaos.example.com"
	verifyKid    = "k-2026-12"
)

func verifyB64Enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func verifyJSON(t testing.TB, v any) []byte {
	t.Helper()
	if raw, ok := v.(string); ok {
		return []byte(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// verifyHeaderMap is a valid header.
func verifyHeaderMap() map[string]any {
	return map[string]any{"alg": "EdDSA", "typ": "agent-invocation+jwt", "kid": verifyKid}
}

// verifyClaimsMap is a valid agent.invocation claim set, issued at T0.
func verifyClaimsMap() map[string]any {
	return map[string]any{
		"iss": verifyIssuer, "aud": verifyAgent, "sub": "usr-alex",
		"iat": verifyT0.Unix(), "exp": verifyT0.Add(5 * time.Minute).Unix(), "jti": "jti-0001",
		"run_id": "run-1", "thread_id": "thr-1", "event_id": "evt-1",
		"trigger_kind": "message", "message_id": "msg-1",
		"billing_mode": "platform", "tool_class": "scoped", "permission_version": 3,
	}
}

// verifySignEd signs with key.
func verifySignEd(key ed25519.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte { return ed25519.Sign(key, in) }
}

// verifyMint builds a compact JWS from a header and claims (maps, or raw
// JSON strings) signed by sign.
func verifyMint(t testing.TB, header, claims any, sign func([]byte) []byte) string {
	t.Helper()
	in := verifyB64Enc(verifyJSON(t, header)) + "." + verifyB64Enc(verifyJSON(t, claims))
	return in + "." + verifyB64Enc(sign([]byte(in)))
}

func verifyExpect() Expectation {
	return Expectation{
		EventType: delivery.EventInvocation, AgentID: verifyAgent, Issuer: verifyIssuer,
		RunID: "run-1", ThreadID: "thr-1", TriggerKind: delivery.TriggerMessage, MessageID: "msg-1",
	}
}

var verifyActual = Actual{BillingMode: delivery.BillingPlatform, ToolClass: delivery.ToolScoped}

// verifyCase is one check: a token built from the valid header and
// claims after header and claims changed them (or a literal token), the
// expectation and actual use after their changes, the time of the check.
type verifyCase struct {
	name   string
	header func(map[string]any)
	claims func(map[string]any)
	rawHdr string // replaces the header JSON
	rawClm string // replaces the claims JSON
	sign   func([]byte) []byte
	token  func(valid string) string
	want   func(*Expectation)
	actual func(*Actual)
	at     time.Duration // after T0
	allow  *verifyAllow
	seen   bool // the token's jti is recorded
	// maxBytes, when set, gives VerifierOptions.MaxTokenBytes from the
	// token's length.
	maxBytes func(n int) int
	verdict  Verdict
}

func (c verifyCase) run(t *testing.T) (TokenCheck, string, *verifyKeys) {
	t.Helper()
	h, cl := verifyHeaderMap(), verifyClaimsMap()
	if c.header != nil {
		c.header(h)
	}
	if c.claims != nil {
		c.claims(cl)
	}
	var hdr, clm any = h, cl
	if c.rawHdr != "" {
		hdr = c.rawHdr
	}
	if c.rawClm != "" {
		clm = c.rawClm
	}
	sign := c.sign
	if sign == nil {
		sign = verifySignEd(verifyPriv)
	}
	tok := verifyMint(t, hdr, clm, sign)
	if c.token != nil {
		tok = c.token(tok)
	}
	want, actual := verifyExpect(), verifyActual
	if c.want != nil {
		c.want(&want)
	}
	if c.actual != nil {
		c.actual(&actual)
	}
	clock := &verifyClock{now: verifyT0.Add(c.at)}
	keys := &verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}
	jtis := NewMemoryJTIStore(clock)
	if c.seen {
		jtis.Record("jti-0001", verifyT0.Add(time.Hour))
	}
	opts := &VerifierOptions{Clock: clock, JTIs: jtis}
	if c.maxBytes != nil {
		opts.MaxTokenBytes = c.maxBytes(len(tok))
	}
	if c.allow != nil {
		opts.AllowList = c.allow
	}
	got, err := NewVerifier(keys, opts).Check(context.Background(), tok, want, actual)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return got, tok, keys
}

func TestVerifierHeader(t *testing.T) {
	hs256 := func(key []byte) func([]byte) []byte {
		return func(in []byte) []byte { m := hmac.New(sha256.New, key); m.Write(in); return m.Sum(nil) }
	}
	cases := []verifyCase{
		{name: "valid", verdict: VerdictValid},
		{name: "missing", token: func(string) string { return "" }, verdict: VerdictInvalid},
		{name: "none", header: func(h map[string]any) { h["alg"] = "none" }, token: func(s string) string { return s[:strings.LastIndexByte(s, '.')+1] }, verdict: VerdictInvalid},
		{name: "none signed", header: func(h map[string]any) { h["alg"] = "none" }, verdict: VerdictInvalid},
		{name: "alg_hs256 keyed with the public key bytes", header: func(h map[string]any) { h["alg"] = "HS256" }, sign: hs256(verifyPub), verdict: VerdictInvalid},
		{name: "alg ES256", header: func(h map[string]any) { h["alg"] = "ES256" }, verdict: VerdictInvalid},
		{name: "alg in lower case", header: func(h map[string]any) { h["alg"] = "eddsa" }, verdict: VerdictInvalid},
		{name: "alg Ed25519", header: func(h map[string]any) { h["alg"] = "Ed25519" }, verdict: VerdictInvalid},
		{name: "alg missing", header: func(h map[string]any) { delete(h, "alg") }, verdict: VerdictInvalid},
		{name: "alg not a string", header: func(h map[string]any) { h["alg"] = []string{"EdDSA"} }, verdict: VerdictInvalid},
		{name: "typ_access", header: func(h map[string]any) { h["typ"] = "at+jwt" }, verdict: VerdictInvalid},
		{name: "typ JWT", header: func(h map[string]any) { h["typ"] = "JWT" }, verdict: VerdictInvalid},
		{name: "typ in another case", header: func(h map[string]any) { h["typ"] = "Agent-Invocation+JWT" }, verdict: VerdictInvalid},
		{name: "typ without +jwt", header: func(h map[string]any) { h["typ"] = "agent-invocation" }, verdict: VerdictInvalid},
		{name: "typ missing", header: func(h map[string]any) { delete(h, "typ") }, verdict: VerdictInvalid},
		{name: "crit", header: func(h map[string]any) { h["crit"] = []string{"exp"} }, verdict: VerdictInvalid},
		{name: "crit empty", header: func(h map[string]any) { h["crit"] = []string{} }, verdict: VerdictInvalid},
		{name: "crit null", header: func(h map[string]any) { h["crit"] = nil }, verdict: VerdictInvalid},
		{name: "kid empty", header: func(h map[string]any) { h["kid"] = "" }, verdict: VerdictInvalid},
		{name: "kid missing", header: func(h map[string]any) { delete(h, "kid") }, verdict: VerdictInvalid},
		{name: "kid a number", header: func(h map[string]any) { h["kid"] = 7 }, verdict: VerdictInvalid},
		{name: "alg twice", rawHdr: `{"alg":"HS256","alg":"EdDSA","typ":"agent-invocation+jwt","kid":"k-2026-12"}`, verdict: VerdictInvalid},
		{name: "alg twice in two cases", rawHdr: `{"ALG":"HS256","alg":"EdDSA","typ":"agent-invocation+jwt","kid":"k-2026-12"}`, verdict: VerdictInvalid},
		{name: "header not an object", rawHdr: `["EdDSA"]`, verdict: VerdictInvalid},
		{name: "header not JSON", rawHdr: `{alg:EdDSA}`, verdict: VerdictInvalid},
		{name: "unknown header member tolerated", header: func(h map[string]any) { h["x-note"] = 1 }, verdict: VerdictValid},
		{name: "too long", claims: func(c map[string]any) { c["pad"] = strings.Repeat("x", 9000) }, verdict: VerdictInvalid},
		{name: "exactly the longest read", maxBytes: func(n int) int { return n }, verdict: VerdictValid},
		{name: "one byte over the longest read", maxBytes: func(n int) int { return n - 1 }, verdict: VerdictInvalid},
		{name: "the default longest read", claims: func(c map[string]any) { c["pad"] = strings.Repeat("x", 5000) }, verdict: VerdictValid},
		{name: "two parts", token: func(s string) string { return s[:strings.LastIndexByte(s, '.')] }, verdict: VerdictInvalid},
		{name: "four parts", token: func(s string) string { return s + ".e30" }, verdict: VerdictInvalid},
		{name: "padded base64", token: func(s string) string {
			_, rest, _ := strings.Cut(s, ".")
			h := base64.URLEncoding.EncodeToString(verifyJSON(t, verifyHeaderMap()))
			if !strings.HasSuffix(h, "=") {
				t.Fatal("the test header needs padding")
			}
			return h + "." + rest
		}, verdict: VerdictInvalid},
		{name: "white space", token: func(s string) string { return " " + s }, verdict: VerdictInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, keys := c.run(t)
			if got.Verdict != c.verdict {
				t.Fatalf("verdict %v, want %v", got.Verdict, c.verdict)
			}
			if c.verdict == VerdictInvalid {
				if keys.calls != 0 {
					t.Errorf("a token refused by its header made %d key lookups", keys.calls)
				}
				if got.Claims != nil || got.JTI != "" || !got.ExpiresAt.IsZero() {
					t.Errorf("claims of an unverified token returned: %+v", got)
				}
			}
		})
	}
}

func TestVerifierKeyAndSignature(t *testing.T) {
	cases := []verifyCase{
		{name: "unknown kid", header: func(h map[string]any) { h["kid"] = "k-forged" }, verdict: VerdictUnknownKey},
		{name: "unknown kid before a wrong audience", header: func(h map[string]any) { h["kid"] = "k-forged" }, claims: func(c map[string]any) { c["aud"] = "agt-other" }, verdict: VerdictUnknownKey},
		{name: "bad header before an unknown kid", header: func(h map[string]any) { h["kid"] = "k-forged"; h["typ"] = "JWT" }, verdict: VerdictInvalid},
		{name: "bad_signature", token: func(s string) string {
			sig, _ := base64.RawURLEncoding.DecodeString(s[strings.LastIndexByte(s, '.')+1:])
			sig[0] ^= 1
			return s[:strings.LastIndexByte(s, '.')+1] + verifyB64Enc(sig)
		}, verdict: VerdictInvalid},
		{name: "signature of another key", sign: verifySignEd(verifyOther), verdict: VerdictInvalid},
		{name: "signature in the standard base64 alphabet", token: func(s string) string { return s + "+/" }, verdict: VerdictInvalid},
		{name: "signature too short", token: func(s string) string { return s[:len(s)-4] }, verdict: VerdictInvalid},
		{name: "changed payload", token: func(s string) string {
			parts := strings.Split(s, ".")
			c := verifyClaimsMap()
			c["tool_class"] = "host"
			parts[1] = verifyB64Enc(verifyJSON(t, c))
			return strings.Join(parts, ".")
		}, actual: func(a *Actual) { a.ToolClass = delivery.ToolHost }, verdict: VerdictInvalid},
		{name: "foreign iss", claims: func(c map[string]any) { c["iss"] = "https://evil.example.com" }, verdict: VerdictInvalid},
		{name: "iss with a trailing slash", claims: func(c map[string]any) { c["iss"] = verifyIssuer + "/" }, verdict: VerdictInvalid},
		{name: "aud_other_agent", claims: func(c map[string]any) { c["aud"] = "agt-0193c0de-texter" }, verdict: VerdictInvalid},
		{name: "aud as an array", claims: func(c map[string]any) { c["aud"] = []string{verifyAgent} }, verdict: VerdictInvalid},
		{name: "aud missing", claims: func(c map[string]any) { delete(c, "aud") }, verdict: VerdictInvalid},
		{name: "aud twice", rawClm: fmt.Sprintf(`{"iss":%q,"aud":"agt-other","aud":%q,"sub":"usr-alex","iat":%d,"exp":%d,"jti":"jti-0001","run_id":"run-1","thread_id":"thr-1","trigger_kind":"message","message_id":"msg-1","billing_mode":"platform","tool_class":"scoped"}`,
			verifyIssuer, verifyAgent, verifyT0.Unix(), verifyT0.Unix()+300), verdict: VerdictInvalid},
		{name: "raw claims as signed", rawClm: fmt.Sprintf(`{"iss":%q,"aud":%q,"sub":"usr-alex","iat":%d,"exp":%d,"jti":"jti-0001","run_id":"run-1","thread_id":"thr-1","trigger_kind":"message","message_id":"msg-1","billing_mode":"platform","tool_class":"scoped"}`,
			verifyIssuer, verifyAgent, verifyT0.Unix(), verifyT0.Unix()+300), verdict: VerdictValid},
		{name: "aud in another case", claims: func(c map[string]any) { delete(c, "aud"); c["AUD"] = verifyAgent }, verdict: VerdictInvalid},
		// encoding/json would read these for the claim; refused, whatever
		// the claim (not only the ones that must be present).
		{name: "run_id in another case", claims: func(c map[string]any) { delete(c, "run_id"); c["Run_ID"] = "run-1" }, verdict: VerdictInvalid},
		{name: "message_id in another case", claims: func(c map[string]any) { delete(c, "message_id"); c["MESSAGE_ID"] = "msg-1" }, verdict: VerdictInvalid},
		{name: "billing_mode in another case", claims: func(c map[string]any) { delete(c, "billing_mode"); c["Billing_Mode"] = "platform" }, verdict: VerdictInvalid},
		{name: "claims not an object", rawClm: `"x"`, verdict: VerdictInvalid},
		{name: "jti missing", claims: func(c map[string]any) { delete(c, "jti") }, verdict: VerdictInvalid},
		{name: "exp missing", claims: func(c map[string]any) { delete(c, "exp") }, verdict: VerdictInvalid},
		{name: "exp at iat", claims: func(c map[string]any) { c["exp"] = verifyT0.Unix() }, verdict: VerdictInvalid},
		{name: "iat zero", claims: func(c map[string]any) { c["iat"] = 0 }, verdict: VerdictInvalid},
		{name: "iat missing", claims: func(c map[string]any) { delete(c, "iat") }, verdict: VerdictInvalid},
		{name: "exp before iat", claims: func(c map[string]any) { c["exp"] = verifyT0.Add(-time.Second).Unix() }, verdict: VerdictInvalid},
		{name: "exp not whole seconds", claims: func(c map[string]any) { c["exp"] = float64(verifyT0.Unix()) + 300.5 }, verdict: VerdictInvalid},
		{name: "exp a string", claims: func(c map[string]any) { c["exp"] = "1796558700" }, verdict: VerdictInvalid},
		{name: "unknown claim tolerated", claims: func(c map[string]any) { c["x_future"] = map[string]any{"a": 1} }, verdict: VerdictValid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, _ := c.run(t)
			if got.Verdict != c.verdict {
				t.Fatalf("verdict %v, want %v", got.Verdict, c.verdict)
			}
		})
	}
}

func TestVerifierObjectAllowListAndGrant(t *testing.T) {
	followup := func(w *Expectation) {
		w.EventType, w.TriggerKind = delivery.EventFollowup, ""
		w.MessageID = "msg-2"
	}
	cases := []verifyCase{
		{name: "wrong run", want: func(w *Expectation) { w.RunID = "run-2" }, verdict: VerdictInvalid},
		{name: "wrong thread", want: func(w *Expectation) { w.ThreadID = "thr-2" }, verdict: VerdictInvalid},
		{name: "wrong message", want: func(w *Expectation) { w.MessageID = "msg-9" }, verdict: VerdictInvalid},
		{name: "no run expected", want: func(w *Expectation) { w.RunID = "" }, claims: func(c map[string]any) { delete(c, "run_id") }, verdict: VerdictInvalid},
		{name: "a second triggering object", claims: func(c map[string]any) { c["interaction_id"] = "int-1" }, verdict: VerdictInvalid},
		{name: "trigger kind differs", claims: func(c map[string]any) {
			c["trigger_kind"] = "interaction"
			c["interaction_id"] = "msg-1"
			delete(c, "message_id")
		}, verdict: VerdictInvalid},
		{name: "trigger kind unknown", want: func(w *Expectation) { w.TriggerKind = "webhook" }, verdict: VerdictInvalid},
		{name: "interaction trigger", claims: func(c map[string]any) {
			c["trigger_kind"] = "interaction"
			c["interaction_id"] = "int-1"
			delete(c, "message_id")
		},
			want: func(w *Expectation) {
				w.TriggerKind, w.MessageID, w.InteractionID = delivery.TriggerInteraction, "", "int-1"
			}, verdict: VerdictValid},
		{name: "command trigger without payload counterpart", claims: func(c map[string]any) {
			c["trigger_kind"] = "command"
			c["command_id"] = "cmd-1"
			delete(c, "message_id")
		},
			want: func(w *Expectation) { w.TriggerKind, w.MessageID = delivery.TriggerCommand, "" }, verdict: VerdictInvalid},
		{name: "command trigger with payload counterpart", claims: func(c map[string]any) {
			c["trigger_kind"] = "command"
			c["command_id"] = "cmd-1"
			delete(c, "message_id")
		},
			want: func(w *Expectation) { w.TriggerKind, w.MessageID, w.CommandID = delivery.TriggerCommand, "", "cmd-1" }, verdict: VerdictValid},
		{name: "followup", claims: func(c map[string]any) { delete(c, "trigger_kind"); c["message_id"] = "msg-2" }, want: followup, verdict: VerdictValid},
		{name: "followup with the invocation's message", claims: func(c map[string]any) { delete(c, "trigger_kind") }, want: followup, verdict: VerdictInvalid},
		{name: "interaction.created", claims: func(c map[string]any) {
			delete(c, "trigger_kind")
			delete(c, "message_id")
			c["interaction_id"] = "int-7"
		},
			want: func(w *Expectation) {
				w.EventType, w.TriggerKind, w.MessageID, w.InteractionID = delivery.EventInteractionCreated, "", "", "int-7"
			}, verdict: VerdictValid},
		{name: "command.invoked without a run", claims: func(c map[string]any) {
			delete(c, "trigger_kind")
			delete(c, "message_id")
			delete(c, "run_id")
			c["command_id"] = "cmd-1"
		}, want: func(w *Expectation) {
			w.EventType, w.TriggerKind, w.MessageID, w.RunID, w.CommandID = delivery.EventCommandInvoked, "", "", "", "cmd-1"
		}, verdict: VerdictValid},
		{name: "command.invoked naming a run the event does not", claims: func(c map[string]any) {
			delete(c, "trigger_kind")
			delete(c, "message_id")
			c["command_id"] = "cmd-1"
		}, want: func(w *Expectation) {
			w.EventType, w.TriggerKind, w.MessageID, w.RunID, w.CommandID = delivery.EventCommandInvoked, "", "", "", "cmd-1"
		}, verdict: VerdictInvalid},
		{name: "autocomplete", claims: func(c map[string]any) {
			delete(c, "trigger_kind")
			delete(c, "message_id")
			delete(c, "run_id")
			c["command_id"] = "cmd-1"
		}, want: func(w *Expectation) {
			*w = Expectation{EventType: delivery.EventAutocompleteRequested, AgentID: verifyAgent, Issuer: verifyIssuer, CommandID: "cmd-1"}
		}, verdict: VerdictValid},
		{name: "autocomplete with a run", claims: func(c map[string]any) {
			delete(c, "trigger_kind")
			delete(c, "message_id")
			c["command_id"] = "cmd-1"
		}, want: func(w *Expectation) {
			*w = Expectation{EventType: delivery.EventAutocompleteRequested, AgentID: verifyAgent, Issuer: verifyIssuer, CommandID: "cmd-1"}
		}, verdict: VerdictInvalid},
		{name: "not a token-bearing event", want: func(w *Expectation) { w.EventType = delivery.EventRunStateChanged }, verdict: VerdictInvalid},
		{name: "no issuer expected", want: func(w *Expectation) { w.Issuer = "" }, verdict: VerdictInvalid},

		{name: "subject on the allow list", allow: &verifyAllow{subs: map[string]bool{"usr-alex": true}}, verdict: VerdictValid},
		{name: "subject not on the allow list", allow: &verifyAllow{subs: map[string]bool{"usr-sam": true}}, verdict: VerdictInvalid},
		{name: "allow list before billing", allow: &verifyAllow{}, actual: func(a *Actual) { a.BillingMode = delivery.BillingAgent }, verdict: VerdictInvalid},

		{name: "billing mode differs", actual: func(a *Actual) { a.BillingMode = delivery.BillingAgent }, verdict: VerdictBillingModeMismatch},
		{name: "billing mode unknown", actual: func(a *Actual) { a.BillingMode = delivery.BillingUnknown }, verdict: VerdictBillingModeMismatch},
		{name: "billing mode unknown on both sides", claims: func(c map[string]any) { c["billing_mode"] = "unknown" }, actual: func(a *Actual) { a.BillingMode = delivery.BillingUnknown }, verdict: VerdictBillingModeMismatch},
		{name: "billing mode empty on both sides", claims: func(c map[string]any) { delete(c, "billing_mode") }, actual: func(a *Actual) { a.BillingMode = "" }, verdict: VerdictBillingModeMismatch},
		{name: "agent billing", claims: func(c map[string]any) { c["billing_mode"] = "agent" }, actual: func(a *Actual) { a.BillingMode = delivery.BillingAgent }, verdict: VerdictValid},

		{name: "host above scoped", actual: func(a *Actual) { a.ToolClass = delivery.ToolHost }, verdict: VerdictToolClassMismatch},
		{name: "scoped above chat", claims: func(c map[string]any) { c["tool_class"] = "chat" }, verdict: VerdictToolClassMismatch},
		{name: "chat under scoped", actual: func(a *Actual) { a.ToolClass = delivery.ToolChat }, verdict: VerdictValid},
		{name: "actual class unknown", actual: func(a *Actual) { a.ToolClass = "galaxy" }, verdict: VerdictToolClassMismatch},
		{name: "claimed class unknown", claims: func(c map[string]any) { c["tool_class"] = "everything" }, verdict: VerdictToolClassMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, _ := c.run(t)
			if got.Verdict != c.verdict {
				t.Fatalf("verdict %v, want %v", got.Verdict, c.verdict)
			}
			if c.allow != nil && (len(c.allow.versions) != 1 || c.allow.versions[0] != 3) {
				t.Errorf("allow list asked with permission versions %v, want [3]", c.allow.versions)
			}
		})
	}
}

func TestVerifierTimesReplayAndOrder(t *testing.T) {
	leeway := DefaultSettings().InvocationTokenLeeway
	exp := 5 * time.Minute // after T0
	cases := []verifyCase{
		{name: "expired at exactly exp plus leeway", at: exp + leeway, verdict: VerdictExpired},
		{name: "valid one second before", at: exp + leeway - time.Second, verdict: VerdictValid},
		{name: "valid a nanosecond before", at: exp + leeway - time.Nanosecond, verdict: VerdictValid},
		{name: "expired long after", at: 24 * time.Hour, verdict: VerdictExpired},
		{name: "iat in the future beyond leeway", at: -leeway - time.Second, verdict: VerdictInvalid},
		{name: "iat in the future within leeway", at: -leeway, verdict: VerdictValid},
		{name: "replay", seen: true, verdict: VerdictReplay},
		{name: "replay of an expired token is expired", seen: true, at: exp + leeway, verdict: VerdictExpired},

		{name: "expired with a billing mismatch gives the mismatch", at: time.Hour, actual: func(a *Actual) { a.BillingMode = delivery.BillingAgent }, verdict: VerdictBillingModeMismatch},
		{name: "expired with a tool class mismatch gives the mismatch", at: time.Hour, actual: func(a *Actual) { a.ToolClass = delivery.ToolHost }, verdict: VerdictToolClassMismatch},
		{name: "billing before tool class", actual: func(a *Actual) { a.BillingMode = delivery.BillingUnknown; a.ToolClass = delivery.ToolHost }, verdict: VerdictBillingModeMismatch},
		{name: "future iat with a billing mismatch gives the mismatch", at: -time.Hour, actual: func(a *Actual) { a.BillingMode = delivery.BillingAgent }, verdict: VerdictBillingModeMismatch},
		{name: "wrong run with a billing mismatch is invalid", want: func(w *Expectation) { w.RunID = "run-2" }, actual: func(a *Actual) { a.BillingMode = delivery.BillingAgent }, verdict: VerdictInvalid},
		{name: "wrong audience and expired is invalid", claims: func(c map[string]any) { c["aud"] = "agt-other" }, at: time.Hour, verdict: VerdictInvalid},
		{name: "replay with a tool class mismatch gives the mismatch", seen: true, actual: func(a *Actual) { a.ToolClass = delivery.ToolHost }, verdict: VerdictToolClassMismatch},
		{name: "replay with a future iat is invalid", seen: true, at: -time.Hour, verdict: VerdictInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, tok, _ := c.run(t)
			if got.Verdict != c.verdict {
				t.Fatalf("verdict %v, want %v", got.Verdict, c.verdict)
			}
			if got.Claims == nil || got.JTI != "jti-0001" || !got.IssuedAt.Equal(verifyT0) || !got.ExpiresAt.Equal(verifyT0.Add(exp)) {
				t.Errorf("verified token's claims, id or times missing: %+v", got)
			}
			if strings.Contains(fmt.Sprintf("%+v %#v", got, got), tok) {
				t.Error("the check's printed form holds the token")
			}
		})
	}
}

// The same token twice gives REPLAY once its id is recorded, as the inbox
// does when it accepts the event; the record ends with its time.
func TestVerifierSameTokenTwice(t *testing.T) {
	clock := &verifyClock{now: verifyT0}
	jtis := NewMemoryJTIStore(clock)
	v := NewVerifier(&verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}, &VerifierOptions{Clock: clock, JTIs: jtis})
	tok := verifyMint(t, verifyHeaderMap(), verifyClaimsMap(), verifySignEd(verifyPriv))
	ctx := context.Background()
	first, err := v.Check(ctx, tok, verifyExpect(), verifyActual)
	if err != nil || first.Verdict != VerdictValid {
		t.Fatalf("first check: %v %v", first.Verdict, err)
	}
	jtis.Record(first.JTI, first.ExpiresAt.Add(DefaultSettings().InvocationTokenLeeway))
	second, err := v.Check(ctx, tok, verifyExpect(), verifyActual)
	if err != nil || second.Verdict != VerdictReplay {
		t.Fatalf("second check: %v %v, want replay", second.Verdict, err)
	}
	clock.Set(first.ExpiresAt.Add(DefaultSettings().InvocationTokenLeeway))
	if seen, _ := jtis.Seen(ctx, first.JTI); seen {
		t.Error("a token id is still seen after its time")
	}
}

func TestVerifierErrors(t *testing.T) {
	tok := verifyMint(t, verifyHeaderMap(), verifyClaimsMap(), verifySignEd(verifyPriv))
	clock := &verifyClock{now: verifyT0}
	boom := errors.New("backend down")
	cases := []struct {
		name string
		keys *verifyKeys
		opts VerifierOptions
	}{
		{"key source fails", &verifyKeys{err: boom}, VerifierOptions{}},
		{"allow list fails", &verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}, VerifierOptions{AllowList: &verifyAllow{err: boom}}},
		{"id store fails", &verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}, VerifierOptions{JTIs: verifyFailingJTIs{boom}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Clock = clock
			got, err := NewVerifier(c.keys, &c.opts).Check(context.Background(), tok, verifyExpect(), verifyActual)
			if !errors.Is(err, boom) {
				t.Fatalf("err %v, want %v", err, boom)
			}
			if got.Verdict == VerdictValid {
				t.Error("a failed check reads valid")
			}
			if strings.Contains(err.Error(), tok) {
				t.Error("the error holds the token")
			}
		})
	}
}

type verifyFailingJTIs struct{ err error }

func (f verifyFailingJTIs) Seen(context.Context, string) (bool, error) { return false, f.err }

func TestVerdictNames(t *testing.T) {
	want := map[Verdict][2]string{
		VerdictValid:                     {"valid", ""},
		VerdictExpired:                   {"expired", ""},
		VerdictInvalid:                   {"invalid", delivery.ReasonInvalidToken},
		VerdictUnknownKey:                {"unknown_key", ""},
		VerdictBillingModeMismatch:       {"billing_mode_mismatch", delivery.ReasonBillingModeMismatch},
		VerdictToolClassMismatch:         {"tool_class_mismatch", delivery.ReasonToolClassMismatch},
		VerdictReplay:                    {"replay", ""},
		Verdict(42):                      {"verdict(42)", ""},
		Verdict(len(verifyVerdictNames)): {fmt.Sprintf("verdict(%d)", len(verifyVerdictNames)), ""},
		Verdict(-1):                      {"verdict(-1)", ""},
	}
	for v, w := range want {
		if v.String() != w[0] || v.FinishReason() != w[1] {
			t.Errorf("%d: %q %q, want %q %q", int(v), v.String(), v.FinishReason(), w[0], w[1])
		}
	}
	var zero TokenCheck
	if zero.Verdict != VerdictInvalid {
		t.Error("the zero verdict is not invalid")
	}
}

// TokenCheck has no field that could hold the token.
func TestTokenCheckHoldsNoToken(t *testing.T) {
	typ := reflect.TypeFor[TokenCheck]()
	for i := range typ.NumField() {
		if f := typ.Field(i); strings.Contains(strings.ToLower(f.Name), "token") {
			t.Errorf("TokenCheck.%s", f.Name)
		}
	}
}

func TestExpectationFor(t *testing.T) {
	ev := func(typ, payload string) delivery.Event {
		return delivery.Event{ID: "evt-1", Seq: 1, Type: typ, Payload: json.RawMessage(payload)}
	}
	base := Expectation{AgentID: verifyAgent, Issuer: verifyIssuer}
	with := func(f func(*Expectation)) Expectation { w := base; f(&w); return w }
	cases := []struct {
		name string
		ev   delivery.Event
		want Expectation
		err  bool
	}{
		{"invocation", ev(delivery.EventInvocation, `{"trigger_kind":"message","run_id":"run-1","thread_id":"thr-1","message_id":"msg-1","later":true}`),
			with(func(w *Expectation) {
				w.EventType, w.RunID, w.ThreadID, w.TriggerKind, w.MessageID = delivery.EventInvocation, "run-1", "thr-1", delivery.TriggerMessage, "msg-1"
			}), false},
		{"followup", ev(delivery.EventFollowup, `{"run_id":"run-1","thread_id":"thr-1","message_id":"msg-2"}`),
			with(func(w *Expectation) {
				w.EventType, w.RunID, w.ThreadID, w.MessageID = delivery.EventFollowup, "run-1", "thr-1", "msg-2"
			}), false},
		{"interaction", ev(delivery.EventInteractionCreated, `{"interaction":{"id":"int-1","run_id":"run-1","thread_id":"thr-1","custom_id":"approval.once"}}`),
			with(func(w *Expectation) {
				w.EventType, w.RunID, w.ThreadID, w.InteractionID = delivery.EventInteractionCreated, "run-1", "thr-1", "int-1"
			}), false},
		{"command", ev(delivery.EventCommandInvoked, `{"command_id":"cmd-1","name":"deploy","thread_id":"thr-1"}`),
			with(func(w *Expectation) {
				w.EventType, w.ThreadID, w.CommandID = delivery.EventCommandInvoked, "thr-1", "cmd-1"
			}), false},
		{"autocomplete", ev(delivery.EventAutocompleteRequested, `{"ref":"r1","command_id":"cmd-1","option":"env","value":"pr","expires_at":"2026-12-06T12:00:03Z"}`),
			with(func(w *Expectation) { w.EventType, w.CommandID = delivery.EventAutocompleteRequested, "cmd-1" }), false},
		{"no token borne", ev(delivery.EventCancelRequested, `{"run_id":"run-1"}`), Expectation{}, true},
		{"member twice", ev(delivery.EventInvocation, `{"run_id":"run-1","run_id":"run-2"}`), Expectation{}, true},
		{"member twice in two cases", ev(delivery.EventInvocation, `{"run_id":"run-1","RUN_ID":"run-2"}`), Expectation{}, true},
		{"not an object", ev(delivery.EventFollowup, `[]`), Expectation{}, true},
		{"wrong type of member", ev(delivery.EventFollowup, `{"run_id":1}`), Expectation{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ExpectationFor(c.ev, verifyAgent, verifyIssuer)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("got %+v, %v; want %+v, error %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestMemoryJTIStorePrunes(t *testing.T) {
	clock := &verifyClock{now: verifyT0}
	s := NewMemoryJTIStore(clock)
	for i := range 1000 {
		s.Record(fmt.Sprint("old-", i), verifyT0.Add(time.Minute))
	}
	clock.Advance(time.Minute)
	for i := range 100 {
		s.Record(fmt.Sprint("new-", i), verifyT0.Add(time.Hour))
	}
	s.mu.Lock()
	n := len(s.until)
	s.mu.Unlock()
	if n > 300 {
		t.Errorf("%d ids held after the old ones expired, want about 100", n)
	}
	if seen, _ := s.Seen(context.Background(), "new-99"); !seen {
		t.Error("a live id was dropped")
	}
	s.Record("new-99", verifyT0) // an earlier time does not shorten it
	if seen, _ := s.Seen(context.Background(), "new-99"); !seen {
		t.Error("recording an earlier time shortened an id's life")
	}
}

// The store prunes when it reaches its threshold, not one record later
// nor before (the cost of pruning is spread over the records), and then
// waits until it holds twice what stayed.
func TestMemoryJTIStorePruneThreshold(t *testing.T) {
	clock := &verifyClock{now: verifyT0}
	s := NewMemoryJTIStore(clock)
	held := func() (int, int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.until), s.pruneAt
	}
	for i := range 62 {
		s.Record(fmt.Sprint("old-", i), verifyT0.Add(time.Minute))
	}
	clock.Advance(time.Minute) // every old id's time is up
	s.Record("late", verifyT0.Add(time.Hour))
	if n, next := held(); n != 63 || next != 64 {
		t.Fatalf("below the threshold: %d ids held, next prune at %d; want 63 and 64", n, next)
	}
	s.Record("live-0", verifyT0.Add(time.Hour))
	if n, next := held(); n != 2 || next != 64 {
		t.Fatalf("at the threshold: %d ids held, next prune at %d; want 2 and 64", n, next)
	}
	for i := 1; i < 63; i++ {
		s.Record(fmt.Sprint("live-", i), verifyT0.Add(time.Hour))
	}
	if n, next := held(); n != 64 || next != 128 {
		t.Fatalf("64 live ids: %d held, next prune at %d; want 64 and 128", n, next)
	}
}

// FuzzVerifierCheck: no input panics, and no token is valid (or expired,
// or a mismatch, or a replay: any verdict past the signature) unless the
// test key signed exactly its header and claims.
func FuzzVerifierCheck(f *testing.F) {
	valid := verifyMint(f, verifyHeaderMap(), verifyClaimsMap(), verifySignEd(verifyPriv))
	f.Add(valid, "", "", false)
	f.Add("", string(verifyJSON(f, verifyHeaderMap())), string(verifyJSON(f, verifyClaimsMap())), true)
	f.Add("", `{"alg":"none","typ":"agent-invocation+jwt","kid":"k-2026-12"}`, string(verifyJSON(f, verifyClaimsMap())), false)
	f.Add("", `{"alg":"HS256","typ":"agent-invocation+jwt","kid":"k-2026-12"}`, string(verifyJSON(f, verifyClaimsMap())), true)
	f.Add("", `{"alg":"EdDSA","typ":"agent-invocation+jwt","kid":"k-2026-12","crit":["b64"]}`, `{"aud":["x"]}`, true)
	f.Add(valid[:len(valid)-3]+"AAA", "", "", false)
	f.Add("a.b.c", "", "", false)
	f.Add("..", "", "", false)
	f.Fuzz(func(t *testing.T, raw, header, claims string, sign bool) {
		tok := raw
		if tok == "" && (header != "" || claims != "") {
			in := verifyB64Enc([]byte(header)) + "." + verifyB64Enc([]byte(claims))
			sig := []byte("not a signature")
			if sign {
				sig = ed25519.Sign(verifyPriv, []byte(in))
			}
			tok = in + "." + verifyB64Enc(sig)
		}
		clock := &verifyClock{now: verifyT0}
		v := NewVerifier(&verifyKeys{keys: map[string]ed25519.PublicKey{verifyKid: verifyPub}}, &VerifierOptions{Clock: clock, JTIs: NewMemoryJTIStore(clock)})
		got, err := v.Check(context.Background(), tok, verifyExpect(), verifyActual)
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		if got.Verdict == VerdictInvalid && got.Claims == nil || got.Verdict == VerdictUnknownKey {
			return
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("verdict %v for a token of %d parts", got.Verdict, len(parts))
		}
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil || !ed25519.Verify(verifyPub, []byte(parts[0]+"."+parts[1]), sig) {
			t.Fatalf("verdict %v (claims %v) for a token the test key did not sign", got.Verdict, got.Claims != nil)
		}
		if got.Verdict == VerdictValid {
			c := got.Claims
			if c.Issuer != verifyIssuer || c.Audience != verifyAgent || c.RunID != "run-1" || c.MessageID != "msg-1" ||
				c.BillingMode != delivery.BillingPlatform || !c.ToolClass.Allows(delivery.ToolScoped) ||
				!verifyT0.Before(got.ExpiresAt.Add(DefaultSettings().InvocationTokenLeeway)) {
				t.Fatalf("valid verdict for claims %+v", c)
			}
		}
	})
}
