package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/delivery"
)

func heartbeatGood() HeartbeatInput {
	return HeartbeatInput{
		AdapterName: "novaos-adapter", AdapterVersion: "1.4.0+build.7", RuntimeName: "claude-code",
		Capabilities: delivery.Capabilities{Followups: "steer", Components: true, FilesOut: true},
		ActiveRuns:   []string{"0193c0de-0000-7000-8000-000000000001", "run-2"},
	}
}

func TestBuildHeartbeat(t *testing.T) {
	hb, err := BuildHeartbeat(heartbeatGood())
	if err != nil {
		t.Fatal(err)
	}
	want := delivery.Heartbeat{Status: "ok", Details: delivery.HeartbeatDetails{
		Capabilities:    &delivery.Capabilities{Followups: "steer", Components: true, FilesOut: true},
		ActiveRuns:      []string{"0193c0de-0000-7000-8000-000000000001", "run-2"},
		Adapter:         &delivery.NameVersion{Name: "novaos-adapter", Version: "1.4.0+build.7"},
		Runtime:         &delivery.NameVersion{Name: "claude-code"},
		ProtocolVersion: delivery.ProtocolVersion,
	}}
	if d := cmp.Diff(want, hb); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}

	in := heartbeatGood()
	in.DegradedReasons = []string{"model_api:rate_limited", "disk.low"}
	hb, err = BuildHeartbeat(in)
	if err != nil || hb.Status != delivery.HeartbeatDegraded || len(hb.Details.DegradedReasons) != 2 {
		t.Fatalf("degraded: %+v, %v", hb, err)
	}

	hb, err = BuildHeartbeat(HeartbeatInput{})
	if err != nil || hb.Status != "ok" || hb.Details.Adapter != nil || hb.Details.Capabilities != nil || hb.Details.ActiveRuns != nil {
		t.Fatalf("empty input: %+v, %v", hb, err)
	}
}

