package telemetry

import (
	"cmp"
	"context"
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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkinstrumentation "go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

// capture is a collector keeping the bodies it is sent, answering each
// with an empty ExportTraceServiceResponse.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *capture) last(t *testing.T) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bodies) == 0 {
		t.Fatal("the collector received nothing")
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(c.bodies[len(c.bodies)-1], &req); err != nil {
		t.Fatalf("the body is not an ExportTraceServiceRequest: %v", err)
	}
	return &req
}

func traceID(b byte) trace.TraceID { return trace.TraceID{0x4b, 0xf9, 15: b} }
func spanID(b byte) trace.SpanID   { return trace.SpanID{0x00, 0xf0, 7: b} }

func spanContext(t, s byte, flags trace.TraceFlags, remote bool, ts trace.TraceState) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(t), SpanID: spanID(s), TraceFlags: flags, Remote: remote, TraceState: ts})
}

// fixtureSpans cover what an export can carry: every attribute type,
// events, links to remote and local spans, every status and kind, trace
// state, two resources (and none), three scopes (one the zero scope),
// interleaved so that grouping them matters, and a span whose length
// takes three bytes.
func fixtureSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	const schema = "https://opentelemetry.io/schemas/1.26.0"
	res1 := resource.NewWithAttributes(schema, attribute.String("service.name", "novaos"), attribute.String("service.version", "v1.2.3"))
	res2 := resource.NewSchemaless(attribute.String("service.name", "other"), attribute.Int("shard", 2), attribute.StringSlice("zones", []string{"a", "b"}))
	scopeA := sdkinstrumentation.Scope{Name: "novaos.dev/novaos", Version: "1.2.3", SchemaURL: schema,
		Attributes: attribute.NewSet(attribute.String("scope.kind", "server"), attribute.Bool("scope.sampled", true))}
	scopeB := sdkinstrumentation.Scope{Name: "novaos.dev/novaos/llm"}
	ts, err := trace.ParseTraceState("vendor=a1,other=b2")
	if err != nil {
		t.Fatal(err)
	}
	every := []attribute.KeyValue{
		attribute.Bool("bool", true),
		attribute.Bool("bool.false", false),
		attribute.Int64("int", -42),
		attribute.Int("int.zero", 0),
		attribute.Float64("float", 3.25),
		attribute.Float64("float.zero", 0),
		attribute.String("string", "héllo"),
		attribute.String("string.empty", ""),
		attribute.BoolSlice("bools", []bool{true, false}),
		attribute.Int64Slice("ints", []int64{1, -2, 3, 4, 1 << 40}),
		attribute.Float64Slice("floats", []float64{1.5, -2.25}),
		attribute.StringSlice("strings", []string{"a", "", "c", "d", "e", "f"}),
		attribute.StringSlice("strings.none", nil),
		attribute.ByteSlice("bytes", []byte{0, 1, 0xff}),
		attribute.Slice("mixed", attribute.BoolValue(true), attribute.SliceValue(attribute.IntValue(2), attribute.Value{}),
			attribute.MapValue(attribute.String("k", "v"))),
		attribute.Map("map", attribute.String("b", "2"), attribute.Int("a", 1), attribute.Map("nested", attribute.Bool("ok", true))),
		{Key: "empty"},
		{Key: "", Value: attribute.StringValue("keyless")},
	}
	start := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)
	stubs := tracetest.SpanStubs{
		{
			Name: "POST /a2a", SpanContext: spanContext(1, 1, trace.FlagsSampled, false, ts), Parent: spanContext(1, 9, trace.FlagsSampled, true, ts),
			SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(time.Second), Attributes: every,
			Events: []sdktrace.Event{
				{Name: "exception", Time: start.Add(time.Millisecond), Attributes: every[:4], DroppedAttributeCount: 2},
				{Name: "", Time: time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)},
			},
			Links: []sdktrace.Link{
				{SpanContext: spanContext(7, 1, trace.FlagsSampled, true, ts), Attributes: every[4:8], DroppedAttributeCount: 1},
				{SpanContext: spanContext(7, 2, 0, false, trace.TraceState{})},
				{SpanContext: spanContext(7, 3, trace.FlagsSampled, false, trace.TraceState{})},
			},
			Status: sdktrace.Status{Code: codes.Error, Description: "boom"}, DroppedAttributes: 3, DroppedEvents: 1, DroppedLinks: 2,
			ChildSpanCount: 1, Resource: res1, InstrumentationScope: scopeA,
		},
		{
			Name: "chat gpt-4o", SpanContext: spanContext(1, 2, trace.FlagsSampled, false, trace.TraceState{}), Parent: spanContext(1, 1, trace.FlagsSampled, false, trace.TraceState{}),
			SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.Int("gen_ai.usage.input_tokens", 12)},
			Status:     sdktrace.Status{Code: codes.Ok}, Resource: res2, InstrumentationScope: scopeB,
		},
		{
			Name: "publish", SpanContext: spanContext(2, 1, 0, false, trace.TraceState{}), SpanKind: trace.SpanKindProducer,
			StartTime: start, EndTime: start, Resource: res1, InstrumentationScope: scopeB,
		},
		{
			Name: "deliver", SpanContext: spanContext(2, 2, trace.FlagsSampled, false, trace.TraceState{}), SpanKind: trace.SpanKindConsumer,
			Resource: res1, // the zero scope, and zero times
		},
		{
			Name: "big", SpanContext: spanContext(3, 1, trace.FlagsSampled, false, trace.TraceState{}), SpanKind: trace.SpanKindInternal,
			StartTime: start, EndTime: start.Add(time.Hour),
			Attributes: []attribute.KeyValue{attribute.String("payload", strings.Repeat("x", 20000)), attribute.String("small", "y")},
			Resource:   res1, InstrumentationScope: scopeA,
		},
		{
			Name: "unspecified", SpanContext: spanContext(3, 2, trace.FlagsSampled, false, trace.TraceState{}), SpanKind: trace.SpanKindUnspecified,
			Status: sdktrace.Status{Code: codes.Unset}, Resource: res2, InstrumentationScope: scopeA,
		},
		{
			Name: "unknown kind", SpanContext: spanContext(3, 3, trace.FlagsSampled, false, trace.TraceState{}), SpanKind: trace.SpanKind(9),
			Resource: res2, InstrumentationScope: scopeB,
		},
		{
			Name: "no resource", SpanContext: spanContext(3, 4, trace.FlagsSampled, false, trace.TraceState{}), InstrumentationScope: scopeB,
		},
	}
	return stubs.Snapshots()
}

