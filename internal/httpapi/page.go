package httpapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"novaos.dev/novaos/problem"
)

// ErrBadPageToken is wrapped by ParsePageToken's errors: a token this
// service did not issue.
var ErrBadPageToken = errors.New("httpapi: invalid page token")

// maxPageKey bounds what a token may carry; keys are names and ids, far
// shorter, and the bound keeps a hostile token cheap.
const maxPageKey = 1024

var pageEnc = base64.RawURLEncoding

// PageToken is the opaque token of a listing's position after key (the
// sort key of a page's last record).
func PageToken(key string) string { return pageEnc.EncodeToString([]byte(key)) }

// ParsePageToken returns the key a PageToken carries. valid says which
// keys the service can have issued (nil: any); a token of any other key,
// or one that is not a PageToken, is an error wrapping ErrBadPageToken.
func ParsePageToken(tok string, valid func(key string) bool) (string, error) {
	if len(tok) > pageEnc.EncodedLen(maxPageKey) {
		return "", fmt.Errorf("page token of %d bytes: %w", len(tok), ErrBadPageToken)
	}
	b, err := pageEnc.DecodeString(tok)
	// The decoder skips line breaks: only the spelling PageToken gives is
	// accepted, so each position has exactly one token.
	if err != nil || pageEnc.EncodeToString(b) != tok || (valid != nil && !valid(string(b))) {
		return "", fmt.Errorf("page token %q: %w", tok, ErrBadPageToken)
	}
	return string(b), nil
}

// Paging is a listing's page-size rule.
type Paging struct {
	Default, Max int
}

// Clamp returns the page size for a requested n: Default for zero, at
// most Max. A negative n is the caller's to refuse.
func (p Paging) Clamp(n int) int {
	switch {
	case n <= 0:
		return p.Default
	case n > p.Max:
		return p.Max
	}
	return n
}

// PageSize reads the "pageSize" query parameter: 0 when absent, a
// BadQuery problem when it is not a non-negative integer.
func PageSize(v url.Values) (int, error) {
	s := v.Get("pageSize")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, BadQuery("pageSize must be a non-negative integer")
	}
	return n, nil
}

// BadQuery is the 400 invalid-query problem for a query parameter the
// service cannot use; detail says which and why.
func BadQuery(detail string) *problem.Problem {
	return &problem.Problem{Type: problem.TypeInvalidQuery, Status: http.StatusBadRequest, Title: "Invalid Query", Detail: detail}
}
