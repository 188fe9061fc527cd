package a2a

import (
	"encoding/json"
	"testing"
)

// Benchmarks compare three encodings of the same value:
//   - reflect: encoding/json on tag-only mirror types (the baseline any
//     struct-tag wire model gets),
//   - marshal: json.Marshal on the a2a types (what callers of encoding/json
//     get from this package),
//   - append:  the hand-written Append* encoder into a reused buffer (what
//     the server uses).

func benchEncode(b *testing.B, ref any, v any, appendFn func([]byte) ([]byte, error)) {
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(ref); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = appendFn(buf[:0]); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
}

func BenchmarkEncodeTask(b *testing.B) {
	for _, tc := range []struct {
		name string
		task *Task
	}{{"small", smallTask()}, {"history20", bigTask()}} {
		b.Run(tc.name, func(b *testing.B) {
			benchEncode(b, toRefTask(tc.task), tc.task, func(buf []byte) ([]byte, error) { return AppendTask(buf, tc.task) })
		})
	}
}

func BenchmarkEncodeStreamResponse(b *testing.B) {
	for _, tc := range []struct {
		name  string
		frame *StreamResponse
	}{{"status", statusUpdateFrame()}, {"artifactChunk", artifactChunkFrame()}} {
		b.Run(tc.name, func(b *testing.B) {
			benchEncode(b, toRefStream(tc.frame), tc.frame, func(buf []byte) ([]byte, error) { return AppendStreamResponse(buf, tc.frame) })
		})
	}
}

func benchDecode[T any](b *testing.B, data []byte) {
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v T
			if err := json.Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("a2a.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var v T
			if err := Unmarshal(data, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodeTask(b *testing.B) {
	for _, tc := range []struct {
		name string
		task *Task
	}{{"small", smallTask()}, {"history20", bigTask()}} {
		data, err := AppendTask(nil, tc.task)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) { benchDecode[Task](b, data) })
		snake := []byte(camelToSnakeKeys(string(data)))
		b.Run(tc.name+"/snake_case", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var v Task
				if err := Unmarshal(snake, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeStreamResponse(b *testing.B) {
	for _, tc := range []struct {
		name  string
		frame *StreamResponse
	}{{"status", statusUpdateFrame()}, {"artifactChunk", artifactChunkFrame()}} {
		data, err := AppendStreamResponse(nil, tc.frame)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) { benchDecode[StreamResponse](b, data) })
	}
}

// BenchmarkDecodeSendMessage is the server's read of a SendMessage: the
// envelope, then params with a text part, a data part and metadata.
func BenchmarkDecodeSendMessage(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":"req-1","method":"SendMessage","params":{"message":{"messageId":"9f1c2d3e-0000-4000-8000-000000000001","contextId":"ctx-1","role":"ROLE_USER","parts":[{"text":"please summarise the attached figures for the board"},{"data":{"quarter":"Q3","revenue":[1200.5,1310.25,998],"region":{"name":"EMEA","code":"eu"}},"mediaType":"application/json"}],"metadata":{"trace":"abc","priority":2}},"configuration":{"acceptedOutputModes":["text/plain"]}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, e := DecodeRequest(body)
		if e != nil {
			b.Fatal(e)
		}
		var p SendMessageRequest
		if e := DecodeParams(req.Params, &p); e != nil {
			b.Fatal(e)
		}
	}
}