// recordedSpans are spans the SDK itself recorded and ended, from two
// providers (two resources) and three tracers.
func recordedSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	tp1 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "a"))))
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "b"))))
	ts, _ := trace.ParseTraceState("k=v")
	remote := trace.ContextWithRemoteSpanContext(context.Background(), spanContext(5, 5, trace.FlagsSampled, true, ts))
	ctx, server := tp1.Tracer("one", trace.WithInstrumentationVersion("1")).Start(remote, "server", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", "POST"), attribute.Int("http.response.status_code", 200)))
	_, client := tp1.Tracer("two", trace.WithInstrumentationAttributes(attribute.String("a", "b"))).Start(ctx, "client", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: spanContext(6, 6, 0, false, trace.TraceState{}), Attributes: []attribute.KeyValue{attribute.Bool("l", true)}}))
	client.AddEvent("retry", trace.WithAttributes(attribute.Int("attempt", 2)))
	client.SetStatus(codes.Error, "upstream failed")
	client.End()
	_, other := tp2.Tracer("three", trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0")).Start(ctx, "other")
	other.SetStatus(codes.Ok, "dropped by the SDK")
	other.End()
	server.End()
	return rec.Ended()
}

// byResource orders an export's resource groups, which OpenTelemetry's
// exporter leaves in map order.
func byResource(req *coltracepb.ExportTraceServiceRequest) {
	key := func(rs *tracepb.ResourceSpans) string {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(rs.GetResource())
		return string(b) + rs.GetSchemaUrl()
	}
	slices.SortStableFunc(req.ResourceSpans, func(a, b *tracepb.ResourceSpans) int { return cmp.Compare(key(a), key(b)) })
}

