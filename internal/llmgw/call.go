package llmgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/resilience"
)

// Outcomes of a call, as metrics and run events name them.
const (
	outcomeOK          = "ok"
	outcomeInvalid     = "invalid"           // refused before any provider was asked
	outcomeBudget      = "budget_exceeded"   // a budget is spent
	outcomeProvider    = "provider_error"    // a provider refused the request, or broke off
	outcomeUnavailable = "unavailable"       // no provider answered
	outcomeCanceled    = "canceled"          // the caller left, or the server stopped
	outcomeOverloaded  = "overloaded"        // too many calls in flight
	outcomeNotAllowed  = "model_not_allowed" // the token does not grant the model
)

// Endpoints, under /v1, and their paths at a provider (under its base
// URL).
const (
	ChatPath       = "/v1/chat/completions"
	EmbeddingsPath = "/v1/embeddings"
	ModelsPath     = "/v1/models"
)

// errTimeout ends an attempt that took longer than its timeout.
var errTimeout = errors.New("llmgw: the provider took longer than the timeout")

// call is one request to the gateway on its way.
type call struct {
	c       *caller
	req     *request
	route   *resolved
	ticket  *ticket
	start   time.Time
	span    trace.Span
	op      string
	answer  answer
	outcome string
	// done is the stream's end, held back until the call is settled.
	done llm.Event
}

// answer is what the providers answered.
type answer struct {
	provider, upstream, model string
	attempts                  int
	// input and output are the provider's usage; reported says it gave
	// it.
	input, output int64
	reported      bool
	sent          bool // a byte of the answer went to the caller
	ttft          time.Duration
}

// serveCall serves POST /v1/chat/completions or /v1/embeddings.
func (s *Service) serveCall(op string) http.HandlerFunc {
	path := "/chat/completions"
	if op == opEmbeddings {
		path = "/embeddings"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, &llm.APIError{Status: http.StatusMethodNotAllowed, Type: llm.TypeInvalidRequest, Message: "Use POST."})
			return
		}
		start := time.Now()
		c, e := s.authenticate(r)
		if e != nil {
			s.meter.request("", outcomeInvalid)
			writeError(w, e)
			return
		}
		select {
		case s.inflight <- struct{}{}:
			defer func() { <-s.inflight }()
		default:
			s.meter.request("", outcomeOverloaded)
			writeError(w, &llm.APIError{Status: http.StatusServiceUnavailable, Type: llm.TypeServer, Code: llm.CodeOverloaded, After: time.Second,
				Message: "The gateway has too many calls in flight; retry shortly."})
			return
		}
		req, e := s.readRequest(w, r, op)
		if e == nil && !llm.ValidModelName(req.model) {
			e = modelNotFound(req.model)
		}
		if e != nil {
			s.meter.request("", outcomeInvalid)
			writeError(w, e)
			return
		}
		if !c.grants(req.model) {
			s.meter.request("", outcomeNotAllowed)
			writeError(w, modelNotAllowed(req.model))
			return
		}
		ctx := r.Context()
		route, e, err := s.resolve(ctx, c.tenant, req.model)
		if err != nil {
			s.log.ErrorContext(ctx, "llmgw: read the model's route", "model", req.model, "err", err)
			e = serverError(http.StatusInternalServerError, "The gateway could not read its configuration.")
		}
		if e != nil {
			s.meter.request("", outcomeInvalid)
			writeError(w, e)
			return
		}
		now := s.o.Now()
		keys := llm.Keys{TenantID: c.tenant, InstanceID: c.instance, RunID: c.run, Day: llm.DayOf(now)}
		estimate := llm.Amount{Tokens: req.input + req.output, Cost: route.route.Cost(req.input, req.output)}
		t, err := s.ledger.take(ctx, keys, c.limit, estimate)
		if err != nil {
			e, outcome := s.reserveError(ctx, err)
			s.meter.request(req.model, outcome)
			writeError(w, e)
			return
		}
		s.wg.Add(1)
		defer s.wg.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(s.calls, cancel)
		defer stop()
		k := &call{c: c, req: req, route: route, ticket: t, start: start, op: op}
		// The tenant and run the call is charged to, as the tool and
		// memory spans name them: an operator finds a run's model calls
		// by its id.
		attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", op),
			attribute.String("gen_ai.request.model", req.model), instrument.AttrTenant.String(c.tenant)}
		if c.run != "" {
			attrs = append(attrs, instrument.AttrRun.String(c.run))
		}
		ctx, k.span = s.tracer.Start(ctx, op+" "+req.model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		if op == opChat && req.output > 0 {
			k.span.SetAttributes(attribute.Int64("gen_ai.request.max_tokens", req.output))
		}
		k.outcome = s.relay(ctx, w, k, path)
		s.finish(ctx, k)
		if k.done.Data != nil {
			_ = writeEvent(w, http.NewResponseController(w), k.done)
		}
	}
}

