package a2a

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/internal/schematest"
)

// awkward strings every encoder must escape exactly like encoding/json.
var awkward = []string{
	"",
	"plain",
	`<script>alert("x&y")</script>`,
	"quote\" backslash\\ slash/",
	"controls \x00\x01\x1f \b\f\n\r\t",
	"unicode: héllo, 日本語, emoji 🚀, combining e\u0301",
	"separators \u2028 and \u2029",
	"invalid utf-8: \xff\xfe and truncated \xe2\x82",
	"del \x7f and nbsp \u00a0",
}

func messagesForEncoding() map[string]*Message {
	ms := map[string]*Message{
		"minimal":           {MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("hi")}},
		"unspecified role":  {MessageID: "m", Parts: []Part{TextPart("hi")}},
		"nil parts":         {MessageID: "m", Role: RoleAgent},
		"empty parts":       {MessageID: "m", Role: RoleAgent, Parts: []Part{}},
		"empty collections": {MessageID: "m", Role: RoleAgent, Parts: []Part{TextPart("")}, Metadata: map[string]any{}, Extensions: []string{}, ReferenceTaskIDs: []string{}},
		"every field": {
			MessageID: "m-1", ContextID: "c-1", TaskID: "t-1", Role: RoleAgent,
			Parts: []Part{
				TextPart("text"),
				RawPart([]byte{0, 1, 2, 0xfe, 0xff}, "f.bin", "application/octet-stream"),
				RawPart(nil, "", ""),
				URLPart("https://example.com/a?b=c&d=<e>", "a.txt", "text/plain"),
				{Kind: PartData, Data: json.RawMessage(`{"k":1}`), MediaType: "application/json"},
				{Kind: PartData},
				{Kind: PartData, Data: json.RawMessage(" [ 1 , \"a<b>&c\u2028\" , {\"x\" : null} ]\n")},
				{Kind: PartData, Data: json.RawMessage(`"str"`)},
				{Kind: PartText, Text: "with metadata", Metadata: map[string]any{"z": 1.0, "a": "first", "M": true}},
			},
			Metadata:         map[string]any{"b": "2", "a": "1", "a_b": []any{1.0, "x", nil, false}},
			Extensions:       []string{"https://ext.example/a", "urn:b"},
			ReferenceTaskIDs: []string{"t-0"},
		},
		"metadata values": {MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("x")}, Metadata: map[string]any{
			"floats":   []any{0.0, math.Copysign(0, -1), 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789.123, -2.5e-10, math.MaxFloat64, math.SmallestNonzeroFloat64},
			"float32":  float32(3.14),
			"float32e": float32(1e22),
			"ints":     []any{0, -1, int64(math.MaxInt64), int32(-7), uint64(math.MaxUint64), int8(3), uint(9)},
			"numbers":  []any{json.Number("12345678901234567890"), json.Number("-1.5e300"), json.Number("")},
			"raw":      json.RawMessage(` {"a" : [1, 2]} `),
			"nilraw":   json.RawMessage(nil),
			"nested":   map[string]any{"deeper": map[string]any{"deepest": []any{map[string]any{}, []any{}}}},
			"nilmap":   map[string]any(nil),
			"nilslice": []any(nil),
			"strings":  []string{"typed", "slice"},
			"struct":   struct{ A int }{A: 1},
			"bytes":    []byte("hi"),
			"<html>":   "&",
			"":         "empty key",
			"\xff":     "invalid key",
			"日本":       "unicode key",
		}},
	}
	for i, s := range awkward {
		ms["awkward "+string(rune('a'+i))] = &Message{
			MessageID: s, ContextID: s, TaskID: s, Role: RoleUser,
			Parts:      []Part{TextPart(s), URLPart(s, s, s)},
			Metadata:   map[string]any{s: s},
			Extensions: []string{s},
		}
	}
	return ms
}

