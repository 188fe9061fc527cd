package a2a

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Event is one server-sent event.
type Event struct {
	ID    string
	Event string
	Data  []byte
}

// AppendEvent appends ev in text/event-stream framing. Data containing
// newlines is split over several data lines, as the format requires.
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
		i := bytes.IndexByte(data, '\n')
		b = append(b, "data: "...)
		if i < 0 {
			b = append(b, bytes.TrimSuffix(data, []byte{'\r'})...)
			break
		}
		b = append(b, bytes.TrimSuffix(data[:i], []byte{'\r'})...)
		b = append(b, '\n')
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
	r      *bufio.Reader
	max    int
	lastID string
}

// NewEventReader reads events from r; maxSize bounds one event (0 means
// DefaultMaxEventSize).
func NewEventReader(r io.Reader, maxSize int) *EventReader {
	if maxSize <= 0 {
		maxSize = DefaultMaxEventSize
	}
	return &EventReader{r: bufio.NewReaderSize(r, 16<<10), max: maxSize}
}

// Next returns the next event that carries data, skipping comments. It
// returns io.EOF at the end of the stream; an event cut off by the end of the
// stream is discarded, as the SSE format specifies.
func (er *EventReader) Next() (Event, error) {
	var ev Event
	var data []byte
	hasData := false
	size := 0
	for {
		line, err := er.readLine(&size)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if hasData {
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

func (er *EventReader) readLine(size *int) ([]byte, error) {
	var line []byte
	for {
		frag, err := er.r.ReadSlice('\n')
		*size += len(frag)
		if *size > er.max {
			return nil, ErrEventTooLarge
		}
		if err == nil {
			if line == nil {
				line = frag
			} else {
				line = append(line, frag...)
			}
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, frag...)
			continue
		}
		if errors.Is(err, io.EOF) && len(frag) > 0 {
			return nil, fmt.Errorf("a2a: stream ended mid-event: %w", io.EOF)
		}
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, nil
}