// reserveError is the answer to a call whose budgets could not hold its
// estimate, and its outcome.
func (s *Service) reserveError(ctx context.Context, err error) (*llm.APIError, string) {
	var be *llm.BudgetError
	if errors.As(err, &be) {
		return &llm.APIError{Status: http.StatusTooManyRequests, Type: llm.TypeInsufficientQuota, Code: llm.CodeBudgetExceeded,
			Message: capitalize(be.Error()) + "."}, outcomeBudget
	}
	s.log.ErrorContext(ctx, "llmgw: reserve a call's budget", "err", err)
	return serverError(http.StatusInternalServerError, "The gateway could not check the budgets."), outcomeUnavailable
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// readRequest reads and parses the body, bounded.
func (s *Service) readRequest(w http.ResponseWriter, r *http.Request, op string) (*request, *llm.APIError) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, &llm.APIError{Status: http.StatusUnsupportedMediaType, Type: llm.TypeInvalidRequest, Code: llm.CodeUnsupportedMediaType,
			Message: "Send the request as application/json."}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes))
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return nil, &llm.APIError{Status: http.StatusRequestEntityTooLarge, Type: llm.TypeInvalidRequest, Code: llm.CodeRequestTooLarge,
			Message: fmt.Sprintf("The request is larger than %d bytes.", s.o.MaxBodyBytes)}
	}
	if err != nil {
		return nil, badRequest("", llm.CodeInvalidJSON, "The request body could not be read.")
	}
	return parseRequest(op, body, s.o.DefaultMaxTokens)
}

// relay sends the call to its route's targets in order until one
// answers, and passes the answer on. A target that is rate-limited,
// fails (5xx), refuses the gateway's key or cannot be reached is left for
// the next, as long as nothing was sent to the caller; once a byte was,
// the call ends with that target.
func (s *Service) relay(ctx context.Context, w http.ResponseWriter, k *call, path string) string {
	var last *llm.APIError
	for _, t := range k.route.targets {
		k.answer.provider, k.answer.upstream = t.provider.Name, t.model
		k.answer.attempts++
		body, err := k.req.upstreamBody(t.model)
		if err != nil {
			writeError(w, badRequest("", llm.CodeInvalidJSON, "The request could not be passed on."))
			return outcomeInvalid
		}
		outcome, fail := s.attempt(ctx, w, k, t, path, body)
		if fail == nil {
			return outcome
		}
		if ctx.Err() != nil {
			return outcomeCanceled
		}
		k.span.AddEvent("gen_ai.provider.failed", trace.WithAttributes(
			attribute.String("gen_ai.provider.name", t.provider.Name), instrument.AttrErrorType.String(failType(fail)), attribute.String("exception.message", fail.Message)))
		s.log.WarnContext(ctx, "llmgw: a provider failed; trying the next", "model", k.req.model, "provider", t.provider.Name,
			"reason", fail.Message)
		last = fail
	}
	e := &llm.APIError{Status: http.StatusBadGateway, Type: llm.TypeServer, Code: llm.CodeProviderUnavailable,
		Message: "No provider of the model " + quoteModel(k.req.model) + " answered."}
	if last != nil && last.Status == http.StatusTooManyRequests {
		e = &llm.APIError{Status: http.StatusTooManyRequests, Type: llm.TypeRateLimit, Code: llm.CodeRateLimit, After: last.After,
			Message: "Every provider of the model " + quoteModel(k.req.model) + " is rate-limited; retry later."}
	}
	writeError(w, e)
	return outcomeUnavailable
}

// attempt calls one target. A non-nil failure means nothing was sent to
// the caller and the next target may be tried; its message says why,
// for logs and spans.
// failType is a provider failure's error.type: its HTTP status, or
// "_OTHER" for one that never answered.
func failType(fail *llm.APIError) string {
	if fail.Status > 0 {
		return strconv.Itoa(fail.Status)
	}
	return "_OTHER"
}