func tasksForEncoding() map[string]*Task {
	ts := map[string]*Task{
		"small":        smallTask(),
		"big":          bigTask(),
		"zero":         {},
		"id only":      {ID: "t"},
		"no timestamp": {ID: "t", Status: TaskStatus{State: TaskStateSubmitted}},
		"non-UTC timestamp with nanos": {ID: "t", Status: TaskStatus{State: TaskStateFailed,
			Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.FixedZone("X", -7*3600))}},
		"year 1 timestamp":          {ID: "t", Status: TaskStatus{State: TaskStateCanceled, Timestamp: time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC)}},
		"sub-millisecond timestamp": {ID: "t", Status: TaskStatus{State: TaskStateWorking, Timestamp: time.Date(1, 1, 1, 0, 0, 0, 999999, time.UTC)}},
		"empty artifact parts":      {ID: "t", Artifacts: []Artifact{{ArtifactID: "a"}}, History: []Message{}},
		"artifact every field": {ID: "t", Artifacts: []Artifact{{ArtifactID: "a", Name: "<n>", Description: "d&", Parts: []Part{TextPart("x")},
			Metadata: map[string]any{"k": "v"}, Extensions: []string{"e"}}}},
	}
	for s := TaskStateUnspecified; s <= TaskStateAuthRequired; s++ {
		ts["state "+s.String()] = &Task{ID: "t", Status: TaskStatus{State: s}}
	}
	ts["out of range state"] = &Task{ID: "t", Status: TaskStatus{State: TaskState(42)}}
	for name, m := range messagesForEncoding() {
		ts["history "+name] = &Task{ID: "t", History: []Message{*m}, Status: TaskStatus{Message: m}}
	}
	return ts
}

// checkSame compares an encoder's output with the reference and the
// package's MarshalJSON path, and checks that the prefix survives.
func checkSame(t *testing.T, want []byte, wantErr error, appendFn func([]byte) ([]byte, error), marshal func() ([]byte, error)) []byte {
	t.Helper()
	prefix := []byte("prefix:")
	got, err := appendFn(prefix)
	if wantErr != nil {
		if err == nil {
			t.Fatalf("append: no error, want one like %v", wantErr)
		}
		if _, merr := marshal(); merr == nil {
			t.Fatalf("json.Marshal: no error, want one like %v", wantErr)
		}
		return nil
	}
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("append dropped the prefix: %q", got)
	}
	got = got[len(prefix):]
	if !bytes.Equal(got, want) {
		t.Fatalf("append output differs from encoding/json\n got: %s\nwant: %s", got, want)
	}
	viaJSON, err := marshal()
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if !bytes.Equal(viaJSON, want) {
		t.Fatalf("json.Marshal output differs from reference\n got: %s\nwant: %s", viaJSON, want)
	}
	return got
}

func TestAppendTaskMatchesEncodingJSON(t *testing.T) {
	for name, task := range tasksForEncoding() {
		t.Run(name, func(t *testing.T) {
			want, wantErr := json.Marshal(toRefTask(task))
			got := checkSame(t, want, wantErr,
				func(b []byte) ([]byte, error) { return AppendTask(b, task) },
				func() ([]byte, error) { return json.Marshal(task) })
			if got != nil {
				schematest.Validate(t, "Task", got)
			}
		})
	}
}

func TestAppendMessageMatchesEncodingJSON(t *testing.T) {
	for name, m := range messagesForEncoding() {
		t.Run(name, func(t *testing.T) {
			want, wantErr := json.Marshal(toRefMessage(m))
			got := checkSame(t, want, wantErr,
				func(b []byte) ([]byte, error) { return AppendMessage(b, m) },
				func() ([]byte, error) { return json.Marshal(m) })
			if got != nil {
				schematest.Validate(t, "Message", got)
			}
		})
	}
}

