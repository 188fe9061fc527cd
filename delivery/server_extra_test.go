package delivery

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONPointer(t *testing.T) {
	tests := map[string]string{
		"$":                 "",
		"$.status":          "/status",
		"$.details.adapter": "/details/adapter",
		"$.a[2].b":          "/a/2/b",
		`$["na me"]`:        "/na me",
		`$["a/b~c"].x`:      "/a~1b~0c/x",
		`$["\"]"]`:          `/"]`,
		`$["]`:              "",
		`$.a["x"…]`:         "/a",
	}
	for in, want := range tests {
		if got := jsonPointer(in); got != want {
			t.Errorf("jsonPointer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeHeartbeat(t *testing.T) {
	h, errs := DecodeHeartbeat([]byte(`{"status":"degraded","details":{"capabilities":{"followups":"queue","components":true},
		"active_runs":["r-1"],"degraded_reasons":["model:slow"],"adapter":{"name":"lotse","version":"1.0.0+b1"},
		"runtime":{"name":"claude-code"},"protocol_version":"1"}}`))
	if errs != nil || h.Status != HeartbeatDegraded || h.Details.Capabilities.Followups != "queue" || h.Details.Runtime.Name != "claude-code" {
		t.Fatalf("%+v %+v", h, errs)
	}
	long := `"` + strings.Repeat("r", 65) + `"`
	refused := map[string]string{
		`{"status":"ok","details":{"token":"x"}}`:                                 "/details/token",
		`{"status":"ok","details":{"adapter":{"name":"a","path":"/x"}}}`:          "/details/adapter/path",
		`{"status":"ok","details":{"degraded_reasons":["Bad Reason"]}}`:           "/details/degraded_reasons/0",
		`{"status":"ok","details":{"runtime":{"name":` + long + `}}}`:             "/details/runtime/name",
		`{"status":"ok","details":{"protocol_version":"1 2"}}`:                    "/details/protocol_version",
		`{"status":"ok","details":{"active_runs":["a b"]}}`:                       "/details/active_runs/0",
		`{"status":"","details":{}}`:                                              "/status",
		`{"status":"ok","details":{"adapter":{"name":"a","version":"1.0 beta"}}}`: "/details/adapter/version",
		`{"status":"ok","details":{"capabilities":{"components":"yes"}}}`:         "/details/capabilities/components",
		`{"status":"ok","details":{"active_runs":["a"],"active_runs":["b"]}}`:     "/details/active_runs",
	}
	for in, ptr := range refused {
		_, errs := DecodeHeartbeat([]byte(in))
		if len(errs) == 0 || errs[0].Pointer != ptr {
			t.Errorf("%s: errors %+v, want pointer %s", in, errs, ptr)
		}
		for _, e := range errs {
			if strings.Contains(e.Detail, "/x") || strings.Contains(e.Detail, "beta") {
				t.Errorf("%s: the error repeats a value: %q", in, e.Detail)
			}
		}
	}
}

// FuzzDecodeHeartbeat checks that a heartbeat accepted is one whose
// every member is known and every value of its form, and that nothing
// makes the decoder fail otherwise.
func FuzzDecodeHeartbeat(f *testing.F) {
	for _, s := range []string{`{"status":"ok","details":{}}`, `{"status":"ok","details":{"active_runs":["r"]}}`,
		`{"status":"degraded","details":{"degraded_reasons":["x"],"adapter":{"name":"a","version":"1"}}}`, `{"a":`, `[]`, `{"status":"ok","details":{"capabilities":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, errs := DecodeHeartbeat(data)
		if errs != nil {
			return
		}
		if again := CheckHeartbeat(h); again != nil {
			t.Fatalf("accepted a heartbeat that fails its check: %+v", again)
		}
		var generic map[string]any
		if err := json.Unmarshal(data, &generic); err != nil {
			t.Fatalf("accepted %q, which is not a JSON object", data)
		}
		for k := range generic {
			if k != "status" && k != "details" {
				t.Fatalf("accepted the member %q", k)
			}
		}
	})
}
