package problem

import "strconv"

// ContentType is the media type of a problem.
const ContentType = "application/problem+json"

// The problem types every service shares; the comment of each gives the
// status it comes with.
const (
	// TypeMalformedJSON: 400, a body that is not one JSON value of the
	// expected shape (or has unknown fields where they are refused, or a
	// member named twice).
	TypeMalformedJSON = "https://novaos.dev/problems/malformed-json"
	// TypeInvalidQuery: 400, a query parameter the service cannot use.
	TypeInvalidQuery = "https://novaos.dev/problems/invalid-query"
	// TypeInvalidPageToken: 400, a page token the service did not issue.
	TypeInvalidPageToken = "https://novaos.dev/problems/invalid-page-token"
	// TypeBodyTooLarge: 413, a request body larger than the service's
	// limit, or than all the request bytes the server admits at once.
	TypeBodyTooLarge = "https://novaos.dev/problems/body-too-large"
	// TypeUnsupportedMedia: 415, a body that is not application/json.
	TypeUnsupportedMedia = "https://novaos.dev/problems/unsupported-media-type"
	// TypeNotFound: 404, a path no route of the service serves.
	TypeNotFound = "https://novaos.dev/problems/not-found"
	// TypeMethodNotAllowed: 405, with Allow.
	TypeMethodNotAllowed = "https://novaos.dev/problems/method-not-allowed"
	// TypeUnauthorized: 401, with a Bearer challenge: no credentials, or
	// ones the service refused.
	TypeUnauthorized = "https://novaos.dev/problems/unauthorized"
	// TypeForbidden: 403, a caller the service knows but refuses.
	TypeForbidden = "https://novaos.dev/problems/forbidden"
	// TypeInternal: 500, an error the service did not expect; the detail
	// is logged, never sent.
	TypeInternal = "https://novaos.dev/problems/internal"
	// TypeOverloaded: 503, a connection or in-flight byte limit, with
	// Retry-After.
	TypeOverloaded = "https://novaos.dev/problems/overloaded"
	// TypeMisdirected: 421, a write whose Host is not one of the
	// server's names (the DNS-rebinding shape).
	TypeMisdirected = "https://novaos.dev/problems/misdirected-request"
	// TypeCrossOrigin: 403, a write from a browser page of another
	// origin, or a CORS preflight from an origin not listed.
	TypeCrossOrigin = "https://novaos.dev/problems/cross-origin-request"
)

// Problem is an RFC 9457 problem details object. It is also an error, so
// code that refuses a request can hand a finished answer up.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the path of the request answered.
	Instance string `json:"instance,omitempty"`
	// Errors names each field of a request body that breaks a rule.
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one broken rule of a request body: the field's name (a
// JSON path such as "recipientKeys[0].x") and the rule, in words.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p *Problem) Error() string {
	msg := "problem: " + strconv.Itoa(p.Status) + " " + p.Title
	if p.Detail != "" {
		msg += ": " + p.Detail
	}
	return msg
}

// HTTPStatus is the status the problem came with.
func (p *Problem) HTTPStatus() int { return p.Status }
