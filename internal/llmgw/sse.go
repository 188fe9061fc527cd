package llmgw

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// errEventTooLarge: a provider's stream event is larger than the bound.
var errEventTooLarge = errors.New("llmgw: a stream event is larger than the limit")

// sseReader reads the data of server-sent events (the WHATWG event stream
// format) as OpenAI-compatible providers stream them: each event's data
// lines joined by "\n". Comments, and the event, id and retry fields,
// are skipped. Its cost is linear in what it reads.
type sseReader struct {
	r    *bufio.Reader
	max  int
	data []byte
	line []byte
}

func newSSEReader(r io.Reader, maxEvent int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10), max: maxEvent}
}

// next returns the data of the next event, valid until the next call;
// io.EOF at the end of the stream (an event the stream ends in the
// middle of is dropped, as the format says).
func (s *sseReader) next() ([]byte, error) {
	s.data = s.data[:0]
	has := false
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			if has {
				return s.data, nil
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		if string(field) != "data" {
			continue // a comment, or a field the gateway does not use
		}
		if has {
			s.data = append(s.data, '\n')
		}
		if len(s.data)+len(value) > s.max {
			return nil, errEventTooLarge
		}
		s.data, has = append(s.data, value...), true
	}
}

// readLine reads one line without its end (CRLF, LF or CR), at most max
// bytes.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		if len(s.line)+len(chunk) > s.max+2 {
			return nil, errEventTooLarge
		}
		s.line = append(s.line, chunk...)
		switch {
		case err == nil:
			l := bytes.TrimSuffix(s.line[:len(s.line)-1], []byte("\r"))
			// A lone CR ends a line too; providers do not send one inside
			// JSON, where it is escaped.
			if i := bytes.IndexByte(l, '\r'); i >= 0 {
				return nil, fmt.Errorf("llmgw: a stream line holds a bare carriage return")
			}
			return l, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(s.line) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
