package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ProblemContentType is the media type of an RFC 9457 problem.
const ProblemContentType = "application/problem+json"

// Problem types of the answers the Guard gives instead of a handler's.
const (
	// ProblemOverloaded: 503, a connection or in-flight byte limit.
	ProblemOverloaded = "https://novaos.dev/problems/overloaded"
	// ProblemBodyTooLarge: 413, a request body larger than the whole
	// in-flight budget, which no retry can fit, or than the limit of the
	// service's own (DecodeJSON).
	ProblemBodyTooLarge = "https://novaos.dev/problems/body-too-large"
	// ProblemMisdirected: 421, a write whose Host is not one of the
	// server's names (the DNS-rebinding shape).
	ProblemMisdirected = "https://novaos.dev/problems/misdirected-request"
	// ProblemCrossOrigin: 403, a write from a browser page of another
	// origin, or a CORS preflight from an origin not listed.
	ProblemCrossOrigin = "https://novaos.dev/problems/cross-origin-request"
)

// Problem types every REST service answers with for the plumbing it gets
// from API. Services add their own for their domain's errors.
const (
	// ProblemMalformedJSON: 400, a body that is not one JSON value of the
	// expected shape (or has unknown fields where they are refused).
	ProblemMalformedJSON = "https://novaos.dev/problems/malformed-json"
	// ProblemInvalidQuery: 400, a query parameter the service cannot use.
	ProblemInvalidQuery = "https://novaos.dev/problems/invalid-query"
	// ProblemInvalidPageToken: 400, a page token the service did not issue.
	ProblemInvalidPageToken = "https://novaos.dev/problems/invalid-page-token"
	// ProblemUnsupportedMedia: 415, a body that is not application/json.
	ProblemUnsupportedMedia = "https://novaos.dev/problems/unsupported-media-type"
	// ProblemNotFound: 404, a path no route of the service serves.
	ProblemNotFound = "https://novaos.dev/problems/not-found"
	// ProblemMethodNotAllowed: 405, with Allow.
	ProblemMethodNotAllowed = "https://novaos.dev/problems/method-not-allowed"
	// ProblemUnauthorized: 401, with a Bearer challenge: no credentials, or
	// ones the Authenticator refused.
	ProblemUnauthorized = "https://novaos.dev/problems/unauthorized"
	// ProblemForbidden: 403, a caller the Authenticator knows but refuses.
	ProblemForbidden = "https://novaos.dev/problems/forbidden"
	// ProblemInternal: 500, an error the service did not expect; the
	// detail is logged, never sent.
	ProblemInternal = "https://novaos.dev/problems/internal"
)

// Problem is an RFC 9457 problem detail. It is also an error, so the
// plumbing (DecodeJSON, an Authenticator) can hand a finished answer to
// API.Fail.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request's path; WriteProblem fills it in.
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
	msg := "httpapi: " + strconv.Itoa(p.Status) + " " + p.Title
	if p.Detail != "" {
		msg += ": " + p.Detail
	}
	return msg
}

// WriteProblem answers r with p as application/problem+json, p.Instance
// set to r's path when empty.
func WriteProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Every field is a string, an int or a list of strings.
		panic("httpapi: problem does not encode: " + err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", ProblemContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteJSON answers with v as application/json and status. v is encoded
// before anything is written, so a value that does not encode gets a 500
// problem instead of half a body.
func WriteJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteProblem(w, r, &Problem{Type: ProblemInternal, Title: "Internal Server Error", Status: http.StatusInternalServerError})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// RPCCode is the JSON-RPC error code of a refusal with HTTP status s:
// -31000 - s, the convention a2asrv.CodeUnauthenticated (-31401) follows,
// so -31503 is overload, -31421 a misdirected request and -31403 a
// cross-origin write.
func RPCCode(status int) int { return -31000 - status }

// refusal is one of the Guard's own answers, encoded once in both shapes.
type refusal struct {
	status     int
	problem    []byte // application/problem+json
	rpc        []byte // a JSON-RPC 2.0 error response with id null
	retryAfter bool
}

func newRefusal(p Problem, retryAfter bool) *refusal {
	pb, err := json.Marshal(p)
	if err != nil {
		panic("httpapi: problem does not encode: " + err.Error())
	}
	type rpcError struct {
		Code    int     `json:"code"`
		Message string  `json:"message"`
		Data    Problem `json:"data"`
	}
	rb, err := json.Marshal(struct {
		JSONRPC string   `json:"jsonrpc"`
		ID      *int     `json:"id"`
		Error   rpcError `json:"error"`
	}{"2.0", nil, rpcError{RPCCode(p.Status), p.Title + ": " + p.Detail, p}})
	if err != nil {
		panic("httpapi: refusal does not encode: " + err.Error())
	}
	return &refusal{status: p.Status, problem: append(pb, '\n'), rpc: append(rb, '\n'), retryAfter: retryAfter}
}

func (f *refusal) write(w http.ResponseWriter, rpc bool) {
	h := w.Header()
	body, ct := f.problem, ProblemContentType
	if rpc {
		body, ct = f.rpc, "application/json"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Encoding")
	if f.retryAfter {
		h.Set("Retry-After", RetryAfter)
	}
	w.WriteHeader(f.status)
	_, _ = w.Write(body)
}

var (
	refuseConns = newRefusal(Problem{Type: ProblemOverloaded, Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the server is at its connection limit; retry after the number of seconds in Retry-After"}, true)
	refuseBytes = newRefusal(Problem{Type: ProblemOverloaded, Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the server holds as many request bytes as it admits at once; retry after the number of seconds in Retry-After"}, true)
	refuseTooLarge = newRefusal(Problem{Type: ProblemBodyTooLarge, Title: "Content Too Large", Status: http.StatusRequestEntityTooLarge,
		Detail: "the request body is larger than all the request bytes the server admits at once"}, false)
	refuseHost = newRefusal(Problem{Type: ProblemMisdirected, Title: "Misdirected Request", Status: http.StatusMisdirectedRequest,
		Detail: "the Host header does not name this server; it accepts writes only for localhost, 127.0.0.1, [::1], its listen address and its configured public URL and allowed hosts"}, false)
	refuseOrigin = newRefusal(Problem{Type: ProblemCrossOrigin, Title: "Forbidden", Status: http.StatusForbidden,
		Detail: "cross-origin write refused: the Origin is neither this server's nor one of its configured CORS origins"}, false)
	refusePreflight = newRefusal(Problem{Type: ProblemCrossOrigin, Title: "Forbidden", Status: http.StatusForbidden,
		Detail: "CORS preflight refused: the Origin is not one of this server's configured CORS origins"}, false)
)
