package a2a

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll reads events until an error and returns them with that error.
func readAll(r io.Reader, max int) ([]Event, error) {
	er := NewEventReader(r, max)
	var evs []Event
	for {
		ev, err := er.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestEventRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   Event
		want Event // what a reader returns; zero means in
	}{
		{name: "data only", in: Event{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}},
		{name: "id and event", in: Event{ID: "42", Event: "error", Data: []byte("x")}},
		{name: "empty data", in: Event{ID: "e", Data: []byte{}}},
		{name: "multi-line data", in: Event{Data: []byte("line 1\nline 2\n\nline 4")}},
		{name: "trailing newline", in: Event{Data: []byte("a\n")}},
		{name: "leading space kept", in: Event{Data: []byte("  indented")}},
		{name: "colons in data", in: Event{Data: []byte("a: b : c")}},
		{name: "CRLF becomes LF", in: Event{Data: []byte("a\r\nb")}, want: Event{Data: []byte("a\nb")}},
		{name: "lone CR becomes LF", in: Event{Data: []byte("a\rb\r")}, want: Event{Data: []byte("a\nb\n")}},
		{name: "line breaks dropped from id and event", in: Event{ID: "a\nb\r", Event: "x\ny", Data: []byte("d")},
			want: Event{ID: "ab", Event: "xy", Data: []byte("d")}},
		{name: "unicode", in: Event{ID: "日本", Data: []byte("🚀 héllo")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want.Data == nil {
				want = tc.in
			}
			stream := AppendEvent(nil, tc.in)
			stream = append(stream, KeepAlive...)
			stream = AppendEvent(stream, Event{ID: "next", Data: []byte("second")})
			evs, err := readAll(bytes.NewReader(stream), 0)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("stream %q: %v", stream, err)
			}
			if diff := cmp.Diff([]Event{want, {ID: "next", Data: []byte("second")}}, evs); diff != "" {
				t.Fatalf("stream %q (-want +got):\n%s", stream, diff)
			}
		})
	}
}

func TestAppendEventFraming(t *testing.T) {
	got := string(AppendEvent([]byte("x"), Event{ID: "1", Event: "message", Data: []byte("a\nb")}))
	if want := "xid: 1\nevent: message\ndata: a\ndata: b\n\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestEventReader(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		want    []Event
		wantErr error
	}{
		{name: "empty stream", stream: "", wantErr: io.EOF},
		{name: "comments only", stream: ": hello\n\n: keep-alive\n\n", wantErr: io.EOF},
		{name: "comment inside event", stream: "data: a\n: note\ndata: b\n\n", want: []Event{{Data: []byte("a\nb")}}, wantErr: io.EOF},
		{name: "CRLF lines", stream: "id: 1\r\ndata: a\r\ndata: b\r\n\r\n", want: []Event{{ID: "1", Data: []byte("a\nb")}}, wantErr: io.EOF},
		{name: "CR lines", stream: "id: 1\rdata: a\r\rdata: b\r\r", want: []Event{{ID: "1", Data: []byte("a")}, {ID: "1", Data: []byte("b")}}, wantErr: io.EOF},
		{name: "mixed line ends", stream: "data: a\r\ndata: b\rdata: c\n\r\n", want: []Event{{Data: []byte("a\nb\nc")}}, wantErr: io.EOF},
		{name: "byte order mark", stream: "\xEF\xBB\xBFdata: x\n\n", want: []Event{{Data: []byte("x")}}, wantErr: io.EOF},
		{name: "no space after colon", stream: "data:x\nevent:e\n\n", want: []Event{{Event: "e", Data: []byte("x")}}, wantErr: io.EOF},
		{name: "only one space stripped", stream: "data:  x\n\n", want: []Event{{Data: []byte(" x")}}, wantErr: io.EOF},
		{name: "field without colon", stream: "data\n\n", want: []Event{{Data: []byte{}}}, wantErr: io.EOF},
		{name: "unknown fields ignored", stream: "retry: 100\nfoo: bar\ndata: x\n\n", want: []Event{{Data: []byte("x")}}, wantErr: io.EOF},
		{name: "event without data is not dispatched", stream: "event: ping\n\ndata: x\n\n", want: []Event{{Data: []byte("x")}}, wantErr: io.EOF},
		{name: "last id carries over", stream: "id: 7\ndata: a\n\ndata: b\n\nid: 8\n\ndata: c\n\n",
			want: []Event{{ID: "7", Data: []byte("a")}, {ID: "7", Data: []byte("b")}, {ID: "8", Data: []byte("c")}}, wantErr: io.EOF},
		{name: "id with NUL ignored", stream: "id: 1\ndata: a\n\nid: x\x00y\ndata: b\n\n",
			want: []Event{{ID: "1", Data: []byte("a")}, {ID: "1", Data: []byte("b")}}, wantErr: io.EOF},
		{name: "event type does not carry over", stream: "event: error\ndata: a\n\ndata: b\n\n",
			want: []Event{{Event: "error", Data: []byte("a")}, {Data: []byte("b")}}, wantErr: io.EOF},
		{name: "truncated after data line", stream: "data: a\n\ndata: b\n", want: []Event{{Data: []byte("a")}}, wantErr: io.ErrUnexpectedEOF},
		{name: "truncated mid-line", stream: "data: a\n\ndata: b", want: []Event{{Data: []byte("a")}}, wantErr: io.ErrUnexpectedEOF},
		{name: "truncated before blank line", stream: "data: a\r\n", wantErr: io.ErrUnexpectedEOF},
		{name: "ends after fields without data", stream: "data: a\n\nid: 9\n", want: []Event{{Data: []byte("a")}}, wantErr: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, reader := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tc.stream)},
				{"one byte at a time", iotest.OneByteReader(strings.NewReader(tc.stream))},
				{"data with EOF", iotest.DataErrReader(strings.NewReader(tc.stream))},
			} {
				evs, err := readAll(reader.r, 0)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == io.EOF && err != io.EOF) {
					t.Fatalf("%s: err = %v, want %v", reader.name, err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.want, evs); diff != "" {
					t.Fatalf("%s: (-want +got):\n%s", reader.name, diff)
				}
			}
		})
	}
}

