package delivery

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/jwk"
	"novaos.dev/novaos/strictjson"
)

// maxTokenBytes bounds an invocation token the service reads: its claims
// are a few hundred bytes.
const maxTokenBytes = 8 << 10

// mint signs a fresh token of grant: a new jti, issued now, expiring
// after Options.TokenTTL.
func (s *Service) mint(ctx context.Context, grant delivery.Claims, now time.Time) (string, delivery.Claims, error) {
	c := grant
	c.ID = a2a.NewID()
	c.IssuedAt = now.Unix()
	c.ExpiresAt = now.Add(s.o.TokenTTL).Unix()
	body, err := json.Marshal(c)
	if err != nil {
		return "", c, fmt.Errorf("delivery: encode token claims: %w", err)
	}
	tok, err := s.keys.SignJWT(ctx, delivery.TokenType, body)
	if err != nil {
		return "", c, fmt.Errorf("delivery: sign an invocation token: %w", err)
	}
	return tok, c, nil
}

// errTokenInvalid is every reason a token is not one of ours for the
// agent and run: the caller learns no more than "invalid".
var errTokenInvalid = errors.New("delivery: invalid invocation token")

// tokenHeader is an invocation token's JOSE header.
type tokenHeader struct {
	Alg  string          `json:"alg"`
	Typ  string          `json:"typ"`
	Kid  string          `json:"kid"`
	Crit json.RawMessage `json:"crit"`
}

// verifyToken checks that tok is an invocation token this service signed
// for agentID and runID: header (alg EdDSA, typ, a kid, no crit), a
// published key, the signature, iss, aud and run_id. Times are not
// checked here: an expired token still names its run (expired says
// which, for the calls that care).
func (s *Service) verifyToken(ctx context.Context, tok, agentID, runID string) (delivery.Claims, error) {
	var c delivery.Claims
	if tok == "" || len(tok) > maxTokenBytes {
		return c, errTokenInvalid
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return c, errTokenInvalid
	}
	var h tokenHeader
	if err := decodeSegment(parts[0], &h); err != nil {
		return c, errTokenInvalid
	}
	if h.Alg != delivery.TokenAlgorithm || h.Typ != delivery.TokenType || h.Kid == "" || h.Crit != nil {
		return c, errTokenInvalid
	}
	key, err := s.keys.Key(ctx, h.Kid)
	if err != nil || key.Algorithm() != jwk.EdDSA {
		return c, errTokenInvalid
	}
	pub, ok := key.PublicKey().(ed25519.PublicKey)
	if !ok {
		return c, errTokenInvalid
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), sig) {
		return c, errTokenInvalid
	}
	if err := decodeSegment(parts[1], &c); err != nil {
		return delivery.Claims{}, errTokenInvalid
	}
	if c.Issuer != s.issuer || c.Audience != agentID || c.RunID != runID || c.ID == "" {
		return delivery.Claims{}, errTokenInvalid
	}
	return c, nil
}

// decodeSegment reads one base64url JSON object of a compact JWS,
// refusing a member named twice.
func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return strictjson.Decode(b, v, &strictjson.Options{Object: true, FoldCase: true, MaxDepth: 4}, true)
}

// expired reports whether c has expired at now, with the leeway.
func (s *Service) expired(c delivery.Claims, now time.Time) bool {
	return !now.Before(time.Unix(c.ExpiresAt, 0).Add(s.o.ClockLeeway))
}

// serveJWKS publishes the invocation-token keys with Cache-Control
// max-age Options.JWKSMaxAge.
func (s *Service) serveJWKS(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(jwk.NewKeySet(s.keys.PublicKeys()...)); err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/jwk-set+json")
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(s.o.JWKSMaxAge/time.Second)))
	_, _ = w.Write(buf.Bytes())
}
