package pii

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMask(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text untouched", "hello world", "hello world"},
		{"email", "write to jane.doe+x@mail.example.com now", "write to [EMAIL] now"},
		{"two emails", "a@example.com,b@example.org", "[EMAIL],[EMAIL]"},
		{"us phone dashes", "call 555-123-4567", "call [PHONE]"},
		{"us phone parens", "call (555) 123-4567 today", "call [PHONE] today"},
		{"international phone", "ring +44 20 7946 0958", "ring [PHONE]"},
		{"phone dots", "555.123.4567", "[PHONE]"},
		{"bare ten digits", "tel 5551234567", "tel [PHONE]"},
		{"ssn dashes", "ssn 123-45-6789", "ssn [SSN]"},
		{"ssn spaces", "123 45 6789", "[SSN]"},
		{"ssn bare", "123456789", "[SSN]"},
		{"visa grouped", "card 4111 1111 1111 1111 exp", "card [CARD] exp"},
		{"visa dashes", "4111-1111-1111-1111", "[CARD]"},
		{"amex", "378282246310005", "[CARD]"},
		{"ipv4", "from 192.168.10.4:8080", "from [IP]:8080"},
		{"iso date kept", "due 2026-11-30", "due 2026-11-30"},
		{"us date kept", "due 11/30/2026", "due 11/30/2026"},
		{"small numbers kept", "3 items at 42 each, v1.2.3", "3 items at 42 each, v1.2.3"},
		{"year range kept", "2020-2026", "2020-2026"},
		{"time kept", "at 10:40:00", "at 10:40:00"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Mask(tt.in); got != tt.want {
				t.Errorf("Mask(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSensitiveKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"password", true},
		{"db_password", true},
		{"apiKey", true},
		{"api_key", true},
		{"X-Auth-Token", true},
		{"access_token", true},
		{"phoneNumber", true},
		{"ssn", true},
		{"card_number", true},
		{"creditCard", true},
		{"max_tokens", false},
		{"author", false},
		{"name", false},
		{"description", false},
		{"card", false},
	}
	for _, tt := range tests {
		if got := SensitiveKey(tt.key); got != tt.want {
			t.Errorf("SensitiveKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestMaskMap(t *testing.T) {
	in := map[string]any{
		"note":     "reach me at jane@example.com",
		"password": "hunter2",
		"phone":    5551234567.0,
		"verified": true,
		"nested": map[string]any{
			"list":  []any{"ssn 123-45-6789", 7.0, nil},
			"token": map[string]any{"value": "abc", "ok": false},
		},
		"count": 3.0,
	}
	want := map[string]any{
		"note":     "reach me at [EMAIL]",
		"password": RedactedMask,
		"phone":    RedactedMask,
		"verified": true,
		"nested": map[string]any{
			"list":  []any{"ssn [SSN]", 7.0, nil},
			"token": map[string]any{"value": RedactedMask, "ok": false},
		},
		"count": 3.0,
	}
	got := MaskMap(in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MaskMap (-want +got):\n%s", diff)
	}
	if in["password"] != "hunter2" {
		t.Error("MaskMap modified its input")
	}
	if MaskMap(nil) != nil {
		t.Error("MaskMap(nil) != nil")
	}
}

func TestMaskJSON(t *testing.T) {
	got := string(MaskJSON([]byte(`{"to":"a@example.com","n":1,"secret":"x"}`)))
	want := `{"n":1,"secret":"[REDACTED]","to":"[EMAIL]"}`
	if got != want {
		t.Errorf("MaskJSON = %s, want %s", got, want)
	}
	if got := string(MaskJSON([]byte(`not json a@example.com`))); got != `"not json [EMAIL]"` {
		t.Errorf("MaskJSON(invalid) = %s", got)
	}
}

type stringer struct{}

func (stringer) String() string { return "user jane@example.com" }

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil)))
	log = log.With("caller_email", "x@example.com", "who", "bob@example.com")
	log.WithGroup("req").Info("login from jane@example.com",
		"ip", "10.0.0.1",
		"api_key", "sk-123",
		"err", errors.New("bad card 4111 1111 1111 1111"),
		"meta", map[string]any{"ssn": "123-45-6789"},
		"s", stringer{},
		"n", 42,
		slog.Group("g", "phone", "555-123-4567"),
	)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("decode %s: %v", buf.Bytes(), err)
	}
	if strings.Contains(buf.String(), "example.com") || strings.Contains(buf.String(), "sk-123") ||
		strings.Contains(buf.String(), "4111") || strings.Contains(buf.String(), "6789") {
		t.Fatalf("PII leaked: %s", buf.String())
	}
	want := map[string]any{
		"msg":          "login from [EMAIL]",
		"caller_email": RedactedMask,
		"who":          "[EMAIL]",
		"req": map[string]any{
			"ip":      "[IP]",
			"api_key": RedactedMask,
			"err":     "bad card [CARD]",
			"meta":    map[string]any{"ssn": RedactedMask},
			"s":       "user [EMAIL]",
			"n":       42.0,
			"g":       map[string]any{"phone": RedactedMask},
		},
	}
	delete(rec, "time")
	delete(rec, "level")
	if diff := cmp.Diff(want, rec); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

func TestReplaceAttr(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr}))
	log.Info("x", "to", "a@example.com")
	if !strings.Contains(buf.String(), "to=[EMAIL]") {
		t.Errorf("got %s", buf.String())
	}
}

