package a2a

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// The append-style encoders below exist because encoding/json re-validates
// and compacts whatever a MarshalJSON method returns; writing the oneof and
// timestamp shapes directly keeps the hot path (every task and stream frame)
// cheap.

func appendPart(b []byte, p *Part) ([]byte, error) {
	b = append(b, '{')
	switch p.Kind {
	case PartRaw:
		b = append(b, `"raw":"`...)
		b = base64.StdEncoding.AppendEncode(b, p.Raw)
		b = append(b, '"')
	case PartURL:
		b = append(b, `"url":`...)
		b = appendString(b, p.URL)
	case PartData:
		b = append(b, `"data":`...)
		if len(p.Data) == 0 {
			b = append(b, "null"...)
		} else {
			var err error
			if b, err = appendRawJSON(b, p.Data); err != nil {
				return nil, err
			}
		}
	default:
		b = append(b, `"text":`...)
		b = appendString(b, p.Text)
	}
	if p.Filename != "" {
		b = append(b, `,"filename":`...)
		b = appendString(b, p.Filename)
	}
	if p.MediaType != "" {
		b = append(b, `,"mediaType":`...)
		b = appendString(b, p.MediaType)
	}
	if len(p.Metadata) > 0 {
		m, err := json.Marshal(p.Metadata)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"metadata":`...)
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

func appendTaskStatus(b []byte, s *TaskStatus) ([]byte, error) {
	b = append(b, `{"state":"`...)
	b = append(b, s.State.String()...)
	b = append(b, '"')
	if s.Message != nil {
		m, err := json.Marshal(s.Message)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"message":`...)
		b = append(b, m...)
	}
	if !s.Timestamp.IsZero() {
		b = append(b, `,"timestamp":"`...)
		b = s.Timestamp.UTC().AppendFormat(b, TimestampLayout)
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// appendRawJSON appends a caller-supplied JSON value after checking that it
// is valid, so a bad Data payload fails the encode instead of corrupting the
// stream.
func appendRawJSON(b []byte, raw json.RawMessage) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, &json.UnsupportedValueError{Str: "invalid JSON in data part"}
	}
	return append(b, raw...), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string with the same escaping rules as
// encoding/json (HTML-safe, invalid UTF-8 replaced).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
