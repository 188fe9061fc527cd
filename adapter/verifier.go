package adapter

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/strictjson"
)

// Verdict is the outcome of checking an invocation token. The zero
// Verdict is VerdictInvalid, so a TokenCheck nobody filled in never
// reads as valid.
type Verdict int

const (
	// VerdictInvalid: forged, malformed, for another agent, run, thread
	// or object, from a subject the allow list does not hold, or issued
	// in the future. Refuse the event.
	VerdictInvalid Verdict = iota
	// VerdictValid: the token may start or resume the run.
	VerdictValid
	// VerdictExpired: a genuine token whose time is up, and nothing else
	// wrong with it; accept the event and renew the token before a start.
	VerdictExpired
	// VerdictUnknownKey: no published key has the token's key id, even
	// after a reload; leave the event unsettled and try again later.
	VerdictUnknownKey
	// VerdictBillingModeMismatch: the agent would bill otherwise than the
	// token grants (an unknown mode never matches). Refuse the event.
	VerdictBillingModeMismatch
	// VerdictToolClassMismatch: the agent's tools reach further than the
	// token grants. Refuse the event.
	VerdictToolClassMismatch
	// VerdictReplay: the token's id was seen before and has not expired.
	VerdictReplay
)

var verifyVerdictNames = [...]string{
	VerdictInvalid:             "invalid",
	VerdictValid:               "valid",
	VerdictExpired:             "expired",
	VerdictUnknownKey:          "unknown_key",
	VerdictBillingModeMismatch: "billing_mode_mismatch",
	VerdictToolClassMismatch:   "tool_class_mismatch",
	VerdictReplay:              "replay",
}

