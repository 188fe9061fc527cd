package memory

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestErrorFor(t *testing.T) {
	tests := []struct {
		err  error
		want Error
	}{
		{fmt.Errorf("store: %w", ErrNotFound), Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: "no such memory"}},
		{fmt.Errorf("store: %w", ErrConflict), Error{Status: http.StatusConflict, Code: CodeConflict, Field: "version",
			Rule: "is not the memory's current version; read it again", Message: "the memory changed since it was read"}},
		{fmt.Errorf("store: %w", ErrKeyReused), Error{Status: http.StatusConflict, Code: CodeKeyReused, Field: "idempotency_key",
			Rule:    "was used within 24 hours for a different request; send a new key with a new request",
			Message: "the idempotency key was used for a different request"}},
		{&ValidationError{Field: "scope", Rule: "must be run"}, Error{Status: http.StatusUnprocessableEntity, Code: CodeInvalid,
			Field: "scope", Rule: "must be run", Message: "scope: must be run"}},
		{errors.New("disk on fire"), Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "the memory service failed"}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, *ErrorFor(tt.err)); d != "" {
			t.Errorf("ErrorFor(%v) (-want +got):\n%s", tt.err, d)
		}
	}
	same := &Error{Status: 418, Code: "teapot"}
	if got := ErrorFor(fmt.Errorf("wrapped: %w", same)); got != same {
		t.Errorf("ErrorFor of a wrapped *Error = %v, want it as it is", got)
	}
}

// TestErrorIs: each 409 matches its own sentinel only, so a caller that
// re-reads on a version conflict never does so for a reused key.
func TestErrorIs(t *testing.T) {
	sentinels := []error{ErrNotFound, ErrConflict, ErrKeyReused, ErrInvalid}
	tests := []struct {
		err  error
		want error // the one sentinel it matches, nil for none
	}{
		{ErrorFor(ErrNotFound), ErrNotFound},
		{ErrorFor(ErrConflict), ErrConflict},
		{ErrorFor(ErrKeyReused), ErrKeyReused},
		{ErrorFor(&ValidationError{Field: "f", Rule: "r"}), ErrInvalid},
		{&Error{Status: http.StatusUnprocessableEntity, Code: CodePolicy}, nil},
		{&Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable}, nil},
	}
	for _, tt := range tests {
		for _, s := range sentinels {
			if got := errors.Is(tt.err, s); got != (s == tt.want) {
				t.Errorf("errors.Is(%v, %v) = %v", tt.err, s, got)
			}
		}
	}
}

func TestErrorString(t *testing.T) {
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{Status: 409, Code: CodeKeyReused, Field: "idempotency_key", Rule: "r", Message: "m"}, "memory: 409 idempotency_key_reused: idempotency_key: r"},
		{Error{Status: 404, Code: CodeNotFound, Message: "no such memory"}, "memory: 404 not_found: no such memory"},
		{Error{Status: 422, Code: CodeInvalid, Field: "scope"}, "memory: 422 invalid_request: scope"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if tt.e.HTTPStatus() != tt.e.Status {
			t.Errorf("HTTPStatus() = %d, want %d", tt.e.HTTPStatus(), tt.e.Status)
		}
	}
}

// TestRequestDigest: the digest is the request's canonical JSON, so equal
// requests (maps in any order) agree and any difference shows.
func TestRequestDigest(t *testing.T) {
	type req struct {
		Content string         `json:"content"`
		Custom  map[string]any `json:"custom"`
	}
	a, err := RequestDigest(req{"x", map[string]any{"a": 1, "b": []any{"c", 2.5}}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RequestDigest(req{"x", map[string]any{"b": []any{"c", 2.5}, "a": 1}})
	c, _ := RequestDigest(req{"y", map[string]any{"a": 1, "b": []any{"c", 2.5}}})
	if a != b || a == c || len(a) != 64 {
		t.Errorf("digests %s, %s, %s: want the first two equal, the third different, 64 hex digits", a, b, c)
	}
	// The digest of {} is the SHA-256 of "{}".
	if d, _ := RequestDigest(struct{}{}); d != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("RequestDigest({}) = %s", d)
	}
	if _, err := RequestDigest(func() {}); err == nil {
		t.Error("RequestDigest of a func: no error")
	}
}
