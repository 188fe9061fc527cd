package toolcall_test

import (
	"encoding/json"
	"testing"

	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/internal/exttest"
)

func TestGolden(t *testing.T) {
	// The extension's Python usage sample: tool_call_metadata("call_1", "file_bug", "completed", result="BUG-12").
	exttest.Golden(t, toolcall.Metadata(toolcall.Payload{ToolCallID: "call_1", Name: "file_bug", Phase: toolcall.PhaseCompleted, Result: "BUG-12"}),
		toolcall.URI, `{"toolCallId": "call_1", "name": "file_bug", "phase": "completed", "result": "BUG-12"}`)
	exttest.Golden(t, toolcall.Metadata(toolcall.Payload{ToolCallID: "c", Name: "search", Phase: toolcall.PhaseStarted, Args: map[string]any{"q": "go"}}),
		toolcall.URI, `{"toolCallId":"c","name":"search","phase":"started","args":{"q":"go"}}`)
	exttest.Golden(t, toolcall.Metadata(toolcall.Payload{ToolCallID: "c", Name: "search", Phase: toolcall.PhaseFailed, Error: "timeout"}),
		toolcall.URI, `{"toolCallId":"c","name":"search","phase":"failed","error":"timeout"}`)
}

func TestRoundTrip(t *testing.T) {
	exttest.RoundTrip(t, toolcall.URI, toolcall.Metadata, toolcall.Parse, []toolcall.Payload{
		{ToolCallID: "call_1", Name: "file_bug", Phase: toolcall.PhaseStarted, Args: map[string]any{"title": "crash", "n": 2.0}},
		{ToolCallID: "call_1", Name: "file_bug", Phase: toolcall.PhaseCompleted, Result: []any{"BUG-12", false}},
		{ToolCallID: "call_2", Name: "fetch", Phase: toolcall.PhaseFailed, Error: "status 503"},
	})
}

func TestParse(t *testing.T) {
	obj := func(s string) map[string]any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return map[string]any{toolcall.URI: v}
	}
	exttest.RunParse(t, toolcall.Parse, []exttest.Case[toolcall.Payload]{
		{Name: "absent", MD: map[string]any{"skillId": "x"}},
		{Name: "started", MD: obj(`{"toolCallId":"1","name":"n","phase":"started","args":{"a":1},"parentId":"p"}`), WantOK: true,
			Want: toolcall.Payload{ToolCallID: "1", Name: "n", Phase: toolcall.PhaseStarted, Args: map[string]any{"a": 1.0}}},
		{Name: "id missing", MD: obj(`{"name":"n","phase":"started"}`), WantOK: true, WantErr: true},
		{Name: "empty name", MD: obj(`{"toolCallId":"1","name":"","phase":"started"}`), WantOK: true, WantErr: true},
		{Name: "unknown phase", MD: obj(`{"toolCallId":"1","name":"n","phase":"running"}`), WantOK: true, WantErr: true},
		{Name: "error not a string", MD: obj(`{"toolCallId":"1","name":"n","phase":"failed","error":{"code":1}}`), WantOK: true, WantErr: true},
		{Name: "id a number", MD: obj(`{"toolCallId":1,"name":"n","phase":"started"}`), WantOK: true, WantErr: true},
	})
}

var benchPayload = toolcall.Payload{ToolCallID: "call_1", Name: "file_bug", Phase: toolcall.PhaseCompleted, Result: "BUG-12"}

func BenchmarkMetadata(b *testing.B) {
	exttest.BenchMetadata(b, func() map[string]any { return toolcall.Metadata(benchPayload) })
}

func BenchmarkParse(b *testing.B) {
	exttest.BenchParse(b, toolcall.Metadata(benchPayload), toolcall.Parse)
}

func BenchmarkParseNaive(b *testing.B) {
	exttest.BenchNaiveParse[toolcall.Payload](b, toolcall.Metadata(benchPayload), toolcall.URI)
}
