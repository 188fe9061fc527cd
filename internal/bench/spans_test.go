package bench

import (
	"net/http/httptest"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/internal/telemetry/otlptest"
)

func TestSpanSink(t *testing.T) {
	export, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a"}, {Name: "b"}}}, {Spans: []*tracepb.Span{{Name: "c"}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "d"}}}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, contentType, encoding string
		body                                      []byte
		status                                    int
	}{
		{"export", "POST", "/v1/traces", "application/x-protobuf", "", export, 200},
		{"identity", "POST", "/v1/traces", "application/x-protobuf", "identity", export, 200},
		{"not protobuf", "POST", "/v1/traces", "application/x-protobuf", "", []byte("\xff\xff\xff"), 400},
		{"json", "POST", "/v1/traces", "application/json", "", []byte("{}"), 415},
		{"gzip", "POST", "/v1/traces", "application/x-protobuf", "gzip", export, 415},
		{"GET", "GET", "/v1/traces", "", "", nil, 405},
		{"metrics path", "POST", "/v1/metrics", "application/x-protobuf", "", export, 404},
		{"too large", "POST", "/v1/traces", "application/x-protobuf", "", make([]byte, maxExportBytes+1), 413},
	}
	sink := &SpanSink{}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	refused := 0
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if status := otlptest.Send(t, tc.method, srv.URL+tc.path, tc.contentType, tc.encoding, tc.body); status != tc.status {
				t.Errorf("status %d, want %d", status, tc.status)
			}
			if tc.status != 200 {
				refused++
			}
		})
	}
	want := SpanCounts{Exports: 2, Spans: 8, Bytes: 2 * int64(len(export)), Refused: int64(refused)}
	if got := sink.Counts(); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
}

// The sink counts the spans of whatever export the official message
// types decode, as they do.
func FuzzCountSpans(f *testing.F) {
	for _, req := range []*coltracepb.ExportTraceServiceRequest{
		{},
		{ResourceSpans: []*tracepb.ResourceSpans{{SchemaUrl: "s", ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a", Attributes: nil}}}}}}},
		{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a"}, {Name: "b"}}}, {}}}, {}}},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req coltracepb.ExportTraceServiceRequest
		if proto.Unmarshal(b, &req) != nil {
			countSpans(b) // must not panic
			return
		}
		var want int64
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				want += int64(len(ss.GetSpans()))
			}
		}
		if got, err := countSpans(b); err != nil || got != want {
			t.Fatalf("countSpans = %d, %v; the decoded export holds %d", got, err, want)
		}
	})
}
