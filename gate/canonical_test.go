package gate

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// The error names the problem and where it is, and wraps a
// *CanonicalError callers can branch on.
func TestCanonicalizeError(t *testing.T) {
	_, err := Canonicalize([]byte(`{"amount":1,"amount":2}`))
	var ce *CanonicalError
	if !errors.As(err, &ce) || ce.Problem != "duplicate" || ce.Offset != 0 {
		t.Fatalf("err = %#v", err)
	}
	if want := `gate: canonicalize: duplicate at byte 0: object has member "amount" twice`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	long := `{"` + strings.Repeat("é", 100) + `":1,"` + strings.Repeat("é", 100) + `":1}`
	if _, err := Canonicalize([]byte(long)); err == nil || len(err.Error()) > 120 || !utf8.ValidString(err.Error()) {
		t.Fatalf("long duplicate name: %v", err)
	}
}

// A megabyte of each shape canonicalizes in time linear in its size, and
// correctly. A quadratic pass takes many minutes here and a linear one well
// under a second, so the minute allowed fails only the quadratic one, on
// however busy a machine.
