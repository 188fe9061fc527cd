package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// Stream is a streamed chat completion, read chunk by chunk as the server
// sends it:
//
//	s, err := c.ChatCompletionStream(ctx, req)
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	for s.Next() {
//		fmt.Print(s.Chunk().Text())
//	}
//	if err := s.Err(); err != nil {
//		return err
//	}
//
// A Stream is used by one goroutine; Close may be called from any.
type Stream struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	body    io.ReadCloser
	dec     *EventReader

	chunk *Chunk
	usage *Usage
	err   error
	done  bool

	closeOnce sync.Once
}

// Next reads the next chunk; false at the end of the stream ([DONE]) or
// on an error, which Err reports.
func (s *Stream) Next() bool {
	if s.done || s.err != nil {
		return false
	}
	for {
		ev, err := s.dec.Next()
		if err != nil {
			s.fail(err)
			return false
		}
		s.timer.Reset(s.timeout)
		if bytes.Equal(ev.Data, doneMarker) {
			s.done = true
			s.chunk = nil
			s.release()
			return false
		}
		if ev.Name == "error" {
			s.err = errorEvent(ev.Data)
			s.release()
			return false
		}
		var c streamChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			s.err = fmt.Errorf("llm: chat completion stream: %w: %w", ErrMalformedResponse, err)
			s.release()
			return false
		}
		if len(c.Error) > 0 && firstByte(c.Error) != 'n' {
			s.err = errorEvent(ev.Data)
			s.release()
			return false
		}
		if c.Usage != nil {
			s.usage = c.Usage
		}
		s.chunk = &c.Chunk
		return true
	}
}

// Chunk returns the chunk Next read.
func (s *Stream) Chunk() *Chunk { return s.chunk }

// Usage returns the usage of the call once the stream has carried it (a
// request with StreamOptions.IncludeUsage), else nil.
func (s *Stream) Usage() *Usage { return s.usage }

// Err returns the error that ended the stream, nil after [DONE]. An error
// event the server sent is an *APIError; a stream that broke off wraps
// ErrStreamTruncated; one that stalled wraps ErrTimeout.
func (s *Stream) Err() error { return s.err }

// Close ends the stream and frees its connection; reading stops at once.
// It may be called more than once.
func (s *Stream) Close() error {
	s.release()
	return nil
}

func (s *Stream) release() {
	s.closeOnce.Do(func() {
		s.timer.Stop()
		s.cancel(errClosed)
		s.body.Close()
	})
}

// errClosed is the cause a closed stream's context is cancelled with.
var errClosed = errors.New("llm: stream closed")

func (s *Stream) fail(err error) {
	cause := context.Cause(s.ctx)
	switch {
	case errors.Is(cause, ErrTimeout):
		s.err = fmt.Errorf("llm: chat completion stream: %w (no event for %s)", ErrTimeout, s.timeout)
	case errors.Is(cause, errClosed):
		s.err = fmt.Errorf("llm: chat completion stream: %w", errClosed)
	case cause != nil:
		s.err = fmt.Errorf("llm: chat completion stream: %w", cause)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		s.err = fmt.Errorf("llm: chat completion stream: %w", ErrStreamTruncated)
	case errors.Is(err, ErrEventTooLarge):
		s.err = fmt.Errorf("llm: chat completion stream: %w", err)
	default:
		s.err = fmt.Errorf("llm: chat completion stream: %w: %w", ErrStreamTruncated, err)
	}
	s.release()
}

// streamChunk is a chunk, or the error object a server sends in place of
// one.
type streamChunk struct {
	Chunk
	Error json.RawMessage `json:"error"`
}

var doneMarker = []byte("[DONE]")

// errorEvent reads an error a server sent inside a stream: {"error": …}
// in a chunk's place, or an "error" event, whose data may be anything.
func errorEvent(data []byte) *APIError {
	if e := parseErrorEvent(data); e != nil {
		return e
	}
	return &APIError{Type: TypeServer, Message: clip(string(bytes.ToValidUTF8(data, nil)), maxErrorMessage)}
}

