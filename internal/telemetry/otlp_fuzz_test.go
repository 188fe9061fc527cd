package telemetry

import (
	"net/http"
	"testing"
	"unicode/utf8"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
)

// FuzzPartialSuccess wants the collector's response read as protobuf
// reads it: where proto.Unmarshal takes a response, parsePartialSuccess
// finds the same rejected count and message; nothing panics.
func FuzzPartialSuccess(f *testing.F) {
	for _, m := range []*coltracepb.ExportTraceServiceResponse{
		{},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 3, ErrorMessage: "3 spans too old"}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{RejectedSpans: -1}},
		{PartialSuccess: &coltracepb.ExportTracePartialSuccess{ErrorMessage: "slow down"}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01, 0x0a, 0x03, 0x12, 0x01, 'x'}) // given twice: merged
	f.Add([]byte{0x08, 0x01})                                          // the field as a varint: unknown
	f.Add([]byte{0x0a, 0x02, 0x12})                                    // truncated
	f.Add([]byte{0x0b, 0x08, 0x01, 0x0c})                              // a group
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parsePartialSuccess(b)
		var want coltracepb.ExportTraceServiceResponse
		if perr := proto.Unmarshal(b, &want); perr != nil {
			return // protobuf refuses it; ours may be laxer (UTF-8)
		}
		if err != nil {
			t.Fatalf("proto.Unmarshal takes %x, parsePartialSuccess: %v", b, err)
		}
		ps := want.GetPartialSuccess()
		if got.Rejected != ps.GetRejectedSpans() || got.Message != ps.GetErrorMessage() {
			t.Fatalf("%x: got %d %q, proto.Unmarshal %d %q", b, got.Rejected, got.Message, ps.GetRejectedSpans(), ps.GetErrorMessage())
		}
	})
}

// FuzzCollectorMessage wants the text an error quotes from a refusal,
// tidied, short, valid UTF-8 and, from a google.rpc.Status, its message.
func FuzzCollectorMessage(f *testing.F) {
	st, err := proto.Marshal(&rpcstatus.Status{Code: 3, Message: "span 3 has no trace id"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(st, true)
	f.Add([]byte("bad key\n\tfor tenant"), false)
	f.Add([]byte("\xff\xfe"), false)
	f.Fuzz(func(t *testing.T, b []byte, protobuf bool) {
		h := http.Header{"Content-Type": {"text/plain"}}
		if protobuf {
			h.Set("Content-Type", "application/x-protobuf")
		}
		msg := tidy(collectorMessage(h, b))
		if !utf8.ValidString(msg) || len(msg) > maxCollectorMessage+len("…") {
			t.Fatalf("collectorMessage(%x) = %q", b, msg)
		}
		var s rpcstatus.Status
		if protobuf && proto.Unmarshal(b, &s) == nil && msg != tidy(s.Message) {
			t.Fatalf("collectorMessage(%x) = %q, want the status's %q", b, msg, s.Message)
		}
	})
}
