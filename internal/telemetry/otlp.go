package telemetry

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protowire"

	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// Defaults of ExporterOptions.
const (
	DefaultExportTimeout      = 10 * time.Second
	DefaultExportAttempts     = 8
	DefaultExportBackoff      = time.Second
	DefaultExportMaxBackoff   = 30 * time.Second
	DefaultExportResponseSize = 64 << 10
	DefaultExportUserAgent    = "novaos-otlp"
)

// maxRetainedBuffer is the largest encoding buffer kept from one batch
// to the next; one grown past it by an outsized batch is let go.
const maxRetainedBuffer = 8 << 20

// ErrExporterShutdown is what ExportSpans returns once the exporter is
// shut down.
var ErrExporterShutdown = errors.New("telemetry: OTLP exporter is shut down")

// ExporterOptions configure NewExporter; nil or the zero value means
// the defaults.
type ExporterOptions struct {
	// Headers are sent with every export (a collector's API key). Their
	// values never appear in errors: they are taken out of the
	// collector's text an error quotes.
	Headers map[string]secret.Value
	// UserAgent names the exporter to the collector; empty means
	// DefaultExportUserAgent.
	UserAgent string
	// Timeout bounds one attempt, from the request to its response's
	// end; zero means DefaultExportTimeout.
	Timeout time.Duration
	// Retry is the retry policy of an export; nil retries 429, 502, 503,
	// 504 and failed connections DefaultExportAttempts times in all,
	// waiting DefaultExportBackoff doubling up to DefaultExportMaxBackoff
	// with jitter, or the collector's Retry-After when longer (up to the
	// policy's Max). The context ExportSpans is given bounds the retries
	// too: the batch span processor's export timeout (30s unless
	// configured) usually ends them first. Give &resilience.Policy{} for
	// a single attempt.
	Retry *resilience.Policy
	// MaxResponseBytes bounds the collector's response read; zero means
	// DefaultExportResponseSize.
	MaxResponseBytes int64
}