// parseErrorEvent reads {"error": …}; nil when data is not one.
func parseErrorEvent(data []byte) *APIError {
	var wire struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &wire) != nil || len(wire.Error) == 0 || firstByte(wire.Error) == 'n' {
		return nil
	}
	return ParseError(0, data)
}

// Event is one server-sent event: its type ("" for the default,
// "message") and its data lines joined by newlines.
type Event struct {
	Name string
	Data []byte
}

// EventReader reads server-sent events (the WHATWG EventSource format), as
// OpenAI-compatible servers stream chat completions: lines end in LF, CRLF
// or a lone CR; "data" lines accumulate, "event" names the event, comments
// and the other fields are skipped, and a blank line dispatches an event
// that has data. Each byte is looked at once, so the work is linear in the
// input, and no line and no event's data may be longer than the bound.
type EventReader struct {
	r   io.Reader
	buf []byte
	pos int // buf[pos:end] is read but not yet consumed
	end int
	err error // the reader's error, returned once buf is consumed

	line    []byte // the line being assembled across reads
	lastCR  bool   // the last line ended in CR: a following LF belongs to it
	data    []byte
	name    []byte
	hasData bool
	max     int
}

// NewEventReader returns a reader of the events of r whose lines and
// events' data are at most maxEventBytes long (DefaultMaxEventBytes when
// not positive).
func NewEventReader(r io.Reader, maxEventBytes int) *EventReader {
	if maxEventBytes <= 0 {
		maxEventBytes = DefaultMaxEventBytes
	}
	return &EventReader{r: r, buf: make([]byte, 4096), max: maxEventBytes}
}

// Next returns the next event that has data; its Data is the caller's to
// keep. At the end of the input it returns io.EOF (an event the input
// ends inside is dropped, as the format says; io.ErrUnexpectedEOF when
// it ends inside a line), and an error wrapping ErrEventTooLarge for a
// line or event over the bound.
func (d *EventReader) Next() (Event, error) {
	for {
		line, err := d.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !d.hasData {
				d.name = d.name[:0]
				continue
			}
			ev := Event{Name: string(d.name), Data: bytes.TrimSuffix(d.data, []byte{'\n'})}
			d.data, d.name, d.hasData = nil, d.name[:0], false
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte{' '})
		}
		switch string(field) {
		case "data":
			if len(d.data)+len(value)+1 > d.max {
				return Event{}, fmt.Errorf("%w (over %d bytes)", ErrEventTooLarge, d.max)
			}
			d.data = append(d.data, value...)
			d.data = append(d.data, '\n')
			d.hasData = true
		case "event":
			d.name = append(d.name[:0], value...)
		}
	}
}

// readLine returns the next line without its end. The slice is valid
// until the next call.
func (d *EventReader) readLine() ([]byte, error) {
	d.line = d.line[:0]
	for {
		if d.pos == d.end {
			if d.err != nil {
				return nil, d.err
			}
			n, err := d.r.Read(d.buf)
			d.pos, d.end, d.err = 0, n, err
			if n == 0 && err == nil {
				continue
			}
			if n == 0 {
				if err == io.EOF && len(d.line) > 0 {
					// The input ended inside a line: no event can follow.
					return nil, io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		chunk := d.buf[d.pos:d.end]
		if d.lastCR {
			d.lastCR = false
			if chunk[0] == '\n' {
				d.pos++
				continue
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			if len(d.line)+len(chunk) > d.max {
				return nil, fmt.Errorf("%w: a line is over %d bytes", ErrEventTooLarge, d.max)
			}
			d.line = append(d.line, chunk...)
			d.pos = d.end
			continue
		}
		if len(d.line)+i > d.max {
			return nil, fmt.Errorf("%w: a line is over %d bytes", ErrEventTooLarge, d.max)
		}
		d.lastCR = chunk[i] == '\r'
		d.pos += i + 1
		if len(d.line) == 0 {
			// The whole line is in the buffer: no copy.
			return chunk[:i], nil
		}
		d.line = append(d.line, chunk[:i]...)
		return d.line, nil
	}
}