// String is the verdict's snake_case name.
func (v Verdict) String() string {
	if v >= 0 && int(v) < len(verifyVerdictNames) {
		return verifyVerdictNames[v]
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// FinishReason is the reason an adapter fails a run with when it refuses
// the run's start for this verdict, and "" for a verdict that refuses
// nothing (valid, expired) or leaves the event for later (unknown key,
// replay).
func (v Verdict) FinishReason() string {
	switch v {
	case VerdictInvalid:
		return delivery.ReasonInvalidToken
	case VerdictBillingModeMismatch:
		return delivery.ReasonBillingModeMismatch
	case VerdictToolClassMismatch:
		return delivery.ReasonToolClassMismatch
	}
	return ""
}

// ErrUnknownKey is what a KeySource returns, wrapped or not, for a key id
// it does not know.
var ErrUnknownKey = errors.New("adapter: no invocation-token key with that key id")

// KeySource hands out the platform's token-signing keys by key id.
// *JWKSCache is one.
type KeySource interface {
	// Key returns the Ed25519 key with key id kid, or an error wrapping
	// ErrUnknownKey when there is none; any other error is a failure to
	// find out.
	Key(ctx context.Context, kid string) (ed25519.PublicKey, error)
}

// AllowList says who may trigger the agent: the platform's list of
// triggerers, which an implementation reloads when it learns of a newer
// permission version (an access.changed event, or a token that names a
// higher one than it holds).
type AllowList interface {
	// Allowed reports whether sub may trigger the agent, reloading first
	// when permissionVersion is newer than the list it holds.
	Allowed(ctx context.Context, sub string, permissionVersion int64) (bool, error)
}

// JTIStore remembers the ids of tokens already accepted, each until its
// token's expiry plus the leeway; the adapter's inbox records the id
// with the event it accepted.
type JTIStore interface {
	// Seen reports whether jti was recorded and has not yet expired.
	Seen(ctx context.Context, jti string) (bool, error)
}

// Expectation is what a delivered event says its token must name. Use
// ExpectationFor to take it from an event.
type Expectation struct {
	// EventType is the token-bearing event type the token came with; it
	// decides which triggering object the token must name.
	EventType string
	// AgentID is the token's audience; Issuer its issuer.
	AgentID, Issuer string
	// RunID and ThreadID are the run and thread of the event; empty when
	// the event has none (an autocomplete request has no run).
	RunID, ThreadID string
	// TriggerKind says, for agent.invocation, which of MessageID,
	// InteractionID and CommandID is the triggering object.
	TriggerKind   delivery.TriggerKind
	MessageID     string
	InteractionID string
	CommandID     string
}

// Actual is what the agent will really use for the run, which the token
// must grant.
type Actual struct {
	BillingMode delivery.BillingMode
	ToolClass   delivery.ToolClass
}

// TokenCheck is the outcome of a check. It never holds the token. Claims,
// JTI, IssuedAt and ExpiresAt are set only when the token's signature
// was verified (so for every verdict but invalid before the signature
// and unknown key).
type TokenCheck struct {
	Verdict   Verdict
	Claims    *delivery.Claims
	JTI       string
	IssuedAt  time.Time
	ExpiresAt time.Time
}

// DefaultMaxTokenBytes bounds an invocation token when
// VerifierOptions.MaxTokenBytes is zero.
const DefaultMaxTokenBytes = 8 << 10

// VerifierOptions configure a Verifier; nil means the defaults.
type VerifierOptions struct {
	// Clock tells the time tokens are checked at (default SystemClock).
	Clock Clock
	// Settings supplies InvocationTokenLeeway (default DefaultSettings).
	Settings *Settings
	// AllowList, when set, must hold every token's subject.
	AllowList AllowList
	// JTIs, when set, turns a token id seen before into VerdictReplay.
	JTIs JTIStore
	// MaxTokenBytes is the longest token read; a longer one is invalid
	// without being parsed (default DefaultMaxTokenBytes).
	MaxTokenBytes int
}

// Verifier checks invocation tokens as the agent receives them, in a
// fixed order, so that the platform and every adapter reach the same
// verdict for the same token: the header (exactly EdDSA, exactly
// delivery.TokenType, no crit, a key id), the key (one reload at most),
// the signature, issuer and audience, the run, thread and triggering
// object, the allow list — each failure invalid; then the billing mode,
// then the tool class, then the times (issued in the future is invalid,
// past expiry plus leeway is expired), then replay.
type Verifier struct {
	keys      KeySource
	clock     Clock
	leeway    time.Duration
	allow     AllowList
	jtis      JTIStore
	maxTokens int
}

// NewVerifier returns a Verifier that takes its keys from keys.
func NewVerifier(keys KeySource, opts *VerifierOptions) *Verifier {
	var o VerifierOptions
	if opts != nil {
		o = *opts
	}
	v := &Verifier{keys: keys, clock: o.Clock, allow: o.AllowList, jtis: o.JTIs, maxTokens: o.MaxTokenBytes}
	if v.clock == nil {
		v.clock = SystemClock{}
	}
	s := DefaultSettings()
	if o.Settings != nil {
		s = *o.Settings
	}
	v.leeway = max(s.InvocationTokenLeeway, 0)
	if v.maxTokens <= 0 {
		v.maxTokens = DefaultMaxTokenBytes
	}
	return v
}

// verifyStrict refuses a header or claims set that names a member twice,
// also in another case: a case-insensitive reader would take one of
// them, an exact reader the other.
var verifyStrict = &strictjson.Options{Object: true, FoldCase: true, MaxDepth: 16}

// verifyClaimNames are the claim names delivery.Claims reads; a member
// that folds to one of them without being it is refused, because
// encoding/json would take it for the claim.
var verifyClaimNames = func() map[string]string {
	names := map[string]string{}
	t := reflect.TypeFor[delivery.Claims]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[strings.ToLower(name)] = name
		}
	}
	return names
}()

var verifyB64 = base64.RawURLEncoding.Strict()

