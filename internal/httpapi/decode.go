package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/strictjson"
)

// DefaultMaxBodyBytes bounds a REST request body when API.MaxBodyBytes is
// zero: REST bodies are records and queries, not payloads.
const DefaultMaxBodyBytes = 64 << 10

// Body says how DecodeJSON reads one request body.
type Body struct {
	// MaxBytes bounds the body (default DefaultMaxBodyBytes); a larger
	// one gets 413.
	MaxBytes int64
	// What names the body in the 415 answer ("send the agent as
	// application/json"); default "the body".
	What string
	// AllowUnknown accepts fields v does not have, for a body shape the
	// service shares with clients that send more (the NovaOS Python SDK);
	// otherwise an unknown field is malformed.
	AllowUnknown bool
	// AllowEmpty accepts an empty (or white-space) body, leaving v as it
	// was.
	AllowEmpty bool
}

// DecodeJSON reads r's body into v: an application/json body holding
// exactly one JSON value, with no member named twice in one object, within
// b.MaxBytes. Its error is a *problem.Problem
// (415 with an Accept header set on w, 413, or 400 malformed-json), ready
// for API.Fail or WriteProblem.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, b Body) error {
	if b.MaxBytes <= 0 {
		b.MaxBytes = DefaultMaxBodyBytes
	}
	if b.What == "" {
		b.What = "the body"
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		w.Header().Set("Accept", "application/json")
		return &problem.Problem{Type: problem.TypeUnsupportedMedia, Status: http.StatusUnsupportedMediaType,
			Title: "Unsupported Media Type", Detail: "send " + b.What + " as application/json"}
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, b.MaxBytes))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return &problem.Problem{Type: problem.TypeBodyTooLarge, Status: http.StatusRequestEntityTooLarge,
			Title: "Content Too Large", Detail: fmt.Sprintf("the body is larger than %d bytes", b.MaxBytes)}
	}
	if err == nil && len(bytes.TrimSpace(data)) == 0 {
		if b.AllowEmpty {
			return nil
		}
		err = errors.New("empty body")
	}
	if err == nil {
		err = strictjson.Decode(data, v, nil, b.AllowUnknown)
	}
	if err == nil {
		return nil
	}
	return &problem.Problem{Type: problem.TypeMalformedJSON, Status: http.StatusBadRequest,
		Title: "Malformed JSON", Detail: strings.TrimPrefix(err.Error(), "json: ")}
}
