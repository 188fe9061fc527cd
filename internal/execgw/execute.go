package execgw

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/problem"
)

// Limits of an execute request beyond those package gateway names.
const (
	maxIDBytes           = 128
	maxAttachmentURL     = 2048
	maxAttachmentType    = 255
	maxCustomHeaders     = 32
	maxCustomHeaderValue = 8 << 10
)

// serveExecute answers POST /api/v1/execute: the run is stored QUEUED
// with its first event, and delivered as soon as a dispatcher is free.
func (s *Service) serveExecute(w http.ResponseWriter, r *http.Request) {
	p, err := principalOf(r, true)
	if err == nil {
		err = p.need(ScopeExecute)
	}
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	var in gateway.ExecuteRequest
	if !s.api.Decode(w, r, &in, httpapi.Body{What: "the execute request"}) {
		return
	}
	if err := checkExecute(&in); err != nil {
		s.api.Fail(w, r, err)
		return
	}
	if len(in.CustomHeaders) > 0 && !p.service {
		s.api.Fail(w, r, &problem.Problem{Type: problem.TypeForbidden, Status: http.StatusForbidden, Title: "Forbidden",
			Detail: "only a service account may send custom_headers"})
		return
	}
	inst, err := s.store.GetInstance(r.Context(), p.tenant, in.InstanceID)
	if err != nil {
		if isNotFound(err) {
			err = instanceNotFound(in.InstanceID)
		}
		s.api.Fail(w, r, err)
		return
	}
	run := gateway.Run{
		ID: newRunID(), TenantID: p.tenant, InstanceID: inst.ID, AgentID: agentID(&inst), Pull: pullState(&inst),
		ThreadID: in.ThreadID, ConversationID: in.ConversationID, Caller: p.caller(),
		Status: gateway.StatusQueued, Input: in.Input, Attachments: in.Attachments, OutputSchema: in.OutputSchema,
		IdempotencyKey: newIdempotencyKey(), Turn: 1,
	}
	if run.Pull != nil && run.ThreadID == "" {
		run.ThreadID = run.ID // a pulled run's agent always works in a thread
	}
	if headers := allowedHeaders(in.CustomHeaders, inst.CustomHeaders); len(headers) > 0 {
		if run.CustomHeaders, err = s.sealHeaders(run.TenantID, run.ID, headers); err != nil {
			s.api.Fail(w, r, err)
			return
		}
	}
	queued := []gateway.Event{statusEvent(gateway.StatusQueued, "")}
	stampTrace(r.Context(), queued)
	stored, _, err := s.store.CreateRun(r.Context(), gateway.RunWrite{Run: run, Now: s.o.Now(), Events: queued})
	if err != nil {
		s.api.Fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "gateway: run queued", "run_id", stored.ID, "tenant_id", stored.TenantID,
		"instance_id", stored.InstanceID, "caller", p.subject)
	s.tel.queued(r.Context(), stored.ID)
	s.dispatch.kick()
	httpapi.WriteJSON(w, r, http.StatusAccepted, gateway.ExecuteResult{RunID: stored.ID, Status: stored.Status,
		ThreadID: stored.ThreadID, EventsURL: gateway.EventsPath + stored.ID})
}

