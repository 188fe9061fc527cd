package llm

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// BenchmarkStreamDecode reads a 1000-chunk answer: the SSE decoder and
// each chunk's JSON, as Stream.Next does.
func BenchmarkStreamDecode(b *testing.B) {
	var in bytes.Buffer
	for i := range 1000 {
		c := Chunk{ID: "chatcmpl-1", Object: ObjectChatCompletionChunk, Created: 1, Model: "gpt-4o",
			Choices: []ChunkChoice{{Delta: Delta{Content: strings.Repeat("w", i%7+1) + " "}}}}
		j, _ := json.Marshal(c)
		in.WriteString("data: ")
		in.Write(j)
		in.WriteString("\n\n")
	}
	in.WriteString("data: [DONE]\n\n")
	b.SetBytes(int64(in.Len()))
	b.ReportAllocs()
	for b.Loop() {
		d := NewEventReader(bytes.NewReader(in.Bytes()), DefaultMaxEventBytes)
		n := 0
		for {
			ev, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if bytes.Equal(ev.Data, doneMarker) {
				continue
			}
			var c streamChunk
			if err := json.Unmarshal(ev.Data, &c); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 1000 {
			b.Fatalf("%d chunks", n)
		}
	}
}
