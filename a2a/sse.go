package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Event is one server-sent event.
type Event struct {
	ID    string
	Event string
	Data  []byte
}

// AppendEvent appends ev in text/event-stream framing. Data containing line
// breaks is split over several data lines, as the format requires; CR LF and
// a lone CR count as line breaks too, so a reader gets them back as LF.
func AppendEvent(b []byte, ev Event) []byte {
	if ev.ID != "" {
		b = append(b, "id: "...)
		b = appendSSEField(b, ev.ID)
		b = append(b, '\n')
	}
	if ev.Event != "" {
		b = append(b, "event: "...)
		b = appendSSEField(b, ev.Event)
		b = append(b, '\n')
	}
	data := ev.Data
	for {
		b = append(b, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			b = append(b, data...)
			break
		}
		b = append(b, data[:i]...)
		b = append(b, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(b, '\n', '\n')
}

// appendSSEField drops CR and LF, which would end the field early.
func appendSSEField(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' && s[i] != '\r' {
			b = append(b, s[i])
		}
	}
	return b
}

// KeepAlive is the comment line servers send to keep idle streams open
// through proxies.
var KeepAlive = []byte(": keep-alive\n\n")

// ErrEventTooLarge is returned by [EventReader.Next] when an event exceeds
// the reader's limit.
var ErrEventTooLarge = errors.New("a2a: server-sent event exceeds size limit")

// DefaultMaxEventSize bounds one event read by an EventReader.
const DefaultMaxEventSize = 10 << 20

// EventReader reads server-sent events from a stream.
type EventReader struct {
	r       *bufio.Reader
	max     int
	lastID  string
	line    []byte
	started bool // the leading byte-order mark, if any, was dropped
	skipLF  bool // the last line ended with CR: a following LF belongs to it
}

// NewEventReader reads events from r; maxSize bounds one event, counting
// every byte of its lines (0 means DefaultMaxEventSize).
func NewEventReader(r io.Reader, maxSize int) *EventReader {
	if maxSize <= 0 {
		maxSize = DefaultMaxEventSize
	}
	return &EventReader{r: bufio.NewReaderSize(r, 16<<10), max: maxSize}
}

// Next returns the next event that carries data, skipping comments and
// events without data. Lines may end with LF, CR LF or CR. It returns io.EOF
// when the stream ends between events, and io.ErrUnexpectedEOF when it ends
// inside one (the partial event is discarded, as the SSE format specifies,
// but the caller learns that the stream was cut). An event larger than the
// limit fails with ErrEventTooLarge; the reader is unusable afterwards.
func (er *EventReader) Next() (Event, error) {
	var ev Event
	var data []byte
	hasData := false
	size := 0
	for {
		line, err := er.readLine(&size)
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
				if data == nil {
					data = []byte{} // present but empty, unlike an event without data
				}
				ev.Data = data
				if ev.ID == "" {
					ev.ID = er.lastID
				}
				return ev, nil
			}
			ev, data, size = Event{}, nil, 0
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		case "event":
			ev.Event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				ev.ID = string(value)
				er.lastID = ev.ID
			}
		}
	}
}

// LastID is the id of the last event read that named one, which is what a
// reconnecting client sends as Last-Event-ID.
func (er *EventReader) LastID() string { return er.lastID }

var bom = []byte("\xEF\xBB\xBF")

// readLine returns the next line without its terminator; the slice is valid
// until the next call. It returns io.EOF at a clean end of stream and
// io.ErrUnexpectedEOF when the stream ends inside a line.
func (er *EventReader) readLine(size *int) ([]byte, error) {
	if !er.started {
		er.started = true
		if p, _ := er.r.Peek(len(bom)); bytes.Equal(p, bom) {
			_, _ = er.r.Discard(len(bom))
		}
	}
	if er.skipLF {
		er.skipLF = false
		if p, _ := er.r.Peek(1); len(p) == 1 && p[0] == '\n' {
			_, _ = er.r.Discard(1)
			*size++
		}
	}
	er.line = er.line[:0]
	for {
		buf, err := er.r.Peek(1)
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(er.line) > 0 {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, io.EOF
			}
			return nil, err
		}
		buf, _ = er.r.Peek(er.r.Buffered())
		i := bytes.IndexAny(buf, "\r\n")
		n := len(buf)
		if i >= 0 {
			n = i + 1
		}
		if *size += n; *size > er.max {
			return nil, ErrEventTooLarge
		}
		if i >= 0 {
			er.line = append(er.line, buf[:i]...)
			er.skipLF = buf[i] == '\r'
			_, _ = er.r.Discard(n)
			return er.line, nil
		}
		er.line = append(er.line, buf...)
		_, _ = er.r.Discard(n)
	}
}