// TestExporterMatchesOpenTelemetry sends the same spans through
// OpenTelemetry's otlptracehttp exporter and ours, and wants the same
// request decoded, but for one field OpenTelemetry's leaves out: a link's
// trace state.
func TestExporterMatchesOpenTelemetry(t *testing.T) {
	fixture := fixtureSpans(t)
	tests := []struct {
		name  string
		spans []sdktrace.ReadOnlySpan
	}{
		{"every field", fixture},
		{"recorded by the SDK", recordedSpans(t)},
		{"one span", fixture[1:2]},
		{"nil among spans", []sdktrace.ReadOnlySpan{fixture[2], nil, fixture[3]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var theirs, ours capture
			theirSrv, ourSrv := httptest.NewServer(&theirs), httptest.NewServer(&ours)
			t.Cleanup(theirSrv.Close)
			t.Cleanup(ourSrv.Close)
			ctx := context.Background()
			official, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(theirSrv.URL+TracesPath),
				otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
			if err != nil {
				t.Fatal(err)
			}
			if err := official.ExportSpans(ctx, tc.spans); err != nil {
				t.Fatalf("otlptracehttp: %v", err)
			}
			official.Shutdown(ctx)
			exp, err := NewExporter(ourSrv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := exp.ExportSpans(ctx, tc.spans); err != nil {
				t.Fatalf("ours: %v", err)
			}
			want, got := theirs.last(t), ours.last(t)

			// What ours adds: a link's trace state.
			linkState := map[string]string{}
			for _, s := range tc.spans {
				if s == nil {
					continue
				}
				for _, l := range s.Links() {
					linkState[l.SpanContext.TraceID().String()+l.SpanContext.SpanID().String()] = l.SpanContext.TraceState().String()
				}
			}
			for _, rs := range want.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						for _, l := range s.Links {
							if l.TraceState != "" {
								t.Fatal("otlptracehttp sends a link's trace state now: drop this fix-up")
							}
							l.TraceState = linkState[trace.TraceID(l.TraceId).String()+trace.SpanID(l.SpanId).String()]
						}
					}
				}
			}
			byResource(want)
			byResource(got)
			if !proto.Equal(want, got) {
				t.Errorf("requests differ (-otlptracehttp +ours):\n%s", gocmp.Diff(want, got, protocmp.Transform()))
			}
		})
	}
}

// TestEncodeShape checks what equivalence to the official exporter
// cannot: that groups keep the order they first appear in, spans their
// batch order, and that lengths are minimal varints (the body decodes
// with the lengths re-encoded to the same bytes).
func TestEncodeShape(t *testing.T) {
	spans := fixtureSpans(t)
	var e spanEncoder
	body := e.encode(spans)
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	type group struct {
		res   string
		scope string
		spans []string
	}
	var got []group
	for _, rs := range req.ResourceSpans {
		res := "none"
		if rs.Resource != nil {
			res = fmt.Sprint(rs.Resource.Attributes[0].GetValue().GetStringValue())
		}
		for _, ss := range rs.ScopeSpans {
			g := group{res: res, scope: ss.GetScope().GetName()}
			for _, s := range ss.Spans {
				g.spans = append(g.spans, s.Name)
			}
			got = append(got, g)
		}
	}
	want := []group{
		{"novaos", "novaos.dev/novaos", []string{"POST /a2a", "big"}},
		{"novaos", "novaos.dev/novaos/llm", []string{"publish"}},
		{"novaos", "", []string{"deliver"}},
		{"other", "novaos.dev/novaos/llm", []string{"chat gpt-4o", "unknown kind"}},
		{"other", "novaos.dev/novaos", []string{"unspecified"}},
		{"none", "novaos.dev/novaos/llm", []string{"no resource"}},
	}
	if diff := gocmp.Diff(want, got, gocmp.AllowUnexported(group{})); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if err := minimalLengths(body, req.ProtoReflect().Descriptor()); err != nil {
		t.Error(err)
	}
}

// minimalLengths fails on a length in b, an encoded md, written in more
// bytes than it needs, looking into every message field.
func minimalLengths(b []byte, md protoreflect.MessageDescriptor) error {
	return walkFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		fd := md.Fields().ByNumber(num)
		if fd == nil || fd.Kind() != protoreflect.MessageKind {
			return nil
		}
		// v is a slice of b: its length prefix is just before it.
		if err := checkPrefix(b, v); err != nil {
			return fmt.Errorf("%s.%s: %w", md.Name(), fd.Name(), err)
		}
		return minimalLengths(v, fd.Message())
	})
}

