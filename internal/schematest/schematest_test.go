package schematest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		def     string
		payload string
		wantErr string // substring; "" means valid
	}{
		{"task", "Task", `{"id":"t","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-02T03:04:05.000Z"}}`, ""},
		{"task snake_case", "Task", `{"id":"t","context_id":"c"}`, ""},
		{"task unknown field", "Task", `{"id":"t","bogus":1}`, "bogus"},
		{"task bad state", "Task", `{"id":"t","status":{"state":"DONE"}}`, "state"},
		{"nested ref resolves", "Task", `{"id":"t","history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":1}]}]}`, "text"},
		{"timestamp format asserted", "Task Status", `{"state":"TASK_STATE_WORKING","timestamp":"yesterday"}`, "date-time"},
		{"stream response", "Stream Response", `{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`, ""},
		{"agent card", "Agent Card", `{"name":"a","securitySchemes":{"k":{"apiKeySecurityScheme":{"location":"header","name":"X"}}}}`, ""},
		{"raw must be base64", "Part", `{"raw":"not base64!"}`, "raw"},
		{"invalid json", "Task", `{"id":`, "invalid JSON"},
		{"list tasks response", "List Tasks Response", `{"tasks":[],"nextPageToken":"","pageSize":0,"totalSize":0}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.def, []byte(tc.payload))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Check(%s) = %v, want valid", tc.payload, err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Check(%s) = nil, want error containing %q", tc.payload, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("Check(%s) = %v, want error containing %q", tc.payload, err, tc.wantErr)
			}
		})
	}
}

func TestEveryDefinitionCompiles(t *testing.T) {
	names, err := Definitions()
	if err != nil {
		t.Fatal(err)
	}
	// 47 definitions in a2a-v1.0.0.schema.json; every $ref among them must
	// resolve, which compiling all of them proves.
	if len(names) != 47 {
		t.Fatalf("got %d definitions, want 47: %v", len(names), names)
	}
}

// recorder captures failures so Validate's own reporting can be tested.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	r.fatal = true
}

func TestValidateReports(t *testing.T) {
	tests := []struct {
		name      string
		def       string
		payload   string
		wantError bool
		wantFatal bool
	}{
		{"valid", "Message", `{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}`, false, false},
		{"invalid payload", "Message", `{"messageId":1}`, true, false},
		{"unknown definition", "Nope", `{}`, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Validate(r, tc.def, []byte(tc.payload))
			if got := len(r.errors) > 0; got != tc.wantError {
				t.Fatalf("failed = %v, want %v (%q)", got, tc.wantError, r.errors)
			}
			if r.fatal != tc.wantFatal {
				t.Fatalf("fatal = %v, want %v", r.fatal, tc.wantFatal)
			}
		})
	}
}

// The embedded schema is the file testdata/README.md describes; a change to
// it must come with a new provenance note.
func TestSchemaIsTheRecordedFile(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("testdata", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(schemaJSON)
	if got := hex.EncodeToString(sum[:]); !strings.Contains(string(readme), got) {
		t.Fatalf("testdata/README.md does not record the schema's SHA-256 %s", got)
	}
	for _, want := range []string{"github.com/a2aproject/A2A", "Apache License 2.0", "v1.0.0"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("testdata/README.md does not name %q", want)
		}
	}
}