// The details carry only the closed key set: capabilities (followups,
// components, voice_input, title, files_out), active_runs,
// degraded_reasons, adapter (name, version), runtime (name),
// protocol_version.
func TestHeartbeatClosedDetailsKeys(t *testing.T) {
	in := heartbeatGood()
	in.Capabilities = delivery.Capabilities{Followups: "queue", Components: true, VoiceInput: true, Title: true, FilesOut: true}
	in.DegradedReasons = []string{"x"}
	hb, err := BuildHeartbeat(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(hb)
	var doc struct {
		Status  string                     `json:"status"`
		Details map[string]json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	allowed := map[string][]string{
		"capabilities":     {"followups", "components", "voice_input", "title", "files_out"},
		"active_runs":      nil,
		"degraded_reasons": nil,
		"adapter":          {"name", "version"},
		"runtime":          {"name"},
		"protocol_version": nil,
	}
	for k, v := range doc.Details {
		sub, ok := allowed[k]
		if !ok {
			t.Errorf("details.%s is not in the closed set", k)
			continue
		}
		if sub == nil {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("details.%s: %v", k, err)
		}
		for mk := range m {
			found := false
			for _, s := range sub {
				found = found || s == mk
			}
			if !found {
				t.Errorf("details.%s.%s is not in the closed set", k, mk)
			}
		}
		if len(m) != len(sub) {
			t.Errorf("details.%s has %d of its %d keys", k, len(m), len(sub))
		}
	}
	if len(doc.Details) != len(allowed) {
		t.Errorf("details has %d keys, want all %d", len(doc.Details), len(allowed))
	}
}

func TestHeartbeatFormsRejectPathsAndSecrets(t *testing.T) {
	const canary = "CANARY-sk-live-9f8e7d"
	long := func(n int) string { return strings.Repeat("a", n) }
	runs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint("run-", i)
		}
		return out
	}
	cases := []struct {
		name  string
		edit  func(*HeartbeatInput)
		field string
	}{
		{"adapter name a path", func(in *HeartbeatInput) { in.AdapterName = "/home/alex/.config/novaos" }, "details.adapter.name"},
		{"adapter name with a secret", func(in *HeartbeatInput) { in.AdapterName = canary }, "details.adapter.name"},
		{"adapter name with spaces", func(in *HeartbeatInput) { in.AdapterName = "my adapter" }, "details.adapter.name"},
		{"adapter name starting with a dot", func(in *HeartbeatInput) { in.AdapterName = ".hidden" }, "details.adapter.name"},
		{"adapter name too long", func(in *HeartbeatInput) { in.AdapterName = long(HeartbeatMaxNameChars + 1) }, "details.adapter.name"},
		{"version without a name", func(in *HeartbeatInput) { in.AdapterName = "" }, "details.adapter.name"},
		{"adapter version a URL", func(in *HeartbeatInput) { in.AdapterVersion = "https://example.com/v1" }, "details.adapter.version"},
		{"adapter version with =", func(in *HeartbeatInput) { in.AdapterVersion = "token=" + canary }, "details.adapter.version"},
		{"adapter version too long", func(in *HeartbeatInput) { in.AdapterVersion = long(HeartbeatMaxVersionChars + 1) }, "details.adapter.version"},
		{"runtime name a Windows path", func(in *HeartbeatInput) { in.RuntimeName = `C:\agents\bot.exe` }, "details.runtime.name"},
		{"protocol version with a space", func(in *HeartbeatInput) { in.ProtocolVersion = "1 " + canary }, "details.protocol_version"},
		{"followups unknown", func(in *HeartbeatInput) { in.Capabilities.Followups = "interrupt" }, "details.capabilities.followups"},
		{"active run a path", func(in *HeartbeatInput) { in.ActiveRuns = []string{"run-1", "../../etc/passwd"} }, "details.active_runs[1]"},
		{"active run twice", func(in *HeartbeatInput) { in.ActiveRuns = []string{"run-1", "run-1"} }, "details.active_runs[1]"},
		{"active run empty", func(in *HeartbeatInput) { in.ActiveRuns = []string{""} }, "details.active_runs[0]"},
		{"active run too long", func(in *HeartbeatInput) { in.ActiveRuns = []string{long(HeartbeatMaxRunIDChars + 1)} }, "details.active_runs[0]"},
		{"too many active runs", func(in *HeartbeatInput) { in.ActiveRuns = runs(HeartbeatMaxActiveRuns + 1) }, "details.active_runs"},
		{"reason a sentence", func(in *HeartbeatInput) { in.DegradedReasons = []string{"the key " + canary + " expired"} }, "details.degraded_reasons[0]"},
		{"reason in upper case", func(in *HeartbeatInput) { in.DegradedReasons = []string{"ok", canary} }, "details.degraded_reasons[1]"},
		{"reason a path", func(in *HeartbeatInput) { in.DegradedReasons = []string{"disk:/var/lib"} }, "details.degraded_reasons[0]"},
		{"reason twice", func(in *HeartbeatInput) { in.DegradedReasons = []string{"a", "a"} }, "details.degraded_reasons[1]"},
		{"too many reasons", func(in *HeartbeatInput) { in.DegradedReasons = runs(HeartbeatMaxReasons + 1) }, "details.degraded_reasons"},
		{"reason with a newline", func(in *HeartbeatInput) { in.DegradedReasons = []string{"a\nb"} }, "details.degraded_reasons[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := heartbeatGood()
			c.edit(&in)
			_, err := BuildHeartbeat(in)
			var he *HeartbeatError
			if !errors.As(err, &he) || he.Field != c.field {
				t.Fatalf("err %v, want a HeartbeatError for %s", err, c.field)
			}
			if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "/home") || strings.Contains(err.Error(), "passwd") {
				t.Errorf("the error repeats the value: %v", err)
			}
		})
	}
}

// The forms are the documented patterns.
func TestHeartbeatFormsMatchSpec(t *testing.T) {
	for got, want := range map[string]string{
		heartbeatName.String():    `^[a-z0-9][a-z0-9._-]*$`,
		heartbeatVersion.String(): `^[0-9A-Za-z][0-9A-Za-z.+_-]*$`,
		heartbeatReason.String():  `^[a-z0-9][a-z0-9_.:-]*$`,
	} {
		if got != want {
			t.Errorf("form %s, want %s", got, want)
		}
	}
}