// Check checks token against want and actual. The error is not a
// verdict: it says the check could not be made (the keys could not be
// fetched, the allow list or the id store failed, ctx ended), and the
// caller tries again later. A token-bearing event without a token (an
// empty token) is invalid.
func (v *Verifier) Check(ctx context.Context, token string, want Expectation, actual Actual) (TokenCheck, error) {
	invalid := TokenCheck{Verdict: VerdictInvalid}

	// Points 1 and 2: the header.
	if token == "" || len(token) > v.maxTokens {
		return invalid, nil
	}
	h64, rest, ok := strings.Cut(token, ".")
	if !ok {
		return invalid, nil
	}
	c64, s64, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(s64, ".") || h64 == "" || c64 == "" || s64 == "" {
		return invalid, nil
	}
	kid, ok := verifyHeader(h64)
	if !ok {
		return invalid, nil
	}

	// Point 3: the key, after at most one reload (the source's business).
	key, err := v.keys.Key(ctx, kid)
	if errors.Is(err, ErrUnknownKey) {
		return TokenCheck{Verdict: VerdictUnknownKey}, nil
	}
	if err != nil {
		return TokenCheck{}, fmt.Errorf("adapter: check invocation token: %w", err)
	}

	// Point 4: signature, then issuer and audience byte for byte.
	sig, err := verifyB64.DecodeString(s64)
	if err != nil || len(key) != ed25519.PublicKeySize || !ed25519.Verify(key, []byte(token[:len(h64)+1+len(c64)]), sig) {
		return invalid, nil
	}
	claims, ok := verifyClaims(c64)
	if !ok {
		return invalid, nil
	}
	check := TokenCheck{
		Verdict:   VerdictInvalid,
		Claims:    claims,
		JTI:       claims.ID,
		IssuedAt:  time.Unix(claims.IssuedAt, 0),
		ExpiresAt: time.Unix(claims.ExpiresAt, 0),
	}
	if claims.Issuer != want.Issuer || want.Issuer == "" || claims.Audience != want.AgentID || want.AgentID == "" {
		return check, nil
	}

	// Point 6: the run, the thread and the triggering object.
	if !verifyObject(claims, want) {
		return check, nil
	}

	// Point 9: the allow list.
	if v.allow != nil {
		ok, err := v.allow.Allowed(ctx, claims.Subject, claims.PermissionVersion)
		if err != nil {
			return TokenCheck{}, fmt.Errorf("adapter: check invocation token: allow list: %w", err)
		}
		if !ok {
			return check, nil
		}
	}

	// Point 8: billing mode; unknown never matches.
	if (actual.BillingMode != delivery.BillingPlatform && actual.BillingMode != delivery.BillingAgent) ||
		claims.BillingMode != actual.BillingMode {
		check.Verdict = VerdictBillingModeMismatch
		return check, nil
	}
	// Point 10: tool class, the actual one not above the claim.
	if !claims.ToolClass.Allows(actual.ToolClass) {
		check.Verdict = VerdictToolClassMismatch
		return check, nil
	}

	// Point 5: times.
	now := v.clock.Now()
	if check.IssuedAt.After(now.Add(v.leeway)) {
		return check, nil
	}
	if !now.Before(check.ExpiresAt.Add(v.leeway)) {
		check.Verdict = VerdictExpired
		return check, nil
	}

	// Point 7: replay.
	if v.jtis != nil {
		seen, err := v.jtis.Seen(ctx, claims.ID)
		if err != nil {
			return TokenCheck{}, fmt.Errorf("adapter: check invocation token: token ids: %w", err)
		}
		if seen {
			check.Verdict = VerdictReplay
			return check, nil
		}
	}
	check.Verdict = VerdictValid
	return check, nil
}

