package a2astore

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestTaskTokenRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		c    Task
	}{
		{"typical", Task{TimeMs: 1767225600123, ID: "0b8f5a1e-6d7c-4f4e-9a7b-2f0c3d5e6a7b"}},
		{"before epoch", Task{TimeMs: time.Time{}.UnixMilli(), ID: "x"}},
		{"extremes", Task{TimeMs: math.MinInt64, ID: strings.Repeat("é", MaxIDLen/2)}},
		{"max", Task{TimeMs: math.MaxInt64, ID: "id with spaces/and+slashes?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.c.Token()
			got, err := ParseTask(tok)
			if err != nil {
				t.Fatalf("ParseTask(%q): %v", tok, err)
			}
			if got != tt.c {
				t.Errorf("ParseTask(Token(%+v)) = %+v", tt.c, got)
			}
			if strings.ContainsAny(tok, "+/=") {
				t.Errorf("token %q is not URL-safe", tok)
			}
		})
	}
}

func TestIDTokenRoundTrip(t *testing.T) {
	for _, id := range []string{"a", "cfg-1", strings.Repeat("z", MaxIDLen)} {
		got, err := ParseID(IDToken(id))
		if err != nil || got != id {
			t.Errorf("ParseID(IDToken(%q)) = %q, %v", id, got, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	valid := Task{TimeMs: 5, ID: "t"}.Token()
	tests := []struct {
		name string
		tok  string
	}{
		{"empty", ""},
		{"not base64", "!!!"},
		{"padded base64", valid + "=="},
		{"id token as task token", IDToken("t")},
		{"no id", enc.EncodeToString([]byte{kindTask, 10})},
		{"truncated varint", enc.EncodeToString([]byte{kindTask, 0x80})},
		{"nul in id", enc.EncodeToString([]byte{kindTask, 10, 'a', 0})},
		{"invalid utf-8", enc.EncodeToString([]byte{kindTask, 10, 0xff})},
		{"non-canonical varint", enc.EncodeToString([]byte{kindTask, 0x8a, 0x00, 'a'})},
		{"too long", Task{TimeMs: 1, ID: strings.Repeat("a", MaxIDLen+1)}.Token()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := ParseTask(tt.tok); !errors.Is(err, ErrBadToken) {
				t.Errorf("ParseTask(%q) = %+v, %v; want ErrBadToken", tt.tok, c, err)
			}
		})
	}
	if id, err := ParseID(valid); !errors.Is(err, ErrBadToken) {
		t.Errorf("ParseID(task token) = %q, %v; want ErrBadToken", id, err)
	}
}

func TestLimit(t *testing.T) {
	tests := []struct{ in, want int }{
		{-1, DefaultPageSize}, {0, DefaultPageSize}, {1, 1}, {100, 100}, {101, 100},
	}
	for _, tt := range tests {
		if got := Limit(tt.in); got != tt.want {
			t.Errorf("Limit(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestCeilMillis(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		in   time.Time
		want int64
	}{
		{"whole millisecond", base.Add(7 * time.Millisecond), base.UnixMilli() + 7},
		{"just after", base.Add(7*time.Millisecond + time.Nanosecond), base.UnixMilli() + 8},
		{"just before", base.Add(8*time.Millisecond - time.Nanosecond), base.UnixMilli() + 8},
		{"before epoch", time.Unix(-1, 500_000), -999},
		{"zero", time.Time{}, time.Time{}.UnixMilli()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CeilMillis(tt.in); got != tt.want {
				t.Errorf("CeilMillis(%v) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestValidText(t *testing.T) {
	tests := []struct {
		in       string
		text, id bool
	}{
		{"", true, false},
		{"task-1", true, true},
		{"a\x00b", false, false},
		{"\xff", false, false},
		{strings.Repeat("a", MaxIDLen+1), true, false},
	}
	if !ValidText() || !ValidText("a", "") || ValidText("a", "b\x00") {
		t.Error("ValidText over several strings is wrong")
	}
	for _, tt := range tests {
		if got := ValidText(tt.in); got != tt.text {
			t.Errorf("ValidText(%q) = %v, want %v", tt.in, got, tt.text)
		}
		if got := ValidID(tt.in); got != tt.id {
			t.Errorf("ValidID(%.20q) = %v, want %v", tt.in, got, tt.id)
		}
	}
}

// FuzzParse checks that no input crashes the parsers and that whatever they
// accept is the canonical token of the cursor they return.
func FuzzParse(f *testing.F) {
	f.Add(Task{TimeMs: 1767225600123, ID: "t-1"}.Token())
	f.Add(IDToken("cfg"))
	f.Add("")
	f.Add("dA")
	f.Fuzz(func(t *testing.T, tok string) {
		if c, err := ParseTask(tok); err == nil {
			if c.Token() != tok || !ValidID(c.ID) {
				t.Fatalf("ParseTask(%q) accepted non-canonical %+v", tok, c)
			}
		} else if !errors.Is(err, ErrBadToken) {
			t.Fatalf("ParseTask(%q): unexpected error %v", tok, err)
		}
		if id, err := ParseID(tok); err == nil {
			if IDToken(id) != tok || !ValidID(id) {
				t.Fatalf("ParseID(%q) accepted non-canonical %q", tok, id)
			}
		} else if !errors.Is(err, ErrBadToken) {
			t.Fatalf("ParseID(%q): unexpected error %v", tok, err)
		}
	})
}