func TestEventReaderSizeLimit(t *testing.T) {
	const max = 64
	exact := "data: " + strings.Repeat("x", max-len("data: \n\n")) + "\n\n" // 64 bytes with its terminators
	tests := []struct {
		name    string
		stream  string
		wantN   int
		wantErr error
	}{
		{"at the limit", exact, 1, io.EOF},
		{"one byte over", "data: " + strings.Repeat("x", max-len("data: \n\n")+1) + "\n\n", 0, ErrEventTooLarge},
		{"many lines over", strings.Repeat("data: 0123456789\n", 10) + "\n", 0, ErrEventTooLarge},
		{"huge line without newline", strings.Repeat("x", 1<<20), 0, ErrEventTooLarge},
		{"limit is per event", exact + exact + exact, 3, io.EOF},
		{"comments count until a blank line", strings.Repeat(": keep-alive\n", 10), 0, ErrEventTooLarge},
		{"keep-alives between events do not add up", strings.Repeat(string(KeepAlive), 100) + exact, 1, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := readAll(strings.NewReader(tc.stream), max)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if len(evs) != tc.wantN {
				t.Fatalf("got %d events, want %d", len(evs), tc.wantN)
			}
			for _, ev := range evs {
				if len(ev.Data) > max {
					t.Fatalf("event of %d bytes exceeds the limit", len(ev.Data))
				}
			}
		})
	}
}

func TestEventReaderPropagatesReadErrors(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	evs, err := readAll(r, 0)
	if !errors.Is(err, boom) || len(evs) != 1 {
		t.Fatalf("got %d events, %v; want 1, %v", len(evs), err, boom)
	}
}

func TestEventReaderLastID(t *testing.T) {
	er := NewEventReader(strings.NewReader("id: a\ndata: 1\n\nid: b\ndata: 2\n\n"), 0)
	if er.LastID() != "" {
		t.Fatal("LastID before reading")
	}
	for _, want := range []string{"a", "b"} {
		if _, err := er.Next(); err != nil {
			t.Fatal(err)
		}
		if er.LastID() != want {
			t.Fatalf("LastID = %q, want %q", er.LastID(), want)
		}
	}
}