func (s *Service) attempt(ctx context.Context, w http.ResponseWriter, k *call, t target, path string, body []byte) (string, *llm.APIError) {
	if err := s.guard.CheckURL(t.provider.BaseURL); err != nil {
		return "", &llm.APIError{Message: "the provider's URL is refused: " + err.Error()}
	}
	timeout := s.o.Timeout
	if t.provider.Timeout > 0 {
		timeout = t.provider.Timeout
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := time.AfterFunc(timeout, func() { cancel(errTimeout) })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, endpoint(&t.provider, path), bytes.NewReader(body))
	if err != nil {
		return "", &llm.APIError{Message: "the provider's URL is not usable"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "novaos-llm-gateway")
	if k.req.stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	if key := t.key.Reveal(); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	propagation.TraceContext{}.Inject(actx, propagation.HeaderCarrier(req.Header))
	resp, err := s.client.Do(req)
	if err != nil {
		return "", &llm.APIError{Message: "unreachable: " + reason(actx, err)}
	}
	defer resp.Body.Close()
	switch st := resp.StatusCode; {
	case st == http.StatusTooManyRequests:
		return "", &llm.APIError{Status: st, Message: "rate-limited (429)", After: retryAfter(resp)}
	case st >= 500:
		return "", &llm.APIError{Status: st, Message: fmt.Sprintf("failed (%d)", st)}
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		s.log.ErrorContext(ctx, "llmgw: a provider refused the gateway's key", "provider", t.provider.Name, "tenant_id", t.provider.TenantID, "status", st)
		return "", &llm.APIError{Status: st, Message: fmt.Sprintf("refused the gateway's key (%d)", st)}
	case st < 200 || st > 299:
		s.passError(w, resp)
		return outcomeProvider, nil
	}
	if k.req.stream && isEventStream(resp.Header) {
		return s.relayStream(ctx, actx, w, k, resp, timer)
	}
	return s.relayBody(actx, w, k, resp)
}

// reason says why a request failed, without its URL.
func reason(ctx context.Context, err error) string {
	if errors.Is(context.Cause(ctx), errTimeout) {
		return "timed out"
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap() // *url.Error repeats the URL
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}

// retryAfter is the wait a provider asked for, passed on to the caller
// up to an hour.
func retryAfter(resp *http.Response) time.Duration {
	if d := resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); d <= time.Hour {
		return d
	}
	return 0
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// maxErrorBytes bounds a provider's error answer the gateway reads.
const maxErrorBytes = 64 << 10

// passError answers with a provider's refusal (a 4xx other than 429, 401
// and 403): its status, and its error as the provider gave it.
func (s *Service) passError(w http.ResponseWriter, resp *http.Response) {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	e := llm.ParseError(resp.StatusCode, data)
	if e.Type == "" {
		e.Type = llm.TypeInvalidRequest
	}
	if resp.StatusCode == http.StatusNotFound && e.Code == "" {
		e.Code = llm.CodeModelNotFound
	}
	writeError(w, e)
}

// usageOf is what the gateway reads of an answer or a stream chunk.
type usageOf struct {
	Model   string            `json:"model"`
	Choices []json.RawMessage `json:"choices"`
	Usage   *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// relayBody passes on an answer that is not streamed, whole.
func (s *Service) relayBody(ctx context.Context, w http.ResponseWriter, k *call, resp *http.Response) (string, *llm.APIError) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.o.MaxResponseBytes+1))
	if err != nil {
		return "", &llm.APIError{Message: "broke off: " + reason(ctx, err)}
	}
	if int64(len(data)) > s.o.MaxResponseBytes {
		writeError(w, &llm.APIError{Status: http.StatusBadGateway, Type: llm.TypeServer, Code: llm.CodeProviderUnavailable,
			Message: fmt.Sprintf("The provider's answer is larger than %d bytes.", s.o.MaxResponseBytes)})
		return outcomeProvider, nil
	}
	var u usageOf
	if json.Unmarshal(data, &u) != nil {
		return "", &llm.APIError{Message: "answered something that is not JSON"}
	}
	k.answer.model = u.Model
	if u.Usage != nil {
		k.answer.input, k.answer.output, k.answer.reported = u.Usage.PromptTokens, u.Usage.CompletionTokens, true
	}
	// No Content-Length and no flush: the caller sees the answer end when
	// the handler returns, after finish settled it, so the caller's next
	// call sees this one's spend.
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(resp.StatusCode)
	k.answer.sent, k.answer.ttft = true, time.Since(k.start)
	if _, err := w.Write(data); err != nil {
		return outcomeCanceled, nil
	}
	return outcomeOK, nil
}

var (
	doneData = []byte("[DONE]")
	usageKey = []byte(`"usage"`)
)

