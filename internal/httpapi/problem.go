package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"novaos.dev/novaos/problem"
)

// WriteProblem answers r with p as application/problem+json, p.Instance
// set to r's path when empty.
func WriteProblem(w http.ResponseWriter, r *http.Request, p *problem.Problem) {
	if p.Instance == "" {
		p.Instance = r.URL.Path
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Every field is a string, an int or a list of strings.
		panic("httpapi: problem does not encode: " + err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", problem.ContentType)
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
		WriteProblem(w, r, &problem.Problem{Type: problem.TypeInternal, Title: "Internal Server Error", Status: http.StatusInternalServerError})
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

func newRefusal(p problem.Problem, retryAfter bool) *refusal {
	pb, err := json.Marshal(p)
	if err != nil {
		panic("httpapi: problem does not encode: " + err.Error())
	}
	type rpcError struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    problem.Problem `json:"data"`
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
	body, ct := f.problem, problem.ContentType
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
	refuseConns = newRefusal(problem.Problem{Type: problem.TypeOverloaded, Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the server is at its connection limit; retry after the number of seconds in Retry-After"}, true)
	refuseBytes = newRefusal(problem.Problem{Type: problem.TypeOverloaded, Title: "Service Unavailable", Status: http.StatusServiceUnavailable,
		Detail: "the server holds as many request bytes as it admits at once; retry after the number of seconds in Retry-After"}, true)
	refuseTooLarge = newRefusal(problem.Problem{Type: problem.TypeBodyTooLarge, Title: "Content Too Large", Status: http.StatusRequestEntityTooLarge,
		Detail: "the request body is larger than all the request bytes the server admits at once"}, false)
	refuseHost = newRefusal(problem.Problem{Type: problem.TypeMisdirected, Title: "Misdirected Request", Status: http.StatusMisdirectedRequest,
		Detail: "the Host header does not name this server; it accepts writes only for localhost, 127.0.0.1, [::1], its listen address and its configured public URL and allowed hosts"}, false)
	refuseOrigin = newRefusal(problem.Problem{Type: problem.TypeCrossOrigin, Title: "Forbidden", Status: http.StatusForbidden,
		Detail: "cross-origin write refused: the Origin is neither this server's nor one of its configured CORS origins"}, false)
	refusePreflight = newRefusal(problem.Problem{Type: problem.TypeCrossOrigin, Title: "Forbidden", Status: http.StatusForbidden,
		Detail: "CORS preflight refused: the Origin is not one of this server's configured CORS origins"}, false)
)
