package delivery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/problem"
)

// maxIdempotencyKey bounds an Idempotency-Key (a UUIDv7 is 36).
const maxIdempotencyKey = 255

// readBody reads r's whole body within Options.MaxBodyBytes and puts it
// back for the handler to decode.
func (s *Service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return nil, newProblem(http.StatusRequestEntityTooLarge, delivery.CodePayloadTooLarge, "",
			fmt.Sprintf("the body is larger than %d bytes", s.o.MaxBodyBytes))
	}
	if err != nil {
		return nil, fmt.Errorf("delivery: read the request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return body, nil
}

// idempotent serves a write of agent a at most once per Idempotency-Key
// (within Options.IdempotencyTTL): a repeat with the same key and
// request is answered with the first answer, status and body; the same
// key while the first is still being answered gets 409
// request_in_progress, and with another request 422
// idempotency_key_reused. A key left in progress longer than
// Options.IdempotencyStale (its process died) is taken over. An answer
// of 500 or more is not kept, so that a retry runs again. A write
// without a key is served as it is (the adapter SDK always sends one).
func (s *Service) idempotent(w http.ResponseWriter, r *http.Request, a Agent, serve func(w http.ResponseWriter, r *http.Request)) {
	req, stored, fresh, err := s.claimKey(w, r, a.ID)
	switch {
	case err != nil:
		s.fail(w, r, err)
		return
	case req == nil:
		serve(w, r)
		return
	case !fresh:
		replay(w, stored)
		return
	}
	ctx := r.Context()
	key := req.Key
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	serve(rec, r)
	// The answer is kept even when the client went: its retry gets it.
	ctx = context.WithoutCancel(ctx)
	if rec.status >= http.StatusInternalServerError {
		if err := s.store.ForgetRequest(ctx, a.ID, key); err != nil {
			s.log.WarnContext(ctx, "delivery: an idempotency key could not be released", "agent_id", a.ID, "err", err)
		}
		return
	}
	req.Done, req.Status, req.Body = true, rec.status, rec.body.Bytes()
	if err := s.store.FinishRequest(ctx, *req); err != nil {
		s.log.WarnContext(ctx, "delivery: an idempotent answer could not be kept", "agent_id", a.ID, "err", err)
	}
}

// claimKey claims r's Idempotency-Key in scope: nil and no error when r
// has none; else the claim, and, when the key was claimed before
// (fresh false), its stored answer. Its problems: a key that is not
// printable ASCII (400), one that came with another request (422
// idempotency_key_reused), one whose first request is still being
// answered (409 request_in_progress). A key left in progress longer than
// Options.IdempotencyStale (its process died) is taken over.
func (s *Service) claimKey(w http.ResponseWriter, r *http.Request, scope string) (*delivery.IdempotentRequest, delivery.IdempotentRequest, bool, error) {
	var none delivery.IdempotentRequest
	key := r.Header.Get(delivery.IdempotencyKeyHeader)
	if key == "" {
		return nil, none, false, nil
	}
	if len(key) > maxIdempotencyKey || !printable(key) {
		return nil, none, false, validationFailed("the Idempotency-Key is 1 to 255 printable ASCII characters",
			delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/headers/Idempotency-Key"})
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return nil, none, false, err
	}
	hash := requestHash(r.Method, r.URL.Path, body)
	ctx := r.Context()
	req := delivery.IdempotentRequest{Scope: scope, Key: key, RequestHash: hash, CreatedAt: s.o.Now()}
	stored, fresh, err := s.store.BeginRequest(ctx, req)
	if err == nil && !fresh && !stored.Done && s.o.Now().Sub(stored.CreatedAt) > s.o.IdempotencyStale {
		if err = s.store.ForgetRequest(ctx, scope, key); err == nil {
			stored, fresh, err = s.store.BeginRequest(ctx, req)
		}
	}
	switch {
	case err != nil:
		return nil, none, false, err
	case !fresh && !bytes.Equal(stored.RequestHash, hash):
		return nil, none, false, newProblem(http.StatusUnprocessableEntity, delivery.CodeIdempotencyKeyReused, "",
			"the Idempotency-Key came with another request: use a new key for a new request")
	case !fresh && !stored.Done:
		return nil, none, false, conflict(delivery.CodeRequestInProgress, "", "a request with this Idempotency-Key is being answered: retry later")
	}
	return &req, stored, fresh, nil
}

// requestHash tells a repeat of a request from another request under
// the same key: its method, path and body.
func requestHash(method, path string, body []byte) []byte {
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n%d\n", method, path, len(body))
	h.Write(body)
	return h.Sum(nil)
}

// replay writes a kept answer again.
func replay(w http.ResponseWriter, stored delivery.IdempotentRequest) {
	h := w.Header()
	ct := "application/json"
	if stored.Status >= 400 {
		ct = problem.ContentType
	}
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	h.Set("Idempotent-Replayed", "true")
	if len(stored.Body) > 0 {
		h.Set("Content-Length", strconv.Itoa(len(stored.Body)))
	}
	w.WriteHeader(stored.Status)
	_, _ = w.Write(stored.Body)
}

// recorder keeps the status and body of an answer as it is written.
type recorder struct {
	http.ResponseWriter
	status  int
	written bool
	body    bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	if !r.written {
		r.status, r.written = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.written = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