// checkPrefix finds v's length prefix in b and wants it minimal.
func checkPrefix(b, v []byte) error {
	off := cap(b) - cap(v) // v's offset in b
	w := protowire.SizeVarint(uint64(len(v)))
	got, n := protowire.ConsumeVarint(b[off-w:])
	if n != w || got != uint64(len(v)) {
		return fmt.Errorf("the length %d is not written in the %d bytes before it", len(v), w)
	}
	// A longer encoding would end in a 0x80 byte before these w bytes.
	if off-w-1 >= 0 && b[off-w-1]&0x80 != 0 {
		return fmt.Errorf("the length %d is written in more than %d bytes", len(v), w)
	}
	return nil
}

// reply is one answer of a scripted collector.
type reply struct {
	status int
	header map[string]string
	body   []byte
	drop   bool // close the connection instead of answering
	hang   bool // answer nothing until the client gives up
}

// scripted is a collector answering each request with the next of its
// replies, keeping the headers of each.
type scripted struct {
	replies []reply

	mu      sync.Mutex
	headers []http.Header
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	i := len(s.headers)
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if i >= len(s.replies) {
		http.Error(w, "no more replies scripted", http.StatusTeapot)
		return
	}
	rp := s.replies[i]
	if rp.hang {
		<-r.Context().Done()
		return
	}
	if rp.drop {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	for k, v := range rp.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(rp.status)
	w.Write(rp.body)
}

func (s *scripted) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.headers)
}

// fakeClock stands in for the exporter's clock and sleep: a sleep
// records its wait and moves the clock on at once.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	// onSleep, if set, is what a sleep does after recording its wait.
	onSleep func(ctx context.Context) error
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	if c.onSleep != nil {
		return c.onSleep(ctx)
	}
	return nil
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var protobufHeader = map[string]string{"Content-Type": "application/x-protobuf"}