// verifyHeader decodes a JOSE header and returns its key id when it is
// exactly an invocation token's: alg and typ exact strings, no crit, a
// non-empty kid.
func verifyHeader(h64 string) (kid string, ok bool) {
	raw, err := verifyB64.DecodeString(h64)
	if err != nil || strictjson.Check(raw, verifyStrict) != nil {
		return "", false
	}
	var h map[string]json.RawMessage
	if json.Unmarshal(raw, &h) != nil {
		return "", false
	}
	if _, crit := h["crit"]; crit {
		return "", false
	}
	var alg, typ string
	if !verifyString(h["alg"], &alg) || alg != delivery.TokenAlgorithm ||
		!verifyString(h["typ"], &typ) || typ != delivery.TokenType ||
		!verifyString(h["kid"], &kid) || kid == "" {
		return "", false
	}
	return kid, true
}

// verifyString decodes a JSON string, and nothing else (not null).
func verifyString(raw json.RawMessage, s *string) bool {
	return len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, s) == nil
}

// verifyClaims decodes a token's claims: an object naming no member
// twice and no claim in another case, the audience one string, the times
// whole seconds with expiry after issue, and an id.
func verifyClaims(c64 string) (*delivery.Claims, bool) {
	raw, err := verifyB64.DecodeString(c64)
	if err != nil || strictjson.Check(raw, verifyStrict) != nil {
		return nil, false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil {
		return nil, false
	}
	for name := range members {
		if exact, known := verifyClaimNames[strings.ToLower(name)]; known && exact != name {
			return nil, false
		}
	}
	// The audience is one string: an array is refused, not searched.
	for _, name := range []string{"iss", "aud", "jti"} {
		if m, ok := members[name]; !ok || !bytes.HasPrefix(m, []byte(`"`)) {
			return nil, false
		}
	}
	var c delivery.Claims
	if json.Unmarshal(raw, &c) != nil {
		return nil, false
	}
	if c.ID == "" || c.IssuedAt <= 0 || c.ExpiresAt <= c.IssuedAt {
		return nil, false
	}
	return &c, true
}

// verifyObject compares the run, the thread and the triggering object of
// the claims with the event's. The token names exactly one triggering
// object, the event's; an event with no counterpart for it (an empty id)
// fails, so that a token is never taken for an object nobody can see.
func verifyObject(c *delivery.Claims, want Expectation) bool {
	var kind delivery.TriggerKind
	switch want.EventType {
	case delivery.EventInvocation:
		kind = want.TriggerKind
	case delivery.EventFollowup:
		kind = delivery.TriggerMessage
	case delivery.EventInteractionCreated:
		kind = delivery.TriggerInteraction
	case delivery.EventCommandInvoked:
		kind = delivery.TriggerCommand
	case delivery.EventAutocompleteRequested:
		// No run; the thread is not named by the event, so not compared.
		return c.RunID == "" && verifyOnly(c, delivery.TriggerCommand, want.CommandID)
	default:
		return false
	}
	if c.RunID != want.RunID || c.ThreadID != want.ThreadID {
		return false
	}
	if want.EventType != delivery.EventCommandInvoked && want.RunID == "" {
		return false
	}
	switch kind {
	case delivery.TriggerMessage:
		return verifyOnly(c, kind, want.MessageID)
	case delivery.TriggerInteraction:
		return verifyOnly(c, kind, want.InteractionID)
	case delivery.TriggerCommand:
		return verifyOnly(c, kind, want.CommandID)
	}
	return false
}

// verifyOnly reports whether the claims name id, non-empty, as their one
// triggering object of kind, with a trigger kind of kind or none.
func verifyOnly(c *delivery.Claims, kind delivery.TriggerKind, id string) bool {
	if id == "" || (c.TriggerKind != "" && c.TriggerKind != kind) {
		return false
	}
	objects := map[delivery.TriggerKind]string{
		delivery.TriggerMessage:     c.MessageID,
		delivery.TriggerInteraction: c.InteractionID,
		delivery.TriggerCommand:     c.CommandID,
	}
	for k, got := range objects {
		if k == kind && got != id || k != kind && got != "" {
			return false
		}
	}
	return true
}

// ExpectationFor reads what an event's token must name from the event's
// payload. It fails for an event type that bears no token and for a
// payload that is not the type's (malformed, or naming a member twice);
// the caller refuses such an event as invalid.
func ExpectationFor(ev delivery.Event, agentID, issuer string) (Expectation, error) {
	want := Expectation{EventType: ev.Type, AgentID: agentID, Issuer: issuer}
	decode := func(v any) error {
		if err := strictjson.Check(ev.Payload, &strictjson.Options{Object: true, FoldCase: true}); err != nil {
			return fmt.Errorf("adapter: %s payload of event %s: %w", ev.Type, ev.ID, err)
		}
		if err := json.Unmarshal(ev.Payload, v); err != nil {
			return fmt.Errorf("adapter: %s payload of event %s: %w", ev.Type, ev.ID, err)
		}
		return nil
	}
	switch ev.Type {
	case delivery.EventInvocation:
		var p delivery.InvocationPayload
		if err := decode(&p); err != nil {
			return Expectation{}, err
		}
		want.RunID, want.ThreadID, want.TriggerKind = p.RunID, p.ThreadID, p.TriggerKind
		want.MessageID, want.InteractionID, want.CommandID = p.MessageID, p.InteractionID, p.CommandID
	case delivery.EventFollowup:
		var p delivery.FollowupPayload
		if err := decode(&p); err != nil {
			return Expectation{}, err
		}
		want.RunID, want.ThreadID, want.MessageID = p.RunID, p.ThreadID, p.MessageID
	case delivery.EventInteractionCreated:
		var p delivery.InteractionCreatedPayload
		if err := decode(&p); err != nil {
			return Expectation{}, err
		}
		want.RunID, want.ThreadID, want.InteractionID = p.Interaction.RunID, p.Interaction.ThreadID, p.Interaction.ID
	case delivery.EventCommandInvoked:
		var p delivery.CommandInvokedPayload
		if err := decode(&p); err != nil {
			return Expectation{}, err
		}
		want.RunID, want.ThreadID, want.CommandID = p.RunID, p.ThreadID, p.CommandID
	case delivery.EventAutocompleteRequested:
		var p delivery.AutocompleteRequestedPayload
		if err := decode(&p); err != nil {
			return Expectation{}, err
		}
		want.CommandID = p.CommandID
	default:
		return Expectation{}, fmt.Errorf("adapter: event type %q bears no invocation token", ev.Type)
	}
	return want, nil
}

// MemoryJTIStore is a JTIStore in memory, for tests and for adapters
// that keep no inbox on disk. The zero value is not usable: use
// NewMemoryJTIStore.
type MemoryJTIStore struct {
	clock Clock
	mu    sync.Mutex
	until map[string]time.Time
	// pruneAt is the size at which Record next drops expired ids, so
	// that pruning costs amortized constant time per id.
	pruneAt int
}

var _ JTIStore = (*MemoryJTIStore)(nil)

// NewMemoryJTIStore returns an empty store whose ids expire by clock
// (nil means SystemClock).
func NewMemoryJTIStore(clock Clock) *MemoryJTIStore {
	if clock == nil {
		clock = SystemClock{}
	}
	return &MemoryJTIStore{clock: clock, until: map[string]time.Time{}, pruneAt: 64}
}

// Record remembers jti until the given time, the token's expiry plus
// the leeway; recording it again keeps the later time.
func (s *MemoryJTIStore) Record(jti string, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if have, ok := s.until[jti]; !ok || until.After(have) {
		s.until[jti] = until
	}
	if len(s.until) >= s.pruneAt {
		now := s.clock.Now()
		for id, t := range s.until {
			if !now.Before(t) {
				delete(s.until, id)
			}
		}
		s.pruneAt = max(64, 2*len(s.until))
	}
}

// Seen reports whether jti was recorded and its time has not passed.
func (s *MemoryJTIStore) Seen(_ context.Context, jti string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.until[jti]
	return ok && s.clock.Now().Before(t), nil
}
