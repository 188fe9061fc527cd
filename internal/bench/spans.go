package bench

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"

	"novaos.dev/novaos/internal/telemetry"
)

// maxExportBytes bounds one export request SpanSink reads; the SDK's
// batches of 512 spans are far below it.
const maxExportBytes = 16 << 20

// SpanSink is an OTLP/HTTP trace collector that walks each export,
// counts its spans and drops them: a benchmark's servers export to it as
// to a real collector, without the process keeping what they send. It
// takes POST /v1/traces in protobuf, uncompressed, as the platform's
// exporter sends it. The zero value is ready to use.
type SpanSink struct {
	exports, spans, bytes, refused atomic.Int64
}

// SpanCounts are what a SpanSink took.
type SpanCounts struct {
	// Exports are the export requests decoded, Spans the spans they held,
	// Bytes their bodies' size; Refused the requests that could not be
	// decoded.
	Exports int64 `json:"exports"`
	Spans   int64 `json:"spans"`
	Bytes   int64 `json:"bytes"`
	Refused int64 `json:"refused"`
}

// Counts are the sink's counts so far.
func (s *SpanSink) Counts() SpanCounts {
	return SpanCounts{Exports: s.exports.Load(), Spans: s.spans.Load(), Bytes: s.bytes.Load(), Refused: s.refused.Load()}
}

// ServeHTTP takes one export request and answers as OTLP/HTTP says.
func (s *SpanSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, err := s.take(r)
	if err != nil {
		s.refused.Add(1)
		http.Error(w, err.Error(), status)
		return
	}
	// An empty ExportTraceServiceResponse: full success.
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (s *SpanSink) take(r *http.Request) (status int, err error) {
	switch ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";"); {
	case r.URL.Path != telemetry.TracesPath:
		return http.StatusNotFound, fmt.Errorf("spans are taken at %s", telemetry.TracesPath)
	case r.Method != http.MethodPost:
		return http.StatusMethodNotAllowed, fmt.Errorf("POST spans to %s", telemetry.TracesPath)
	case strings.TrimSpace(ct) != "application/x-protobuf":
		return http.StatusUnsupportedMediaType, fmt.Errorf("this sink takes application/x-protobuf, not %q", ct)
	case r.Header.Get("Content-Encoding") != "" && r.Header.Get("Content-Encoding") != "identity":
		return http.StatusUnsupportedMediaType, fmt.Errorf("this sink takes uncompressed exports, not %q", r.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxExportBytes+1))
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("read: %w", err)
	}
	if len(b) > maxExportBytes {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("export over %d bytes", maxExportBytes)
	}
	n, err := countSpans(b)
	if err != nil {
		return http.StatusBadRequest, fmt.Errorf("decode: %w", err)
	}
	s.exports.Add(1)
	s.spans.Add(n)
	s.bytes.Add(int64(len(b)))
	return http.StatusOK, nil
}

// Field numbers on the path to a span: ExportTraceServiceRequest's
// resource_spans, ResourceSpans' scope_spans, ScopeSpans' spans.
var spanPath = [...]protowire.Number{1, 2, 2}

// countSpans counts the spans of an OTLP ExportTraceServiceRequest by
// walking its wire format: the sink runs in the process it measures, and
// decoding every export into messages would charge the server's side
// with work a collector on another machine does.
func countSpans(b []byte) (int64, error) {
	return countAt(b, spanPath[:])
}

func countAt(b []byte, path []protowire.Number) (int64, error) {
	var n int64
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, protowire.ParseError(l)
		}
		b = b[l:]
		if num != path[0] || typ != protowire.BytesType {
			l = protowire.ConsumeFieldValue(num, typ, b)
			if l < 0 {
				return 0, protowire.ParseError(l)
			}
			b = b[l:]
			continue
		}
		v, l := protowire.ConsumeBytes(b)
		if l < 0 {
			return 0, protowire.ParseError(l)
		}
		b = b[l:]
		if len(path) == 1 {
			n++
			continue
		}
		m, err := countAt(v, path[1:])
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}