// relayStream passes a provider's stream on event by event, each flushed
// as it arrives. It reads the usage chunk the gateway asked for, and
// drops it when the caller did not ask for it. A stream that fails
// before its first event is sent may go to the next target.
func (s *Service) relayStream(ctx, actx context.Context, w http.ResponseWriter, k *call, resp *http.Response, timer *time.Timer) (string, *llm.APIError) {
	rc := http.NewResponseController(w)
	rd := llm.NewEventReader(resp.Body, s.o.MaxEventBytes)
	first := true
	for {
		ev, err := rd.Next()
		if err != nil {
			if !k.answer.sent {
				return "", &llm.APIError{Message: "the stream broke off: " + reason(actx, err)}
			}
			if ctx.Err() != nil {
				return outcomeCanceled, nil
			}
			// The caller has part of the answer: say the rest is lost.
			s.log.WarnContext(ctx, "llmgw: a provider's stream broke off", "model", k.req.model, "provider", k.answer.provider, "reason", reason(actx, err))
			b, _ := (&llm.APIError{Type: llm.TypeServer, Code: llm.CodeProviderUnavailable, Message: "The provider's stream broke off."}).MarshalJSON()
			_ = writeEvent(w, rc, llm.Event{Data: b})
			return outcomeProvider, nil
		}
		timer.Reset(s.o.StreamIdle)
		if bytes.Equal(ev.Data, doneData) {
			if !k.answer.sent {
				s.startStream(w, k)
			}
			// The end is passed on once the call is settled and shown in
			// its run (serveCall): a caller that ends its run on it finds
			// the call there.
			k.done = ev
			return outcomeOK, nil
		}
		if first || bytes.Contains(ev.Data, usageKey) {
			var u usageOf
			if json.Unmarshal(ev.Data, &u) == nil {
				if first && u.Model != "" {
					k.answer.model = u.Model
				}
				if u.Usage != nil {
					k.answer.input, k.answer.output, k.answer.reported = u.Usage.PromptTokens, u.Usage.CompletionTokens, true
					if !k.req.usageAsked && len(u.Choices) == 0 {
						continue // the usage chunk the caller did not ask for
					}
				}
			}
			first = false
		}
		if !k.answer.sent {
			s.startStream(w, k)
		}
		if writeEvent(w, rc, ev) != nil {
			return outcomeCanceled, nil
		}
	}
}

// startStream sends the header of the caller's stream.
func (s *Service) startStream(w http.ResponseWriter, k *call) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	k.answer.sent, k.answer.ttft = true, time.Since(k.start)
}

// writeEvent sends one event as the provider named it, each line of its
// data a data line, and flushes it.
func writeEvent(w http.ResponseWriter, rc *http.ResponseController, ev llm.Event) error {
	n := len(ev.Data) + 8
	if ev.Name != "" {
		n += len(ev.Name) + 8
	}
	b := make([]byte, 0, n)
	if ev.Name != "" {
		b = append(append(append(b, "event: "...), ev.Name...), '\n')
	}
	for line := range bytes.SplitSeq(ev.Data, []byte{'\n'}) {
		b = append(append(append(b, "data: "...), line...), '\n')
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	return rc.Flush()
}

// finish settles the call's reservation with what it used, meters it,
// ends its span and shows it in its run.
func (s *Service) finish(ctx context.Context, k *call) {
	ctx = context.WithoutCancel(ctx)
	a := &k.answer
	input, output, estimated := a.input, a.output, false
	if !a.reported {
		input, output = 0, 0
		if a.sent {
			// Answered without saying what it used: count the estimate.
			input, output, estimated = k.req.input, k.req.output, true
		}
	}
	cost := k.route.route.Cost(input, output)
	row := llm.UsageRow{UsageKey: llm.UsageKey{TenantID: k.ticket.keys.TenantID, Day: k.ticket.keys.Day, InstanceID: k.ticket.keys.InstanceID,
		Model: k.route.route.Name, Provider: a.provider}, Calls: 1, Input: input, Output: output, Cost: cost}
	if k.outcome != outcomeOK {
		row.Failed = 1
	}
	s.ledger.settle(k.ticket, llm.Amount{Tokens: input + output, Cost: cost}, row)
	d := time.Since(k.start)
	s.meter.call(k.c.tenant, k.req.model, k.outcome, input, output, cost, d, a.ttft, a.sent && k.req.stream)
	k.span.SetAttributes(
		attribute.String("gen_ai.provider.name", a.provider),
		attribute.String("gen_ai.system", a.provider),
		attribute.Int64("gen_ai.usage.input_tokens", input),
		attribute.Int64("gen_ai.usage.output_tokens", output),
		attribute.Int("novaos.llm.attempts", a.attempts),
		attribute.String("novaos.llm.outcome", k.outcome),
	)
	if a.model != "" {
		k.span.SetAttributes(attribute.String("gen_ai.response.model", a.model))
	}
	if k.outcome != outcomeOK {
		k.span.SetAttributes(instrument.AttrErrorType.String(k.outcome))
		k.span.SetStatus(codes.Error, k.outcome)
	}
	k.span.End()
	s.events.commit(ctx, k.c, llm.CallEvent{Operation: k.op, Model: k.req.model, Provider: a.provider, Upstream: a.upstream, Stream: k.req.stream,
		InputTokens: input, OutputTokens: output, CostUSD: cost.USD(), Estimated: estimated, DurationMS: d.Milliseconds(),
		Attempts: a.attempts, Outcome: k.outcome})
}
