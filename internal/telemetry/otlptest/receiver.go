package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// TracesPath is where the receiver takes spans.
const TracesPath = "/v1/traces"

// MaxBodyBytes bounds one export request, decompressed.
const MaxBodyBytes = 16 << 20

// Span is one span the receiver was sent, its ids in lower-case hex as
// the W3C traceparent writes them.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string // "" for a root span
	// Kind is the OTLP kind without its prefix: "SERVER", "CLIENT",
	// "INTERNAL", "PRODUCER" or "CONSUMER".
	Kind string
	// Status is "OK", "ERROR" or "UNSET".
	Status string
	// Attributes are the span's, Resource its resource's; values are
	// string, bool, int64, float64, or a []any of those.
	Attributes map[string]any
	Resource   map[string]any
	// Scope is the name of the instrumentation scope (the tracer).
	Scope string
	// Links are the spans this one links to (a span started apart from
	// the request that caused it), in the span's order.
	Links      []Link
	Start, End time.Time
}

// Link is a span's link to another span, its ids in lower-case hex.
type Link struct {
	TraceID, SpanID string
	Attributes      map[string]any
}

// Receiver collects the spans exported to it. It is safe for concurrent
// use.
type Receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed when spans grows
	headers []http.Header // of each export
}

// Start serves a receiver on loopback until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{changed: make(chan struct{})}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the receiver's base URL, an exporter's endpoint.
func (r *Receiver) URL() string { return r.srv.URL }

// Spans are the spans received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Headers are the headers of each export received so far.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.headers)
}

// Wait returns the first span received that match accepts, waiting for
// one until ctx ends.
func (r *Receiver) Wait(ctx context.Context, match func(Span) bool) (Span, error) {
	seen := 0
	for {
		r.mu.Lock()
		spans, changed := r.spans[seen:], r.changed
		seen = len(r.spans)
		r.mu.Unlock()
		if i := slices.IndexFunc(spans, match); i >= 0 {
			return spans[i], nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Span{}, fmt.Errorf("otlptest: no matching span among the %d received: %w", seen, ctx.Err())
		}
	}
}

// WaitSpans returns the spans received so far once done accepts them,
// waiting for more until ctx ends: for a condition on several spans (a
// whole trace) rather than on one.
func (r *Receiver) WaitSpans(ctx context.Context, done func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, changed := slices.Clone(r.spans), r.changed
		r.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("otlptest: the %d spans received do not make the trace awaited: %w", len(spans), ctx.Err())
		}
	}
}

// WaitTimeout bounds WaitSpan: a failure bound, not a measure.
const WaitTimeout = time.Minute

// WaitSpan is Wait bounded by WaitTimeout, failing t with the spans
// received when none matches.
func (r *Receiver) WaitSpan(t testing.TB, match func(Span) bool) Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	s, err := r.Wait(ctx, match)
	if err != nil {
		var names []string
		for _, s := range r.Spans() {
			names = append(names, fmt.Sprintf("%q (kind %s, trace %s, parent %q)", s.Name, s.Kind, s.TraceID, s.ParentSpanID))
		}
		t.Fatalf("%v; received:\n%s", err, strings.Join(names, "\n"))
	}
	return s
}

// Named matches spans by name.
func Named(name string) func(Span) bool {
	return func(s Span) bool { return s.Name == name }
}

// ServeHTTP takes an export request as OTLP/HTTP says: protobuf,
// optionally gzipped, answered with an ExportTraceServiceResponse.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != TracesPath {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST spans here", http.StatusMethodNotAllowed)
		return
	}
	if ct, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";"); strings.TrimSpace(ct) != "application/x-protobuf" {
		http.Error(w, "this receiver takes application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	spans, err := decode(req.Body, req.Header.Get("Content-Encoding"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	r.headers = append(r.headers, req.Header.Clone())
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// decode reads an export request's spans.
func decode(body io.Reader, encoding string) ([]Span, error) {
	switch encoding {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("otlptest: gzip: %w", err)
		}
		defer zr.Close()
		body = zr
	default:
		return nil, fmt.Errorf("otlptest: content encoding %q", encoding)
	}
	b, err := io.ReadAll(io.LimitReader(body, MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("otlptest: read: %w", err)
	}
	if len(b) > MaxBodyBytes {
		return nil, errors.New("otlptest: export request too large")
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("otlptest: decode: %w", err)
	}
	var out []Span
	for _, rs := range req.GetResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				var links []Link
				for _, l := range s.GetLinks() {
					links = append(links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId()),
						Attributes: attributes(l.GetAttributes())})
				}
				out = append(out, Span{
					Name:         s.GetName(),
					TraceID:      hex.EncodeToString(s.GetTraceId()),
					SpanID:       hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Kind:         strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_"),
					Status:       strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_"),
					Attributes:   attributes(s.GetAttributes()),
					Resource:     res,
					Scope:        ss.GetScope().GetName(),
					Links:        links,
					Start:        time.Unix(0, int64(s.GetStartTimeUnixNano())),
					End:          time.Unix(0, int64(s.GetEndTimeUnixNano())),
				})
			}
		}
	}
	return out, nil
}

func attributes(kvs []*commonpb.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	}
	return nil
}
