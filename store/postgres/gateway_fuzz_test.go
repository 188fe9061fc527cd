package postgres

import (
	"strconv"
	"strings"
	"testing"
)

// A run notification is read from a channel any client of the database
// may send on: whatever it holds, decoding must neither panic nor report
// a sequence below 1, and what it reports must be what the payload said.
func FuzzDecodeRunNotification(f *testing.F) {
	for _, s := range []string{"3:0123abcd:run-1", "1:x:", "12:x:id:with:colons", "0:x:r", "-1:x:r", "x:y:z", "5:x", "", ":::", "9223372036854775808:x:r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		last, origin, runID, err := decodeAppendNotification(payload)
		if err != nil {
			return
		}
		if last < 1 {
			t.Fatalf("sequence %d from %q", last, payload)
		}
		if strings.Contains(origin, ":") {
			t.Fatalf("origin %q holds the separator", origin)
		}
		if got := strconv.FormatInt(last, 10) + ":" + origin + ":" + runID; got != payload && strings.TrimLeft(payload, "+0") == payload {
			t.Fatalf("%q decoded as %d, %q, %q", payload, last, origin, runID)
		}
	})
}

func TestDecodeRunNotification(t *testing.T) {
	for _, c := range []struct {
		payload     string
		last        int64
		origin, run string
		wantErr     bool
	}{
		{"3:0123abcd:run-1", 3, "0123abcd", "run-1", false},
		{"12:x:id:with:colons", 12, "x", "id:with:colons", false},
		{"1:x:", 1, "x", "", false}, // the id did not fit
		{"0:x:r", 0, "", "", true},
		{"-1:x:r", 0, "", "", true},
		{"x:y:z", 0, "", "", true},
		{"5:x", 0, "", "", true},
		{"5", 0, "", "", true},
		{"", 0, "", "", true},
	} {
		last, origin, run, err := decodeAppendNotification(c.payload)
		if (err != nil) != c.wantErr || last != c.last || origin != c.origin || run != c.run {
			t.Errorf("decodeAppendNotification(%q) = %d, %q, %q, %v", c.payload, last, origin, run, err)
		}
	}
}

// A run id too long for a notification is announced without it.
func TestNotifyTail(t *testing.T) {
	db := &DB{instance: "inst"}
	if got := db.notifyTail("run-1"); got != "inst:run-1" {
		t.Errorf("notifyTail = %q", got)
	}
	if got := db.notifyTail(strings.Repeat("r", maxNotifyRunID+1)); got != "inst:" {
		t.Errorf("notifyTail of a long id = %q", got)
	}
	if got := db.notifyTail(strings.Repeat("r", maxNotifyRunID)); got != "inst:"+strings.Repeat("r", maxNotifyRunID) {
		t.Errorf("notifyTail of the longest id kept = %d bytes", len(got))
	}
}
