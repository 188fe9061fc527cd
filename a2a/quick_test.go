package a2a

import (
	"encoding/json"
	"testing"
	"time"
)

func TestQuickRoundTrip(t *testing.T) {
	in := `{"id":"t1","context_id":"c1","status":{"state":"TASK_STATE_COMPLETED","timestamp":"2026-01-02T03:04:05.123456Z","message":{"message_id":"m","role":"ROLE_AGENT","parts":[{"text":"hi","media_type":"text/plain","metadata":{"a_b":1}}]}},"artifacts":[{"artifactId":"a","parts":[{"raw":"aGk="},{"data":{"x_y":[1]}}]}]}`
	var task Task
	if err := Unmarshal([]byte(in), &task); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(&task)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED","message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi","mediaType":"text/plain","metadata":{"a_b":1}}]},"timestamp":"2026-01-02T03:04:05.123Z"},"artifacts":[{"artifactId":"a","parts":[{"raw":"aGk="},{"data":{"x_y":[1]}}]}]}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	_ = time.Now
}
