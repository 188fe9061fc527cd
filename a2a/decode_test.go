package a2a

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// fastTargets are the types fastUnmarshal handles, each with a function
// that makes a fresh zero value.
var fastTargets = []struct {
	name string
	zero func() any
}{
	{"Task", func() any { return new(Task) }},
	{"Message", func() any { return new(Message) }},
	{"StreamResponse", func() any { return new(StreamResponse) }},
	{"SendMessageResponse", func() any { return new(SendMessageResponse) }},
	{"SendMessageRequest", func() any { return new(SendMessageRequest) }},
}

// checkFastMatchesGeneral is the fast path's contract: whatever it
// accepts, the general path accepts with an identical result.
func checkFastMatchesGeneral(t *testing.T, data []byte) {
	t.Helper()
	for _, target := range fastTargets {
		fast := target.zero()
		if !fastUnmarshal(data, fast) {
			continue
		}
		general := target.zero()
		if err := unmarshalGeneral(data, general); err != nil {
			t.Fatalf("%s: fast path accepted %q, general path failed: %v", target.name, data, err)
		}
		if !reflect.DeepEqual(fast, general) {
			t.Fatalf("%s: paths differ on %q\nfast:    %#v\ngeneral: %#v", target.name, data, fast, general)
		}
	}
	if fast, ok := splitRequest(data); ok {
		general, err := readRequest(data)
		if err != nil {
			t.Fatalf("request envelope: fast path accepted %q, general path failed: %v", data, err)
		}
		if !reflect.DeepEqual(fast, general) {
			t.Fatalf("request envelope: paths differ on %q\nfast:    %#v\ngeneral: %#v", data, fast, general)
		}
	}
	if result, errObj, ok := splitResponse(data); ok {
		general, err := topMembers(data, "result", "error")
		if err != nil {
			t.Fatalf("response envelope: fast path accepted %q, general path failed: %v", data, err)
		}
		if string(result) != string(general[0]) || string(errObj) != string(general[1]) {
			t.Fatalf("response envelope: paths differ on %q: result %q/%q, error %q/%q", data, result, general[0], errObj, general[1])
		}
	}
}

// fastSeeds are documents the fast path must agree on, including ones it
// should decline.
var fastSeeds = []string{
	`{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T03:04:05.678Z"}}`,
	`{"id":"t","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"done"}]}},"artifacts":[{"artifactId":"a","parts":[{"data":{"k":[1,2.5,-3e2,true,null,"x"]},"mediaType":"application/json"}]}],"history":[],"metadata":{}}`,
	`{"messageId":"m","role":"user","parts":[{"raw":"aGk=","filename":"f.txt"},{"url":"https://x/y"}],"extensions":["u"],"referenceTaskIds":[]}`,
	`{"messageId":"m","role":2,"parts":[{"text":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}]}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"acceptedOutputModes":["text/plain"],"historyLength":2,"returnImmediately":true},"metadata":{"a":{"b":[{}]}},"tenant":"x"}`,
	`{"message":{"message_id":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}`,
	`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"history_length":3}}`,
	`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}`,
	`{"artifactUpdate":{"taskId":"t","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]},"append":true,"lastChunk":false}}`,
	`{"task":{"id":"t","status":{"state":"canceled"}},"kind":"task"}`,
	`{"ID":"t"}`, `{"id":"a","id":"b"}`, `{"metadata":{"a":1},"metadata":{"b":2}}`,
	`{"id":null}`, `{"metadata":null}`, `{"id":"\ud800"}`, `{"id":"` + "\xff" + `"}`,
	`{"id":"t","status":{"state":"TASK_STATE_WORKING","timestamp":"not a time"}}`,
	`{"messageId":"m","parts":[{"text":"a","url":"b"}]}`, `{"messageId":"m","parts":[{}]}`,
	`{"messageId":"m","parts":[{"data":null}]}`, `{"messageId":"m","parts":[{"data": {"a" : 1} }]}`,
	`{"metadata":{"n":1e400}}`, `{"metadata":{"n":01}}`, `{"metadata":{"n":-}}`, `{"metadata":{"a":1,"a":2}}`,
	`{"id":"t"} x`, ` {"id":"t"} `, `{"id":"t",}`, `{}`, `[]`, `null`, ``,
	`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{}}}`,
	`{"jsonrpc":"2.0","id":"a\"b","method":"GetTask","params":null}`, `{"jsonrpc":null,"id":null,"method":"x"}`,
	`{"jsonrpc":"2.0","id":1.5e3,"method":"M","Method":"N"}`, `{"jsonrpc":"2.0","id":{},"method":1}`,
	`{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t"}}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"x"}}`,
	`{"jsonrpc":"2.0","id":1,"result":null,"result":{}}`, `{"result" : [1,2] , "error":null}`,
	`{"x_y":1}`, `{"unknown":{"deep":[1,{"a":"\u0041"}]},"id":"t"}`, `{"ünknown":1}`,
}

func TestFastDecodeMatchesGeneral(t *testing.T) {
	for _, s := range fastSeeds {
		checkFastMatchesGeneral(t, []byte(s))
	}
}

// TestFastDecodeAcceptsEncoderOutput pins that what our own encoders (and
// conforming peers) write takes the fast path: a decline here would be
// correct but slow.
func TestFastDecodeAcceptsEncoderOutput(t *testing.T) {
	data, err := DataPart(map[string]any{"k": []any{1.5, "x", nil, true}})
	if err != nil {
		t.Fatal(err)
	}
	task := bigTask()
	task.Artifacts = append(task.Artifacts, Artifact{ArtifactID: "a2", Parts: []Part{data, RawPart([]byte("hi"), "f", "text/plain"), URLPart("https://x", "", "")}})
	task.Status.Timestamp = time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	encTask, err := AppendTask(nil, task)
	if err != nil {
		t.Fatal(err)
	}
	frames := []*StreamResponse{statusUpdateFrame(), artifactChunkFrame(), {Task: smallTask()}, {Message: NewMessage(RoleAgent, TextPart("x"))}}
	cases := map[string]struct {
		data []byte
		into any
	}{"task": {encTask, new(Task)}}
	for i, f := range frames {
		enc, err := AppendStreamResponse(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		cases["frame"+string(rune('0'+i))] = struct {
			data []byte
			into any
		}{enc, new(StreamResponse)}
	}
	req, err := json.Marshal(&SendMessageRequest{Message: NewMessage(RoleUser, TextPart("hi")), Metadata: map[string]any{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	cases["request"] = struct {
		data []byte
		into any
	}{req, new(SendMessageRequest)}
	for name, tc := range cases {
		if !fastUnmarshal(tc.data, tc.into) {
			t.Errorf("%s: fast path declined %s", name, tc.data)
		}
		checkFastMatchesGeneral(t, tc.data)
	}
}

// TestFastDecodeLeavesNonZeroToGeneral: decoding into a value that already
// holds data merges in encoding/json, which only the general path does.
func TestFastDecodeLeavesNonZeroToGeneral(t *testing.T) {
	task := Task{ID: "keep", ContextID: "old"}
	if fastUnmarshal([]byte(`{"contextId":"new"}`), &task) {
		t.Fatal("fast path took a non-zero target")
	}
	if err := Unmarshal([]byte(`{"contextId":"new"}`), &task); err != nil {
		t.Fatal(err)
	}
	if task.ID != "keep" || task.ContextID != "new" {
		t.Fatalf("got %+v, want the id kept and the context replaced", task)
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	for _, task := range []*Task{smallTask(), bigTask()} {
		enc, err := AppendTask(nil, task)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastMatchesGeneral(t, data)
	})
}