// Exporter sends spans to an OpenTelemetry collector over OTLP/HTTP
// (protobuf). It writes each batch straight from the SDK's spans into
// one buffer it reuses, building no protobuf message per span or
// attribute, and retries as OTLP/HTTP asks: 429, 502, 503, 504 and
// failed connections, after an exponential backoff or the collector's
// Retry-After.
//
// It is an sdktrace.SpanExporter for a batch span processor, and safe
// for concurrent use (exports then take turns).
type Exporter struct {
	url     string
	host    string // what errors name
	header  http.Header
	secrets []string // header values, taken out of the collector's text
	client  *http.Client

	timeout     time.Duration
	maxResponse int64
	retry       *resilience.Policy
	now         func() time.Time // reads Retry-After dates; tests replace it

	turn     chan struct{} // held by the export using enc and resp
	enc      spanEncoder
	resp     bytes.Buffer
	stopped  context.Context // done once Shutdown is called
	stop     context.CancelFunc
	stopOnce sync.Once
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// NewExporter makes an exporter sending to endpoint, given as
// Options.OTLPEndpoint says. It does not connect.
func NewExporter(endpoint string, opts *ExporterOptions) (*Exporter, error) {
	var o ExporterOptions
	if opts != nil {
		o = *opts
	}
	traces, err := TracesURL(endpoint)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(traces)
	e := &Exporter{
		url:         traces,
		host:        u.Host,
		header:      http.Header{"Content-Type": {"application/x-protobuf"}, "User-Agent": {cmp.Or(o.UserAgent, DefaultExportUserAgent)}},
		timeout:     cmp.Or(o.Timeout, DefaultExportTimeout),
		maxResponse: cmp.Or(o.MaxResponseBytes, DefaultExportResponseSize),
		retry:       o.Retry,
		now:         time.Now,
		turn:        make(chan struct{}, 1),
	}
	if e.retry == nil {
		e.retry = &resilience.Policy{Attempts: DefaultExportAttempts, Base: DefaultExportBackoff, Max: DefaultExportMaxBackoff}
	}
	if e.timeout < 0 || e.maxResponse < 0 {
		return nil, errors.New("telemetry: OTLP exporter: want a positive timeout and response size")
	}
	for k, v := range o.Headers {
		if !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v.Reveal()) {
			return nil, fmt.Errorf("telemetry: OTLP header %q: not a header name, or a value a header cannot carry", k)
		}
		e.header.Set(k, v.Reveal())
		if s := v.Reveal(); s != "" {
			e.secrets = append(e.secrets, s)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	e.client = &http.Client{
		Transport: tr,
		// A collector has no reason to redirect, and following one would
		// hand the headers to wherever it points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	e.stopped, e.stop = context.WithCancel(context.Background())
	return e, nil
}

// ExportSpans sends spans, retrying until the collector takes them, ctx
// ends or the attempts are spent. A collector that takes only some of
// them answers with a *PartialSuccessError; one that refuses them with
// a *StatusError.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	if e.stopped.Err() != nil {
		return ErrExporterShutdown
	}
	select {
	case e.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("telemetry: export %d spans: %w", len(spans), context.Cause(ctx))
	case <-e.stopped.Done():
		return ErrExporterShutdown
	}
	defer func() { <-e.turn }()
	if e.stopped.Err() != nil {
		return ErrExporterShutdown
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(e.stopped, func() { cancel(ErrExporterShutdown) })()

	body := e.enc.encode(spans)
	defer func() {
		if cap(e.enc.buf) > maxRetainedBuffer {
			e.enc.buf = nil
		}
	}()
	if len(body) == 0 {
		return nil // nil spans only
	}
	err := e.retry.Do(ctx, func(ctx context.Context) error { return e.attempt(ctx, body) })
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrExporterShutdown) {
		err = errors.Join(err, cause)
	}
	return fmt.Errorf("telemetry: export %d spans to %s: %w", len(spans), e.host, err)
}

// attempt posts body once. Its errors say whether another attempt is
// worth it as resilience.IsTransient reads them: a failed connection or
// a *StatusError with a status worth retrying is; a failure after the
// collector took the spans never is.
func (e *Exporter) attempt(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = e.header // only read, by one request at a time
	resp, err := e.client.Do(req)
	if err != nil {
		// The URL the error repeats is the one the errors name by host.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	e.resp.Reset()
	_, rerr := e.resp.ReadFrom(io.LimitReader(resp.Body, e.maxResponse+1))
	long := int64(e.resp.Len()) > e.maxResponse
	if resp.StatusCode/100 == 2 {
		// The spans are taken: the errors below (%v, not %w) must not
		// look worth sending them again.
		switch {
		case rerr != nil:
			return fmt.Errorf("spans taken, but reading the response: %v", rerr)
		case long:
			return fmt.Errorf("spans taken, but the response is over %d bytes", e.maxResponse)
		case e.resp.Len() == 0 || !isProtobuf(resp.Header):
			return nil
		}
		ps, err := parsePartialSuccess(e.resp.Bytes())
		if err != nil {
			return fmt.Errorf("spans taken, but the response: %v", err)
		}
		if ps.Rejected != 0 || ps.Message != "" {
			ps.Message = e.quote(ps.Message)
			return &ps
		}
		return nil
	}
	serr := &StatusError{Code: resp.StatusCode}
	if rerr == nil && !long {
		serr.Message = e.quote(collectorMessage(resp.Header, e.resp.Bytes()))
	}
	if resilience.RetryableStatus(resp.StatusCode) {
		serr.after = resilience.ParseRetryAfter(resp.Header.Get("Retry-After"), e.now())
	}
	return serr
}

// quote makes text the collector wrote fit for an error: the headers'
// values taken out (a collector echoing a request's headers back must
// not put a key in the server's log), then tidied.
func (e *Exporter) quote(s string) string {
	for _, v := range e.secrets {
		s = strings.ReplaceAll(s, v, secret.Redacted)
	}
	return tidy(s)
}

// Shutdown ends the export under way, if any, makes later exports fail
// with ErrExporterShutdown and closes the idle connections. ctx bounds
// the wait for the export under way to return.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.stopOnce.Do(e.stop)
	select {
	case e.turn <- struct{}{}:
		<-e.turn
	case <-ctx.Done():
		return fmt.Errorf("telemetry: OTLP exporter shutdown: %w", context.Cause(ctx))
	}
	e.client.CloseIdleConnections()
	return nil
}

// StatusError is a collector's refusal of an export: the HTTP status
// and what the collector said of it. Its status says whether the export
// is retried (resilience.RetryableStatus).
type StatusError struct {
	Code    int
	Message string // the collector's, possibly empty

	after time.Duration // the collector's Retry-After
}

// HTTPStatus is Code, for resilience.IsTransient.
func (e *StatusError) HTTPStatus() int { return e.Code }

// RetryAfter is how long the collector asked to be left alone, zero if
// it did not say.
func (e *StatusError) RetryAfter() time.Duration { return e.after }

func (e *StatusError) Error() string {
	s := "collector answered " + strconv.Itoa(e.Code) + " " + http.StatusText(e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// PartialSuccessError is a collector's answer that it took an export but
// rejected some of its spans (Rejected), or took them all with a warning
// (Message only).
type PartialSuccessError struct {
	Rejected int64
	Message  string
}

func (e *PartialSuccessError) Error() string {
	s := "the collector rejected " + strconv.FormatInt(e.Rejected, 10) + " spans"
	if e.Rejected == 0 {
		s = "the collector took every span with a warning"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Field numbers of ExportTraceServiceResponse and its
// ExportTracePartialSuccess, and of google.rpc.Status.
const (
	fResponsePartialSuccess protowire.Number = 1
	fPartialRejectedSpans   protowire.Number = 1
	fPartialErrorMessage    protowire.Number = 2
	fRPCStatusMessage       protowire.Number = 2
)

// parsePartialSuccess reads an ExportTraceServiceResponse's
// partial_success as protobuf decoding would: unknown fields skipped, a
// field of a wire type other than its own taken as unknown, a message
// given twice merged.
func parsePartialSuccess(b []byte) (PartialSuccessError, error) {
	var ps PartialSuccessError
	err := walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != fResponsePartialSuccess || typ != protowire.BytesType {
			return nil
		}
		return walkFields(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case num == fPartialRejectedSpans && typ == protowire.VarintType:
				n, _ := protowire.ConsumeVarint(v)
				ps.Rejected = int64(n)
			case num == fPartialErrorMessage && typ == protowire.BytesType:
				ps.Message = string(v)
			}
			return nil
		})
	})
	return ps, err
}

// walkFields calls f with each field of the message b, its value as
// read: a varint's bytes, a length-delimited field's content.
func walkFields(b []byte, f func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed protobuf: %w", protowire.ParseError(n))
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fmt.Errorf("malformed protobuf: %w", protowire.ParseError(m))
		}
		v := b[:m]
		if typ == protowire.BytesType {
			v, _ = protowire.ConsumeBytes(v)
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// maxCollectorMessage bounds the collector's text an error quotes.
const maxCollectorMessage = 256

// collectorMessage is what a collector said of a refusal: a
// google.rpc.Status's message when it answers protobuf, as OTLP/HTTP
// asks, or else its text.
func collectorMessage(h http.Header, body []byte) string {
	msg := string(body)
	if isProtobuf(h) {
		msg = ""
		_ = walkFields(body, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if num == fRPCStatusMessage && typ == protowire.BytesType {
				msg = string(v)
			}
			return nil
		})
	}
	return msg
}

// tidy makes s one line of valid UTF-8, cut to maxCollectorMessage:
// nothing a log would choke on.
func tidy(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if len(s) > maxCollectorMessage {
		cut := maxCollectorMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isProtobuf(h http.Header) bool {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-protobuf")
}