func BenchmarkMaskClean(b *testing.B) {
	s := "a log line with nothing personal in it at all"
	for b.Loop() {
		_ = Mask(s)
	}
}

func BenchmarkMaskDirty(b *testing.B) {
	s := "order 12 for jane@example.com, call 555-123-4567, card 4111 1111 1111 1111"
	for b.Loop() {
		_ = Mask(s)
	}
}

func FuzzMask(f *testing.F) {
	for _, s := range []string{"", "jane@example.com", "call 555-123-4567", "4111 1111 1111 1111", "123-45-6789", "10.0.0.1", "2026-11-30"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := Mask(s)
		if twice := Mask(once); twice != once {
			t.Errorf("Mask is not idempotent: %q -> %q -> %q", s, once, twice)
		}
		if strings.Contains(once, "@") && emailRE.MatchString(once) {
			t.Errorf("email left in %q", once)
		}
	})
}

func TestMaskValue(t *testing.T) {
	type record struct {
		Email string `json:"email_address"`
		Note  string `json:"note"`
	}
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"string slice", []string{"a@example.com", "ok"}, []string{"[EMAIL]", "ok"}},
		{"string map", map[string]string{"note": "555-123-4567", "token": "t"}, map[string]string{"note": "[PHONE]", "token": RedactedMask}},
		{"raw JSON", json.RawMessage(`{"to":"a@example.com"}`), json.RawMessage(`{"to":"[EMAIL]"}`)},
		{"number", 3.5, 3.5},
		{"other types pass", record{Email: "x"}, record{Email: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, MaskValue(tt.in)); diff != "" {
				t.Errorf("MaskValue (-want +got):\n%s", diff)
			}
		})
	}
	// Log attributes of arbitrary types are masked through their JSON form.
	var buf bytes.Buffer
	slog.New(NewHandler(slog.NewJSONHandler(&buf, nil))).Info("m",
		"rec", record{Email: "a@example.com", Note: "call 555-123-4567"},
		"bytes", []byte("b@example.com"))
	if strings.Contains(buf.String(), "example.com") || strings.Contains(buf.String(), "555-123") {
		t.Errorf("PII leaked: %s", buf.String())
	}
	if !strings.Contains(buf.String(), `"email_address":"[REDACTED]"`) {
		t.Errorf("struct attribute not masked by key: %s", buf.String())
	}
}

// TestSplitWords: keys split at each separator and at a lower-to-upper
// change, never inside a run of capitals or at the key's edges.
func TestSplitWords(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want []string
	}{
		{"api_key", []string{"api", "key"}},
		{"X-Auth-Token", []string{"x", "auth", "token"}},
		{"card.number", []string{"card", "number"}},
		{"credit card", []string{"credit", "card"}},
		{"user/password", []string{"user", "password"}},
		{"phoneNumber", []string{"phone", "number"}},
		{"zZ", []string{"z", "z"}},
		{"aZ", []string{"a", "z"}},
		{"aA", []string{"a", "a"}},
		{"`Z", []string{"`z"}},
		{"Za", []string{"za"}},
		{"a@Z", []string{"a@z"}},
		{"a[Z", []string{"a[z"}},
		{"a{Z", []string{"a{z"}},
		{"APIKey", []string{"apikey"}},
		{"__a__", []string{"a"}},
		{"", nil},
	} {
		if got := splitWords(tt.key); !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