func TestExporterRetries(t *testing.T) {
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	partial := func(n int64, msg string) []byte {
		return marshal(t, &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: n, ErrorMessage: msg}})
	}
	// within says each wait is the backoff's: d less up to half of it.
	within := func(ds ...time.Duration) func([]time.Duration) bool {
		return func(waits []time.Duration) bool {
			if len(waits) != len(ds) {
				return false
			}
			for i, d := range ds {
				if waits[i] < d/2 || waits[i] > d {
					return false
				}
			}
			return true
		}
	}
	exactly := func(ds ...time.Duration) func([]time.Duration) bool {
		return func(waits []time.Duration) bool { return slices.Equal(waits, ds) }
	}
	tests := []struct {
		name     string
		replies  []reply
		cancel   bool // the export's context ends during its first wait
		attempts int  // of the retry policy; 0: DefaultExportAttempts
		timeout  time.Duration
		requests int
		waits    func([]time.Duration) bool
		check    func(t *testing.T, err error)
	}{
		{
			name:     "503 with Retry-After seconds, then 200",
			replies:  []reply{{status: 503, header: map[string]string{"Retry-After": "7"}}, {status: 200}},
			requests: 2, waits: exactly(7 * time.Second),
		},
		{
			name: "429 with Retry-After as a date, then 200",
			replies: []reply{{status: 429, header: map[string]string{"Retry-After": epoch.Add(5 * time.Second).Format(http.TimeFormat)}},
				{status: 200, header: protobufHeader, body: partial(0, "")}},
			requests: 2, waits: exactly(5 * time.Second),
		},
		{
			name:     "a Retry-After shorter than the backoff waits the backoff",
			replies:  []reply{{status: 503, header: map[string]string{"Retry-After": "0"}}, {status: 200}},
			requests: 2, waits: within(time.Second),
		},
		{
			name:     "502, 504, 503 back off doubling, then 200",
			replies:  []reply{{status: 502}, {status: 504}, {status: 503}, {status: 200}},
			requests: 4, waits: within(time.Second, 2*time.Second, 4*time.Second),
		},
		{
			name:     "an attempt that times out is retried",
			timeout:  10 * time.Millisecond, // the collector hangs: ends whatever the machine's speed
			replies:  []reply{{hang: true}, {status: 200}},
			requests: 2, waits: within(time.Second),
		},
		{
			name:     "a dropped connection is retried",
			replies:  []reply{{drop: true}, {status: 200}},
			requests: 2, waits: within(time.Second),
		},
		{
			name: "400 fails at once with the collector's message",
			replies: []reply{{status: 400, header: protobufHeader,
				body: marshal(t, &rpcstatus.Status{Code: 3, Message: "span 3 has no trace id"})}},
			requests: 1, waits: exactly(),
			check: func(t *testing.T, err error) {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != 400 || se.Message != "span 3 has no trace id" {
					t.Errorf("error %v, want a StatusError 400 with the collector's message", err)
				}
			},
		},
		{
			name:     "500 is not retried",
			replies:  []reply{{status: 500, header: map[string]string{"Content-Type": "text/plain"}, body: []byte("  down\n for\tnow ")}},
			requests: 1, waits: exactly(),
			check: func(t *testing.T, err error) {
				if want := "collector answered 500 Internal Server Error: down for now"; !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to say %q", err, want)
				}
			},
		},
		{
			name:     "partial success",
			replies:  []reply{{status: 200, header: protobufHeader, body: partial(3, "3 spans too old")}},
			requests: 1, waits: exactly(),
			check: func(t *testing.T, err error) {
				var ps *PartialSuccessError
				if !errors.As(err, &ps) || *ps != (PartialSuccessError{Rejected: 3, Message: "3 spans too old"}) {
					t.Errorf("error %v, want a PartialSuccessError of 3 spans", err)
				}
			},
		},
		{
			name:     "success with a warning",
			replies:  []reply{{status: 200, header: protobufHeader, body: partial(0, "slow down")}},
			requests: 1, waits: exactly(),
			check: func(t *testing.T, err error) {
				var ps *PartialSuccessError
				if !errors.As(err, &ps) || ps.Rejected != 0 || !strings.Contains(err.Error(), "warning: slow down") {
					t.Errorf("error %v, want the warning", err)
				}
			},
		},
		{
			name:     "an undecodable response to a 200",
			replies:  []reply{{status: 200, header: protobufHeader, body: []byte{0x0a, 0x05}}},
			requests: 1, waits: exactly(),
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "spans taken") {
					t.Errorf("error %v, want one saying the spans were taken", err)
				}
			},
		},
		{
			name:     "a Retry-After past the longest backoff waits that",
			replies:  []reply{{status: 503, header: map[string]string{"Retry-After": "3600"}}, {status: 200}},
			requests: 2, waits: exactly(DefaultExportMaxBackoff),
		},
		{
			name:     "the attempts are spent",
			attempts: 3,
			replies:  []reply{{status: 503}, {status: 502}, {status: 429}, {status: 200}},
			requests: 3, waits: within(time.Second, 2*time.Second),
			check: func(t *testing.T, err error) {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != 429 {
					t.Errorf("error %v, want the last attempt's 429", err)
				}
			},
		},
		{
			name:     "the context ends during the backoff",
			replies:  []reply{{status: 503}, {status: 200}},
			cancel:   true,
			requests: 1, waits: within(time.Second),
			check: func(t *testing.T, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("error %v, want context.Canceled", err)
				}
			},
		},
	}
	spans := fixtureSpans(t)[1:3]
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			col := &scripted{replies: tc.replies}
			srv := httptest.NewServer(col)
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			clock := &fakeClock{now: epoch}
			if tc.cancel {
				clock.onSleep = func(ctx context.Context) error {
					cancel()
					<-ctx.Done()
					return ctx.Err()
				}
			}
			exp, err := NewExporter(srv.URL, &ExporterOptions{Timeout: tc.timeout, Retry: &resilience.Policy{Attempts: cmp.Or(tc.attempts, DefaultExportAttempts),
				Base: DefaultExportBackoff, Max: DefaultExportMaxBackoff, Wait: clock.Sleep}})
			if err != nil {
				t.Fatal(err)
			}
			exp.now = clock.Now
			err = exp.ExportSpans(ctx, spans)
			if tc.check == nil && err != nil {
				t.Errorf("ExportSpans: %v", err)
			}
			if tc.check != nil {
				if err == nil {
					t.Fatal("ExportSpans succeeded")
				}
				tc.check(t, err)
			}
			if n := col.requests(); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if !tc.waits(clock.waits) {
				t.Errorf("waits %v", clock.waits)
			}
		})
	}
}

