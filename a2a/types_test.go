package a2a

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPartUnmarshal(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Part
		wantErr bool
	}{
		{name: "text", in: `{"text":"hi"}`, want: Part{Kind: PartText, Text: "hi"}},
		{name: "empty text", in: `{"text":""}`, want: Part{Kind: PartText}},
		{name: "raw std padded", in: `{"raw":"aGk+Pz8/"}`, want: Part{Kind: PartRaw, Raw: []byte("hi>???")}},
		{name: "raw std unpadded", in: `{"raw":"aGk"}`, want: Part{Kind: PartRaw, Raw: []byte("hi")}},
		{name: "raw url-safe padded", in: `{"raw":"aGk-Pz8_"}`, want: Part{Kind: PartRaw, Raw: []byte("hi>???")}},
		{name: "raw url-safe unpadded", in: `{"raw":"_w"}`, want: Part{Kind: PartRaw, Raw: []byte{0xff}}},
		{name: "raw with line breaks", in: `{"raw":"aG\nk="}`, want: Part{Kind: PartRaw, Raw: []byte("hi")}},
		{name: "raw empty", in: `{"raw":""}`, want: Part{Kind: PartRaw, Raw: []byte{}}},
		{name: "raw not base64", in: `{"raw":"!!"}`, wantErr: true},
		{name: "raw mixed alphabets", in: `{"raw":"+_=="}`, wantErr: true},
		{name: "raw number", in: `{"raw":5}`, wantErr: true},
		{name: "url", in: `{"url":"https://x/y","filename":"y","mediaType":"text/plain"}`,
			want: Part{Kind: PartURL, URL: "https://x/y", Filename: "y", MediaType: "text/plain"}},
		{name: "data object", in: `{"data":{"a_b":[1,2]},"mediaType":"application/json"}`,
			want: Part{Kind: PartData, Data: json.RawMessage(`{"a_b":[1,2]}`), MediaType: "application/json"}},
		{name: "data string", in: `{"data":"s"}`, want: Part{Kind: PartData, Data: json.RawMessage(`"s"`)}},
		{name: "data null", in: `{"data":null}`, want: Part{Kind: PartData, Data: json.RawMessage(`null`)}},
		{name: "data false", in: `{"data":false}`, want: Part{Kind: PartData, Data: json.RawMessage(`false`)}},
		{name: "metadata", in: `{"text":"x","metadata":{"k_1":{"n":1}}}`,
			want: Part{Kind: PartText, Text: "x", Metadata: map[string]any{"k_1": map[string]any{"n": 1.0}}}},
		{name: "unknown fields ignored", in: `{"text":"x","kind":"text","file":{"bytes":"x"}}`, want: Part{Kind: PartText, Text: "x"}},
		{name: "none", in: `{}`, wantErr: true},
		{name: "only shared fields", in: `{"filename":"a","mediaType":"b"}`, wantErr: true},
		{name: "null text is absent", in: `{"text":null}`, wantErr: true},
		{name: "text and raw", in: `{"text":"a","raw":"aGk="}`, wantErr: true},
		{name: "text and url", in: `{"text":"a","url":"u"}`, wantErr: true},
		{name: "url and data", in: `{"url":"u","data":1}`, wantErr: true},
		{name: "all four", in: `{"text":"a","raw":"","url":"u","data":1}`, wantErr: true},
		{name: "not an object", in: `"text"`, wantErr: true},
		{name: "text not a string", in: `{"text":1}`, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Part
			err := Unmarshal([]byte(tc.in), &got)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %+v, want error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Unmarshal(%s): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Unmarshal(%s) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestPartContentErrorIsSentinel(t *testing.T) {
	for _, in := range []string{`{}`, `{"text":"a","url":"b"}`} {
		var p Part
		if err := json.Unmarshal([]byte(in), &p); !errors.Is(err, ErrPartContent) {
			t.Errorf("Unmarshal(%s) = %v, want ErrPartContent", in, err)
		}
	}
}

func TestPartMarshal(t *testing.T) {
	data, err := DataPart(map[string]any{"b": 1, "a": "<x>"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		part Part
		want string
	}{
		{"text", TextPart("hi"), `{"text":"hi"}`},
		{"empty text is still written", TextPart(""), `{"text":""}`},
		{"raw", RawPart([]byte("hi"), "a.txt", "text/plain"), `{"raw":"aGk=","filename":"a.txt","mediaType":"text/plain"}`},
		{"raw nil", RawPart(nil, "", ""), `{"raw":""}`},
		{"url", URLPart("https://x", "", "image/png"), `{"url":"https://x","mediaType":"image/png"}`},
		{"data", data, `{"data":{"a":"\u003cx\u003e","b":1},"mediaType":"application/json"}`},
		{"data empty is null", Part{Kind: PartData}, `{"data":null}`},
		{"metadata sorted", Part{Kind: PartText, Text: "x", Metadata: map[string]any{"z": 1, "a": 2}}, `{"text":"x","metadata":{"a":2,"z":1}}`},
		{"kind wins over other fields", Part{Kind: PartURL, Text: "ignored", URL: "u"}, `{"url":"u"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.part)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDataPartError(t *testing.T) {
	if _, err := DataPart(make(chan int)); err == nil {
		t.Fatal("DataPart(chan) succeeded")
	}
}

func TestRole(t *testing.T) {
	tests := []struct {
		in   string
		want Role
	}{
		{`"ROLE_USER"`, RoleUser},
		{`"ROLE_AGENT"`, RoleAgent},
		{`"ROLE_UNSPECIFIED"`, RoleUnspecified},
		{`"user"`, RoleUser},
		{`"agent"`, RoleAgent},
		{`"role_agent"`, RoleAgent},
		{`1`, RoleUser},
		{`2`, RoleAgent},
		{`0`, RoleUnspecified},
		{`3`, RoleUnspecified},
		{`-1`, RoleUnspecified},
		{`"system"`, RoleUnspecified},
		{`""`, RoleUnspecified},
		{`null`, RoleUnspecified},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			r := RoleAgent
			if tc.in == "null" {
				r = RoleUnspecified // null leaves the value alone
			}
			if err := json.Unmarshal([]byte(tc.in), &r); err != nil {
				t.Fatal(err)
			}
			if r != tc.want {
				t.Fatalf("got %v, want %v", r, tc.want)
			}
		})
	}
	for _, bad := range []string{`true`, `{}`, `[]`, `"\x"`} {
		var r Role
		if err := r.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("UnmarshalJSON(%s) succeeded", bad)
		}
	}
	names := map[Role]string{RoleUnspecified: "ROLE_UNSPECIFIED", RoleUser: "ROLE_USER", RoleAgent: "ROLE_AGENT", Role(9): "ROLE_UNSPECIFIED", Role(-1): "ROLE_UNSPECIFIED"}
	for r, want := range names {
		b, _ := json.Marshal(r)
		if string(b) != `"`+want+`"` || r.String() != want {
			t.Errorf("Role(%d) = %s / %s, want %s", int(r), b, r.String(), want)
		}
	}
}

func TestTaskState(t *testing.T) {
	type props struct{ terminal, interrupted bool }
	states := []struct {
		state TaskState
		name  string
		num   int
		props
	}{
		{TaskStateUnspecified, "TASK_STATE_UNSPECIFIED", 0, props{}},
		{TaskStateSubmitted, "TASK_STATE_SUBMITTED", 1, props{}},
		{TaskStateWorking, "TASK_STATE_WORKING", 2, props{}},
		{TaskStateCompleted, "TASK_STATE_COMPLETED", 3, props{terminal: true}},
		{TaskStateFailed, "TASK_STATE_FAILED", 4, props{terminal: true}},
		{TaskStateCanceled, "TASK_STATE_CANCELED", 5, props{terminal: true}},
		{TaskStateInputRequired, "TASK_STATE_INPUT_REQUIRED", 6, props{interrupted: true}},
		{TaskStateRejected, "TASK_STATE_REJECTED", 7, props{terminal: true}},
		{TaskStateAuthRequired, "TASK_STATE_AUTH_REQUIRED", 8, props{interrupted: true}},
	}
	for _, tc := range states {
		t.Run(tc.name, func(t *testing.T) {
			if int(tc.state) != tc.num || tc.state.String() != tc.name {
				t.Fatalf("state %d is %q, want %d %q", int(tc.state), tc.state, tc.num, tc.name)
			}
			b, _ := json.Marshal(tc.state)
			if string(b) != `"`+tc.name+`"` {
				t.Fatalf("Marshal = %s", b)
			}
			for _, in := range []string{`"` + tc.name + `"`, strings.ReplaceAll(string(b), "TASK_STATE_", ""), `` + string(rune('0'+tc.num))} {
				var s TaskState
				if err := json.Unmarshal([]byte(in), &s); err != nil || s != tc.state {
					t.Errorf("Unmarshal(%s) = %v, %v; want %v", in, s, err, tc.state)
				}
			}
			if tc.state.Terminal() != tc.terminal || tc.state.Interrupted() != tc.interrupted || tc.state.Final() != (tc.terminal || tc.interrupted) {
				t.Errorf("Terminal/Interrupted/Final = %v/%v/%v", tc.state.Terminal(), tc.state.Interrupted(), tc.state.Final())
			}
		})
	}
	// v0.3 spellings and oddities.
	tolerant := []struct {
		in   string
		want TaskState
	}{
		{`"completed"`, TaskStateCompleted},
		{`"input-required"`, TaskStateInputRequired},
		{`"auth-required"`, TaskStateAuthRequired},
		{`"submitted"`, TaskStateSubmitted},
		{`"working"`, TaskStateWorking},
		{`"failed"`, TaskStateFailed},
		{`"canceled"`, TaskStateCanceled},
		{`"cancelled"`, TaskStateCanceled},
		{`"rejected"`, TaskStateRejected},
		{`"task_state_working"`, TaskStateWorking},
		{`"unknown"`, TaskStateUnspecified},
		{`"TASK_STATE_PAUSED"`, TaskStateUnspecified},
		{`""`, TaskStateUnspecified},
		{`9`, TaskStateUnspecified},
		{`-1`, TaskStateUnspecified},
		{`2.5`, TaskStateUnspecified},
	}
	for _, tc := range tolerant {
		t.Run(tc.in, func(t *testing.T) {
			s := TaskStateWorking
			if err := json.Unmarshal([]byte(tc.in), &s); err != nil {
				t.Fatal(err)
			}
			if s != tc.want {
				t.Fatalf("got %v, want %v", s, tc.want)
			}
		})
	}
	for _, bad := range []string{`true`, `{"a":1}`, `[1]`} {
		var s TaskState
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) succeeded", bad)
		}
	}
	if got := TaskState(42).String(); got != "TASK_STATE_UNSPECIFIED" {
		t.Errorf("TaskState(42).String() = %s", got)
	}
}

func TestParseTaskState(t *testing.T) {
	tests := []struct {
		in     string
		want   TaskState
		wantOK bool
	}{
		{"TASK_STATE_COMPLETED", TaskStateCompleted, true},
		{"input-required", TaskStateInputRequired, true},
		{"3", TaskStateCompleted, true},
		{"UNSPECIFIED", TaskStateUnspecified, true},
		{"42", TaskStateUnspecified, false},
		{"-3", TaskStateUnspecified, false},
		{"nope", TaskStateUnspecified, false},
	}
	for _, tc := range tests {
		got, ok := ParseTaskState(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("ParseTaskState(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestTaskStatusTimestamp(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Time
		wantOut string
		wantErr bool
	}{
		{name: "utc ms", in: "2026-01-02T03:04:05.123Z", want: time.Date(2026, 1, 2, 3, 4, 5, 123e6, time.UTC), wantOut: "2026-01-02T03:04:05.123Z"},
		{name: "no fraction", in: "2026-01-02T03:04:05Z", want: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), wantOut: "2026-01-02T03:04:05.000Z"},
		{name: "nanos truncated on write", in: "2026-01-02T03:04:05.123999999Z", want: time.Date(2026, 1, 2, 3, 4, 5, 123999999, time.UTC), wantOut: "2026-01-02T03:04:05.123Z"},
		{name: "offset converted to UTC", in: "2026-01-02T03:04:05.5+02:00", want: time.Date(2026, 1, 2, 1, 4, 5, 5e8, time.UTC), wantOut: "2026-01-02T01:04:05.500Z"},
		{name: "absent", in: "", wantOut: ""},
		{name: "not RFC 3339", in: "2026-01-02 03:04:05", wantErr: true},
		{name: "no zone", in: "2026-01-02T03:04:05", wantErr: true},
		{name: "past year 9999 in UTC", in: "9999-12-31T23:59:59-01:00", wantErr: true},
		{name: "before year 1 in UTC", in: "0001-01-01T00:00:00+01:00", wantErr: true},
		{name: "year 0", in: "0000-06-01T00:00:00Z", wantErr: true},
		{name: "sub-millisecond after the zero time is written as absent", in: "0001-01-01T00:00:00.0001Z",
			want: time.Date(1, 1, 1, 0, 0, 0, 100000, time.UTC), wantOut: ""},
		{name: "last instant", in: "9999-12-31T23:59:59.999Z", want: time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC), wantOut: "9999-12-31T23:59:59.999Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"state":"TASK_STATE_WORKING"}`
			if tc.in != "" {
				in = `{"state":"TASK_STATE_WORKING","timestamp":"` + tc.in + `"}`
			}
			var s TaskStatus
			err := json.Unmarshal([]byte(in), &s)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Unmarshal(%s) = %v, want error", in, s.Timestamp)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !s.Timestamp.Equal(tc.want) || s.Timestamp.Location() != time.UTC {
				t.Fatalf("timestamp = %v, want %v in UTC", s.Timestamp, tc.want)
			}
			out, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"state":"TASK_STATE_WORKING"}`
			if tc.wantOut != "" {
				want = `{"state":"TASK_STATE_WORKING","timestamp":"` + tc.wantOut + `"}`
			}
			if string(out) != want {
				t.Fatalf("Marshal = %s, want %s", out, want)
			}
		})
	}
}

func TestStrictWrites(t *testing.T) {
	hl := int32(0)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"message omits empty fields", &Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("x")}},
			`{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}`},
		{"task lowerCamelCase", &Task{ID: "t", ContextID: "c", Status: TaskStatus{State: TaskStateInputRequired}},
			`{"id":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}`},
		{"send request", &SendMessageRequest{Message: &Message{MessageID: "m", Role: RoleUser},
			Configuration: &SendMessageConfiguration{AcceptedOutputModes: []string{"text/plain"}, HistoryLength: &hl, ReturnImmediately: true}},
			`{"message":{"messageId":"m","role":"ROLE_USER"},"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":0,"returnImmediately":true}}`},
		{"list tasks request enum", &ListTasksRequest{Status: TaskStateWorking, IncludeArtifacts: true},
			`{"status":"TASK_STATE_WORKING","includeArtifacts":true}`},
		{"list tasks request unspecified status omitted", &ListTasksRequest{ContextID: "c"}, `{"contextId":"c"}`},
		{"artifact update flags", &TaskArtifactUpdateEvent{TaskID: "t", ContextID: "c", Artifact: Artifact{ArtifactID: "a"}, Append: true, LastChunk: true},
			`{"taskId":"t","contextId":"c","artifact":{"artifactId":"a"},"append":true,"lastChunk":true}`},
		{"push config", &TaskPushNotificationConfig{TaskID: "t", URL: "https://h", Authentication: &AuthenticationInfo{Scheme: "Bearer"}},
			`{"taskId":"t","url":"https://h","authentication":{"scheme":"Bearer"}}`},
		{"card optional bools keep false", &AgentCapabilities{Streaming: Bool(false), PushNotifications: Bool(true)},
			`{"streaming":false,"pushNotifications":true}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestTaskClone(t *testing.T) {
	orig := bigTask()
	c := orig.Clone()
	if diff := cmp.Diff(orig, c); diff != "" {
		t.Fatalf("clone differs (-orig +clone):\n%s", diff)
	}
	c.History[0].MessageID = "changed"
	c.History = append(c.History, Message{MessageID: "new"})
	c.Artifacts[0].Parts[0] = TextPart("changed")
	if orig.History[0].MessageID == "changed" || len(orig.History) != 20 || orig.Artifacts[0].Parts[0].Text == "changed" {
		t.Fatal("changing the clone changed the original")
	}
	if (*Task)(nil).Clone() != nil {
		t.Fatal("nil clone is not nil")
	}
}

func TestPartsText(t *testing.T) {
	tests := []struct {
		name  string
		parts []Part
		want  string
	}{
		{"none", nil, ""},
		{"one", []Part{TextPart("a")}, "a"},
		{"one among others", []Part{URLPart("u", "", ""), TextPart("a")}, "a"},
		{"several joined", []Part{TextPart("a"), RawPart([]byte("x"), "", ""), TextPart("b")}, "a\nb"},
	}
	for _, tc := range tests {
		if got := PartsText(tc.parts); got != tc.want {
			t.Errorf("%s: PartsText = %q, want %q", tc.name, got, tc.want)
		}
	}
	if (*Message)(nil).Text() != "" || NewMessage(RoleUser, TextPart("x")).Text() != "x" {
		t.Error("Message.Text")
	}
}

func TestStreamResponseAccessors(t *testing.T) {
	tests := []struct {
		name      string
		r         StreamResponse
		wantID    string
		wantFinal bool
	}{
		{"task working", StreamResponse{Task: &Task{ID: "t", Status: TaskStatus{State: TaskStateWorking}}}, "t", false},
		{"task completed", StreamResponse{Task: &Task{ID: "t", Status: TaskStatus{State: TaskStateCompleted}}}, "t", true},
		{"message", StreamResponse{Message: &Message{TaskID: "t2"}}, "t2", true},
		{"status input required", StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t3", Status: TaskStatus{State: TaskStateInputRequired}}}, "t3", true},
		{"status working", StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: "t3", Status: TaskStatus{State: TaskStateWorking}}}, "t3", false},
		{"artifact", StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: "t4", LastChunk: true}}, "t4", false},
		{"empty", StreamResponse{}, "", false},
	}
	for _, tc := range tests {
		if got := tc.r.TaskID(); got != tc.wantID {
			t.Errorf("%s: TaskID = %q, want %q", tc.name, got, tc.wantID)
		}
		if got := tc.r.Final(); got != tc.wantFinal {
			t.Errorf("%s: Final = %v, want %v", tc.name, got, tc.wantFinal)
		}
	}
}

func TestNewID(t *testing.T) {
	uuid7 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	before := time.Now().UnixMilli()
	for range 100 {
		id := NewID()
		if !uuid7.MatchString(id) {
			t.Fatalf("NewID() = %q, not a v7 UUID", id)
		}
		ms, err := strconv.ParseInt(strings.ReplaceAll(id[:13], "-", ""), 16, 64)
		if err != nil || ms < before || ms > time.Now().UnixMilli() {
			t.Fatalf("NewID() = %q: timestamp %d (%v) not the time it was made", id, ms, err)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}