func TestAppendStreamResponseMatchesEncodingJSON(t *testing.T) {
	frames := map[string]*StreamResponse{
		"status update":  statusUpdateFrame(),
		"artifact chunk": artifactChunkFrame(),
		"task":           {Task: bigTask()},
		"message":        {Message: messagesForEncoding()["every field"]},
		"empty":          {},
		"last chunk with metadata": {ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", LastChunk: true,
			Artifact: Artifact{ArtifactID: "a", Parts: []Part{TextPart("end")}}, Metadata: map[string]any{"seq": 7.0}}},
		"status with metadata": {StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t", ContextID: "", Status: TaskStatus{State: TaskStateInputRequired},
			Metadata: map[string]any{"why": "<need input>"}}},
		// Not a valid oneof, but the encoder must still match encoding/json.
		"several members": {Task: smallTask(), Message: &Message{MessageID: "m", Role: RoleAgent}, StatusUpdate: statusUpdateFrame().StatusUpdate,
			ArtifactUpdate: artifactChunkFrame().ArtifactUpdate},
	}
	for name, f := range frames {
		t.Run(name, func(t *testing.T) {
			want, wantErr := json.Marshal(toRefStream(f))
			got := checkSame(t, want, wantErr,
				func(b []byte) ([]byte, error) { return AppendStreamResponse(b, f) },
				func() ([]byte, error) { return json.Marshal(f) })
			if got != nil {
				schematest.Validate(t, "Stream Response", got)
			}
		})
	}
}

func TestAppendSendMessageResponseMatchesEncodingJSON(t *testing.T) {
	resps := map[string]*SendMessageResponse{
		"task":    {Task: bigTask()},
		"message": {Message: &Message{MessageID: "m", ContextID: "c", Role: RoleAgent, Parts: []Part{TextPart("done")}}},
		"empty":   {},
		"both":    {Task: smallTask(), Message: &Message{MessageID: "m", Role: RoleAgent}},
	}
	for name, r := range resps {
		t.Run(name, func(t *testing.T) {
			ref := struct {
				Task    *refTask    `json:"task,omitempty"`
				Message *refMessage `json:"message,omitempty"`
			}{toRefTask(r.Task), toRefMessage(r.Message)}
			want, wantErr := json.Marshal(ref)
			got := checkSame(t, want, wantErr,
				func(b []byte) ([]byte, error) { return AppendSendMessageResponse(b, r) },
				func() ([]byte, error) { return json.Marshal(r) })
			if got != nil {
				schematest.Validate(t, "Send Message Response", got)
			}
		})
	}
}

func TestAppendSendMessageRequestMatchesEncodingJSON(t *testing.T) {
	hist := int32(3)
	reqs := map[string]*SendMessageRequest{
		"minimal":     {Message: &Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("hi")}}},
		"nil message": {},
		"every field": {
			Tenant:  "t<&>",
			Message: messagesForEncoding()["every field"],
			Configuration: &SendMessageConfiguration{
				AcceptedOutputModes: []string{"text/plain"}, HistoryLength: &hist, ReturnImmediately: true,
				TaskPushNotificationConfig: &TaskPushNotificationConfig{URL: "https://hook", Token: "tok"},
			},
			Metadata: map[string]any{"z": 1.0, "a": []any{"x", nil}},
		},
		"empty metadata": {Message: &Message{MessageID: "m"}, Metadata: map[string]any{}},
	}
	for name, r := range reqs {
		t.Run(name, func(t *testing.T) {
			ref := struct {
				Tenant        string                    `json:"tenant,omitempty"`
				Message       *refMessage               `json:"message"`
				Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
				Metadata      map[string]any            `json:"metadata,omitempty"`
			}{r.Tenant, toRefMessage(r.Message), r.Configuration, r.Metadata}
			want, wantErr := json.Marshal(ref)
			got := checkSame(t, want, wantErr,
				func(b []byte) ([]byte, error) { return AppendSendMessageRequest(b, r) },
				func() ([]byte, error) { return json.Marshal(r) })
			if got != nil && r.Message != nil {
				schematest.Validate(t, "Send Message Request", got)
			}
		})
	}
}