// TestExporterHeaders sends the configured headers and keeps their
// values out of every error, even one quoting a collector that echoes
// them back.
func TestExporterHeaders(t *testing.T) {
	const key = "sk-live-0123456789"
	echo := func(status int, pad int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			got := r.Header.Get("X-Api-Key")
			if status == 200 {
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.Write(marshal(t, &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
					RejectedSpans: 1, ErrorMessage: "key " + got + " may not send span 2"}}))
				return
			}
			http.Error(w, strings.Repeat("x", pad)+" bad key "+got, status)
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		marked  bool // the error shows where the key was
	}{
		{"refused, echoing the key", echo(http.StatusUnauthorized, 0), true},
		{"partial success echoing the key", echo(http.StatusOK, 0), true},
		{"refused, echoing the key where the quote is cut", echo(http.StatusUnauthorized, maxCollectorMessage-20), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = r.Header.Clone()
				mu.Unlock()
				tc.handler(w, r)
			}))
			t.Cleanup(srv.Close)
			exp, err := NewExporter(srv.URL, &ExporterOptions{UserAgent: "novaos-otlp/v9",
				Headers: map[string]secret.Value{"X-Api-Key": secret.New(key), "X-Tenant": secret.New("acme")}})
			if err != nil {
				t.Fatal(err)
			}
			err = exp.ExportSpans(context.Background(), fixtureSpans(t)[:2])
			if err == nil {
				t.Fatal("ExportSpans succeeded")
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(s, key[:9]) {
					t.Errorf("an error shows the key: %s", strings.ReplaceAll(s, key, "<the key>"))
				}
			}
			if tc.marked && !strings.Contains(err.Error(), secret.Redacted) {
				t.Errorf("error %q does not show where the key was taken out", strings.ReplaceAll(err.Error(), key, "<the key>"))
			}
			mu.Lock()
			defer mu.Unlock()
			want := map[string]string{"X-Api-Key": key, "X-Tenant": "acme", "User-Agent": "novaos-otlp/v9", "Content-Type": "application/x-protobuf"}
			for k, v := range want {
				if seen.Get(k) != v {
					t.Errorf("header %s not sent as configured", k)
				}
			}
		})
	}
}

func TestNewExporterRefuses(t *testing.T) {
	const key = "sk-live-0123456789"
	tests := []struct {
		name     string
		endpoint string
		opts     *ExporterOptions
	}{
		{"no scheme", "collector:4318", nil},
		{"credentials in the URL", "http://user:" + key + "@collector:4318", nil},
		{"header name", "http://collector:4318", &ExporterOptions{Headers: map[string]secret.Value{"X Key": secret.New(key)}}},
		{"header value", "http://collector:4318", &ExporterOptions{Headers: map[string]secret.Value{"X-Key": secret.New(key + "\r\nX-Evil: 1")}}},
		{"negative response size", "http://collector:4318", &ExporterOptions{MaxResponseBytes: -1}},
		{"negative timeout", "http://collector:4318", &ExporterOptions{Timeout: -time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewExporter(tc.endpoint, tc.opts)
			if err == nil {
				t.Fatal("NewExporter succeeded")
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the error shows the key")
			}
		})
	}
}

// TestExporterShutdown ends an export waiting to retry, and fails the
// exports after it at once.
func TestExporterShutdown(t *testing.T) {
	col := &scripted{replies: []reply{{status: 503}}}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	waiting := make(chan struct{})
	clock := &fakeClock{now: time.Now(), onSleep: func(ctx context.Context) error {
		close(waiting)
		<-ctx.Done()
		return ctx.Err()
	}}
	exp, err := NewExporter(srv.URL, &ExporterOptions{Retry: &resilience.Policy{Attempts: 3, Wait: clock.Sleep}})
	if err != nil {
		t.Fatal(err)
	}
	spans := fixtureSpans(t)[1:2]
	done := make(chan error, 1)
	go func() { done <- exp.ExportSpans(context.Background(), spans) }()
	<-waiting
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-done; !errors.Is(err, ErrExporterShutdown) {
		t.Errorf("the export under way returned %v, want ErrExporterShutdown", err)
	}
	if err := exp.ExportSpans(context.Background(), spans); !errors.Is(err, ErrExporterShutdown) {
		t.Errorf("an export after Shutdown returned %v, want ErrExporterShutdown", err)
	}
	if n := col.requests(); n != 1 {
		t.Errorf("%d requests, want the one before Shutdown", n)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}
}

