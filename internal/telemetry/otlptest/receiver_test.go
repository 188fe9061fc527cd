package otlptest

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http/httptest"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func exportBody(t testing.TB) []byte {
	t.Helper()
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
			Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "novaos"}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			Name: "GET /healthz", TraceId: bytes.Repeat([]byte{0xab}, 16), SpanId: bytes.Repeat([]byte{1}, 8),
			ParentSpanId: bytes.Repeat([]byte{2}, 8), Kind: tracepb.Span_SPAN_KIND_SERVER,
			Links: []*tracepb.Span_Link{{TraceId: bytes.Repeat([]byte{0xcd}, 16), SpanId: bytes.Repeat([]byte{3}, 8)}},
			Attributes: []*commonpb.KeyValue{
				{Key: "http.response.status_code", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 200}}},
				{Key: "ok", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: true}}},
			},
		}}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReceiver(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name, method, path, contentType, encoding string
		body                                      []byte
		status                                    int
	}{
		{"protobuf", "POST", TracesPath, "application/x-protobuf", "", exportBody(t), 200},
		{"gzipped", "POST", TracesPath, "application/x-protobuf", "gzip", gz(exportBody(t)), 200},
		{"json refused", "POST", TracesPath, "application/json", "", []byte("{}"), 415},
		{"not protobuf", "POST", TracesPath, "application/x-protobuf", "", []byte("\xff\xff\xff"), 400},
		{"bad gzip", "POST", TracesPath, "application/x-protobuf", "gzip", []byte("plain"), 400},
		{"unknown encoding", "POST", TracesPath, "application/x-protobuf", "br", exportBody(t), 400},
		{"GET", "GET", TracesPath, "", "", nil, 405},
		{"metrics path", "POST", "/v1/metrics", "application/x-protobuf", "", exportBody(t), 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Start(t)
			if status := Send(t, tc.method, r.URL()+tc.path, tc.contentType, tc.encoding, tc.body); status != tc.status {
				t.Fatalf("status %d, want %d", status, tc.status)
			}
			if tc.status != 200 {
				if n := len(r.Spans()); n != 0 {
					t.Errorf("%d spans kept from a refused export", n)
				}
				return
			}
			s, err := r.Wait(context.Background(), Named("GET /healthz"))
			if err != nil {
				t.Fatal(err)
			}
			if s.TraceID != "abababababababababababababababab" || s.SpanID != "0101010101010101" || s.ParentSpanID != "0202020202020202" ||
				s.Kind != "SERVER" || s.Attributes["http.response.status_code"] != int64(200) || s.Attributes["ok"] != true ||
				s.Resource["service.name"] != "novaos" ||
				len(s.Links) != 1 || s.Links[0].TraceID != "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd" || s.Links[0].SpanID != "0303030303030303" {
				t.Errorf("span %+v", s)
			}
		})
	}
}

// Wait returns when the span arrives, not before.
func TestWaitForLaterSpan(t *testing.T) {
	r := Start(t)
	got := make(chan Span, 1)
	go func() {
		s, err := r.Wait(context.Background(), Named("GET /healthz"))
		if err != nil {
			t.Error(err)
		}
		got <- s
	}()
	Send(t, "POST", r.URL()+TracesPath, "application/x-protobuf", "", exportBody(t))
	if s := <-got; s.Name != "GET /healthz" {
		t.Errorf("got %+v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Wait(ctx, Named("never")); err == nil {
		t.Error("Wait for a span never sent returned no error")
	}
}

// WaitSpans returns once the spans received meet the condition.
func TestWaitSpans(t *testing.T) {
	r := Start(t)
	two := func(spans []Span) bool { return len(spans) >= 2 }
	got := make(chan []Span, 1)
	go func() {
		spans, err := r.WaitSpans(context.Background(), two)
		if err != nil {
			t.Error(err)
		}
		got <- spans
	}()
	for range 2 {
		Send(t, "POST", r.URL()+TracesPath, "application/x-protobuf", "", exportBody(t))
	}
	if spans := <-got; len(spans) != 2 {
		t.Errorf("WaitSpans returned %d spans, want 2", len(spans))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if spans, err := r.WaitSpans(ctx, func(s []Span) bool { return len(s) > 2 }); err == nil || len(spans) != 2 {
		t.Errorf("WaitSpans for a third span: %d spans, %v; want the 2 received and an error", len(spans), err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(exportBody(f), false)
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00}, false)
	f.Add([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, body []byte, gzipped bool) {
		req := httptest.NewRequest("POST", TracesPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if gzipped {
			req.Header.Set("Content-Encoding", "gzip")
		}
		rec := httptest.NewRecorder()
		(&Receiver{changed: make(chan struct{})}).ServeHTTP(rec, req)
		if rec.Code != 200 && rec.Code != 400 {
			t.Errorf("status %d", rec.Code)
		}
	})
}