func TestAppendNil(t *testing.T) {
	tests := []struct {
		name string
		fn   func() ([]byte, error)
	}{
		{"task", func() ([]byte, error) { return AppendTask(nil, nil) }},
		{"message", func() ([]byte, error) { return AppendMessage(nil, nil) }},
		{"stream response", func() ([]byte, error) { return AppendStreamResponse(nil, nil) }},
		{"send message response", func() ([]byte, error) { return AppendSendMessageResponse(nil, nil) }},
		{"send message request", func() ([]byte, error) { return AppendSendMessageRequest(nil, nil) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn()
			if err != nil || string(got) != "null" {
				t.Fatalf("got %q, %v; want null", got, err)
			}
		})
	}
}

func TestAppendErrors(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		m    *Message
	}{
		{"invalid data part", &Message{MessageID: "m", Parts: []Part{{Kind: PartData, Data: json.RawMessage(`{"a":`)}}}},
		{"two values in data part", &Message{MessageID: "m", Parts: []Part{{Kind: PartData, Data: json.RawMessage(`1 2`)}}}},
		{"NaN in metadata", &Message{MessageID: "m", Metadata: map[string]any{"x": math.NaN()}}},
		{"Inf in part metadata", &Message{MessageID: "m", Parts: []Part{{Kind: PartText, Metadata: map[string]any{"x": math.Inf(1)}}}}},
		{"invalid json.Number", &Message{MessageID: "m", Metadata: map[string]any{"x": json.Number("1.")}}},
		{"empty raw metadata", &Message{MessageID: "m", Metadata: map[string]any{"x": json.RawMessage{}}}},
		{"unsupported type", &Message{MessageID: "m", Metadata: map[string]any{"x": make(chan int)}}},
		{"cyclic metadata", &Message{MessageID: "m", Metadata: cyclic}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := AppendMessage(nil, tc.m); err == nil {
				t.Error("AppendMessage: no error")
			}
			if _, err := AppendTask(nil, &Task{ID: "t", History: []Message{*tc.m}}); err == nil {
				t.Error("AppendTask: no error")
			}
			if _, err := AppendStreamResponse(nil, &StreamResponse{Message: tc.m}); err == nil {
				t.Error("AppendStreamResponse: no error")
			}
			if _, err := json.Marshal(tc.m); err == nil {
				t.Error("json.Marshal: no error")
			}
		})
	}
}

// A deeply nested metadata value is handed to encoding/json past the inline
// depth limit and must come out the same.
func TestAppendDeepMetadata(t *testing.T) {
	var v any = "leaf"
	for i := range 3 * maxInlineDepth {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	m := &Message{MessageID: "m", Role: RoleUser, Metadata: map[string]any{"deep": v}}
	want, err := json.Marshal(toRefMessage(m))
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendMessage(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("deep metadata differs (len %d vs %d)", len(got), len(want))
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	var all []string
	all = append(all, awkward...)
	for c := range 0x80 {
		all = append(all, "x"+string(rune(c))+"y")
	}
	all = append(all, strings.Repeat("a<", 100), "\u2027\u2028\u2029\u202a", "\xed\xa0\x80", "\xf4\x90\x80\x80")
	for _, s := range all {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestValidNumber(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"0", true}, {"-0", true}, {"12", true}, {"1.5", true}, {"1e5", true}, {"1E+5", true}, {"-1.5e-5", true},
		{"", false}, {"-", false}, {"01", false}, {"1.", false}, {".5", false}, {"1e", false}, {"1e+", false},
		{"+1", false}, {" 1", false}, {"1 ", false}, {"0x10", false}, {"NaN", false}, {"1.5.5", false},
	}
	for _, tc := range tests {
		if got := validNumber(tc.in); got != tc.want {
			t.Errorf("validNumber(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