// appSpans are n spans like the platform's: one resource, three
// scopes, 5 to 9 attributes each (strings, ints, a bool), an event on
// one in eight, a link on one in sixteen, an error on one in ten.
func appSpans(n int) []sdktrace.ReadOnlySpan {
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", ServiceName), attribute.String("service.version", "v1.0.0"))
	scopes := []sdkinstrumentation.Scope{{Name: "novaos.dev/novaos"}, {Name: "novaos.dev/novaos/llm"}, {Name: "novaos.dev/novaos/toolgw"}}
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		attrs := []attribute.KeyValue{
			attribute.String("http.request.method", "POST"),
			attribute.String("url.path", "/a2a/tenants/acme/agents/support"),
			attribute.Int("http.response.status_code", 200),
			attribute.String("server.address", "novaos.internal"),
			attribute.String("novaos.tenant", "acme"),
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", "gpt-4o"),
			attribute.Int64("gen_ai.usage.input_tokens", int64(100+i)),
			attribute.Bool("novaos.cached", i%2 == 0),
		}
		s := tracetest.SpanStub{
			Name:        "chat gpt-4o",
			SpanContext: spanContext(byte(i/3), byte(i), trace.FlagsSampled, false, trace.TraceState{}),
			Parent:      spanContext(byte(i/3), byte(i+1), trace.FlagsSampled, i%3 == 0, trace.TraceState{}),
			SpanKind:    trace.SpanKind(1 + i%5),
			StartTime:   start.Add(time.Duration(i) * time.Millisecond), EndTime: start.Add(time.Duration(i+3) * time.Millisecond),
			Attributes: attrs[:5+i%5], Resource: res, InstrumentationScope: scopes[i%3],
		}
		if i%8 == 0 {
			s.Events = []sdktrace.Event{{Name: "retry", Time: s.StartTime, Attributes: attrs[2:3]}}
		}
		if i%16 == 0 {
			s.Links = []sdktrace.Link{{SpanContext: spanContext(9, byte(i), trace.FlagsSampled, true, trace.TraceState{})}}
		}
		if i%10 == 0 {
			s.Status = sdktrace.Status{Code: codes.Error, Description: "upstream failed"}
		}
		stubs[i] = s
	}
	return stubs.Snapshots()
}

// maxEncodeAllocs is what encoding a batch of scalar attributes, events
// and links may allocate once the encoder has grown to it: nothing. (A
// slice-, map- or bytes-valued attribute may cost one: the copy the
// attribute package hands its value out as.)
const maxEncodeAllocs = 0

func TestEncodeAllocs(t *testing.T) {
	spans := appSpans(100)
	var e spanEncoder
	e.encode(spans) // grows the buffer and the groups' maps once
	if n := testing.AllocsPerRun(20, func() { e.encode(spans) }); n > maxEncodeAllocs {
		t.Errorf("encoding 100 spans allocates %v times, want at most %d", n, maxEncodeAllocs)
	}
}

// BenchmarkExportSpans exports a batch the size of the batch span
// processor's (512 spans) to a collector on loopback, with
// OpenTelemetry's otlptracehttp exporter and ours, and the encoding
// alone with ours.
func BenchmarkExportSpans(b *testing.B) {
	spans := appSpans(512)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(srv.Close)
	ctx := context.Background()
	b.Run("otlptracehttp", func(b *testing.B) {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+TracesPath))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { exp.Shutdown(ctx) })
		b.ReportAllocs()
		for b.Loop() {
			if err := exp.ExportSpans(ctx, spans); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("novaos", func(b *testing.B) {
		exp, err := NewExporter(srv.URL, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { exp.Shutdown(ctx) })
		b.ReportAllocs()
		for b.Loop() {
			if err := exp.ExportSpans(ctx, spans); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("novaos-encode", func(b *testing.B) {
		var e spanEncoder
		b.ReportAllocs()
		for b.Loop() {
			e.encode(spans)
		}
		b.SetBytes(int64(len(e.buf)))
	})
}
