package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"novaos.dev/novaos/problem"
)

// TypeInvalidRequest is the problem type of a request the service cannot
// take as it is.
const TypeInvalidRequest = "https://novaos.dev/problems/invalid-request"

// Conditions are the preconditions of a PUT on a versioned record, whose
// ETag is its version in quotes.
type Conditions struct {
	// Match is the version If-Match names: the only one the PUT may
	// replace; 0 when absent.
	Match int64
	// CreateOnly is If-None-Match: *: the PUT may only create.
	CreateOnly bool
}

// Any reports whether the request set a condition.
func (c Conditions) Any() bool { return c.Match > 0 || c.CreateOnly }

// ParseConditions reads r's If-Match and If-None-Match; a value that
// names no single version, or both headers, is a 400 problem.
func ParseConditions(r *http.Request) (Conditions, error) {
	var c Conditions
	bad := func(detail string) error {
		return &problem.Problem{Type: TypeInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request", Detail: detail}
	}
	if v := r.Header.Get("If-Match"); v != "" {
		n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(strings.TrimSpace(v), "W/"), `"`), 10, 64)
		if err != nil || n <= 0 {
			return c, bad(`If-Match must name one version, as its ETag "<version>"`)
		}
		c.Match = n
	}
	if v := r.Header.Get("If-None-Match"); v != "" {
		if strings.TrimSpace(v) != "*" {
			return c, bad("If-None-Match must be *: create only")
		}
		c.CreateOnly = true
	}
	if c.Match > 0 && c.CreateOnly {
		return c, bad("If-Match and If-None-Match exclude each other")
	}
	return c, nil
}

// ETag is the ETag of a record's version.
func ETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }
