package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// maxProblemBytes bounds what ErrorOf reads of a refusal.
const maxProblemBytes = 64 << 10

// What a Refusal keeps of the server's words, in bytes: an error ends up
// in logs.
const (
	maxTitle   = 200
	maxDetail  = 1000
	maxMessage = 200
)

// Refusal is an error answer (4xx, 5xx) as a client reads it: Status, and
// when the body was a problem (application/problem+json or
// application/json), its members. Type is "about:blank" and Title the
// status text when the body said none; Title, Detail and each field
// error's Message are cut short and have the request's token replaced by
// secret.Redacted, for a server that echoes its Authorization.
type Refusal struct {
	problem.Problem
	// After is the server's Retry-After on a 429, 502, 503 or 504, 0
	// when none.
	After time.Duration
}

// RetryAfter is After, so a resilience.Policy waits as the server asked.
func (r *Refusal) RetryAfter() time.Duration { return r.After }

// ErrorOf reads an answer that is not one the call asked for: the
// Refused error of a 4xx or 5xx, one wrapping Malformed for anything
// else. tok is the token the request carried (NewRequest's).
func (c *Client) ErrorOf(resp *http.Response, tok secret.Value) error {
	if resp.StatusCode < 400 {
		return fmt.Errorf("%w: unexpected status %d", c.malformed(), resp.StatusCode)
	}
	r := readRefusal(resp, tok)
	if c.Refused == nil {
		return r
	}
	return c.Refused(r)
}

func readRefusal(resp *http.Response, tok secret.Value) *Refusal {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxProblemBytes))
	r := &Refusal{}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == problem.ContentType || mt == "application/json" {
		var p problem.Problem
		if json.Unmarshal(data, &p) == nil {
			r.Type, r.Title, r.Detail, r.Errors = p.Type, p.Title, p.Detail, p.Errors
		}
	}
	r.Status = resp.StatusCode
	if r.Type == "" {
		r.Type = "about:blank"
	}
	if r.Title == "" {
		r.Title = http.StatusText(resp.StatusCode)
	}
	r.Title = redact(clip(r.Title, maxTitle), tok)
	r.Detail = redact(clip(r.Detail, maxDetail), tok)
	for i := range r.Errors {
		r.Errors[i].Message = redact(clip(r.Errors[i].Message, maxMessage), tok)
	}
	if resilience.RetryableStatus(resp.StatusCode) {
		r.After = resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return r
}

// redact replaces the token in s. A token shorter than 4 bytes is left
// alone: replacing it would blank ordinary words.
func redact(s string, tok secret.Value) string {
	if t := tok.Reveal(); len(t) >= 4 && strings.Contains(s, t) {
		s = strings.ReplaceAll(s, t, secret.Redacted)
	}
	return s
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