// checkExecute refuses an execute request that breaks a rule, naming it.
func checkExecute(in *gateway.ExecuteRequest) error {
	var errs []problem.FieldError
	bad := func(field, msg string) { errs = append(errs, problem.FieldError{Field: field, Message: msg}) }
	if in.InstanceID == "" {
		bad("instance_id", "required")
	} else if !validID(in.InstanceID) {
		bad("instance_id", "not an id: at most 128 printable characters")
	}
	switch n := utf8.RuneCountInString(in.Input); {
	case strings.TrimSpace(in.Input) == "":
		bad("input", "required")
	case n > gateway.MaxInputChars:
		bad("input", "longer than "+strconv.Itoa(gateway.MaxInputChars)+" characters ("+strconv.Itoa(n)+")")
	}
	for field, v := range map[string]string{"thread_id": in.ThreadID, "conversation_id": in.ConversationID} {
		if v != "" && !validID(v) {
			bad(field, "not an id: at most 128 printable characters")
		}
	}
	if len(in.Attachments) > gateway.MaxAttachments {
		bad("attachments", "more than "+strconv.Itoa(gateway.MaxAttachments))
	}
	for i, a := range in.Attachments {
		for _, msg := range attachmentProblems(&a) {
			bad("attachments["+strconv.Itoa(i)+"]", msg)
		}
	}
	if len(in.CustomHeaders) > maxCustomHeaders {
		bad("custom_headers", "more than "+strconv.Itoa(maxCustomHeaders))
	}
	for name, v := range in.CustomHeaders {
		if len(v) > maxCustomHeaderValue || strings.ContainsAny(v, "\r\n\x00") {
			// The name may be anything; the value is never shown.
			bad("custom_headers", "a value is longer than 8 KiB or holds a line break")
		}
		if !validHeaderName(name) {
			bad("custom_headers", "a name is not an HTTP header name")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
		Detail: "the execute request breaks " + strconv.Itoa(len(errs)) + " rule(s)", Errors: errs}
}

// attachmentProblems are the rules an attachment breaks.
func attachmentProblems(a *gateway.Attachment) []string {
	var out []string
	if a.Type == "" || len(a.Type) > maxAttachmentType || strings.ContainsFunc(a.Type, unicode.IsControl) {
		out = append(out, "type is required: a media type or logical type of at most 255 characters")
	}
	switch {
	case a.URL == "" && len(a.Data) == 0:
		out = append(out, "one of url and data is required")
	case a.URL != "" && len(a.Data) > 0:
		out = append(out, "url and data exclude each other")
	case a.URL != "":
		u, err := url.Parse(a.URL)
		if err != nil || len(a.URL) > maxAttachmentURL || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			out = append(out, "url must be an absolute http or https URL without credentials, at most 2048 characters")
		}
	}
	if a.Name != "" && !SafeFileName(a.Name) {
		out = append(out, "name must be a plain file name: no path separator, no '..', no control character, at most 255 bytes")
	}
	return out
}

// SafeFileName reports whether name is a plain file name: no path
// separator, not "." or "..", no control character, valid UTF-8, at most
// gateway.MaxAttachmentNameLen bytes.
func SafeFileName(name string) bool {
	if name == "" || len(name) > gateway.MaxAttachmentNameLen || !utf8.ValidString(name) ||
		name == "." || name == ".." || strings.Contains(name, "..") || strings.ContainsAny(name, `/\:`) {
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == utf8.RuneError })
}

func validID(s string) bool {
	if s == "" || len(s) > maxIDBytes || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) })
}

func validHeaderName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// allowedHeaders keeps the custom headers an instance allows and that
// are safe to hand an agent, lower-cased; the others are dropped, as the
// agent SDK drops them on its side.
func allowedHeaders(in map[string]string, allow []string) map[string]string {
	if len(in) == 0 || len(allow) == 0 {
		return nil
	}
	all := false
	allowed := map[string]bool{}
	for _, a := range allow {
		if a == "*" {
			all = true
		}
		allowed[strings.ToLower(a)] = true
	}
	out := map[string]string{}
	for name, v := range in {
		n := strings.ToLower(name)
		if agent.IsSafeCustomHeader(n) && (all || allowed[n]) {
			out[n] = v
		}
	}
	return out
}

// sealHeaders seals a run's custom headers for the store, bound to the
// run.
func (s *Service) sealHeaders(tenant, run string, h map[string]string) ([]byte, error) {
	if s.deps.Sealer == nil {
		return nil, &problem.Problem{Type: gateway.ProblemInvalidRequest, Status: http.StatusBadRequest, Title: "Bad Request",
			Detail: "this server keeps no key to seal custom headers with"}
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	sealed, err := s.deps.Sealer.Seal(b, sealHeaders, tenant, run)
	return []byte(sealed), err
}

// openHeaders opens what sealHeaders sealed.
func (s *Service) openHeaders(run *gateway.Run) (map[string]string, error) {
	if len(run.CustomHeaders) == 0 {
		return nil, nil
	}
	if s.deps.Sealer == nil {
		return nil, errNoSealer
	}
	b, err := s.deps.Sealer.Unseal(string(run.CustomHeaders), sealHeaders, run.TenantID, run.ID)
	if err != nil {
		return nil, err
	}
	var h map[string]string
	return h, json.Unmarshal(b, &h)
}

func agentID(inst *gateway.Instance) string {
	if inst.AgentID != "" {
		return inst.AgentID
	}
	return inst.Hosted
}

// newRunID is a run's id: a random UUID, which the agent's task id is
// seeded from.
func newRunID() string { return a2a.NewID() }

// newIdempotencyKey is the key of one turn's deliveries.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
