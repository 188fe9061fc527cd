package strictjson

// quickClean is Check's fast path: it reports true only when data is
// certainly what c admits, and its members' names are ASCII without
// escapes. Anything else (a syntax error, an escape or a non-ASCII byte
// in a name, a repeated or unknown name) makes it answer false, and Check
// walks the document token by token, which also says what is wrong and
// where. The walk through encoding/json's tokens costs about three full
// decodes; this scan, which allocates only for objects' name sets, costs
// a fraction of one.
func quickClean(data []byte, c *config) bool {
	s := scanner{in: data, c: c}
	s.space()
	if s.i >= len(s.in) || c.Object && s.in[s.i] != '{' {
		return false
	}
	if !s.value(1, c.Fields) {
		return false
	}
	s.space()
	return s.i == len(s.in)
}

type scanner struct {
	in []byte
	i  int
	c  *config
}

func (s *scanner) space() { s.i = skipSpace(s.in, s.i) }

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(in []byte, i int) int {
	for i < len(in) {
		switch in[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value scans one value at s.i; depth counts the containers it is in,
// itself included when it is one.
func (s *scanner) value(depth int, f *Fields) bool {
	if s.i >= len(s.in) {
		return false
	}
	switch c := s.in[s.i]; {
	case c == '{':
		return depth <= s.c.MaxDepth && s.object(depth, f)
	case c == '[':
		return depth <= s.c.MaxDepth && s.array(depth, f.items())
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	case c == '-' || isDigit(c):
		return s.number()
	}
	return false
}

func (s *scanner) word(w string) bool {
	if len(s.in)-s.i < len(w) || string(s.in[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

func (s *scanner) object(depth int, f *Fields) bool {
	s.i++ // {
	s.space()
	if s.i < len(s.in) && s.in[s.i] == '}' {
		s.i++
		return true
	}
	var seen map[string]struct{}
	u := f.union()
	var (
		tag       []byte // the union's tag, once read
		body      [2]int // where the union's body is, while it waits for its tag
		deferBody bool
	)
	for {
		if s.i >= len(s.in) || s.in[s.i] != '"' {
			return false
		}
		name, simple := s.str()
		if !simple {
			return false
		}
		for _, c := range name {
			if c == '\\' || c >= 0x80 {
				return false
			}
		}
		sub, known := f.member(name)
		if !known {
			return false
		}
		isTag, isBody := u != nil && string(name) == u.Tag, u != nil && string(name) == u.Body
		if isBody {
			if tag != nil {
				sub = u.variant(string(tag))
			} else {
				sub, deferBody = nil, true
			}
		}
		key := s.c.key(name)
		if _, dup := seen[key]; dup {
			return false
		}
		if seen == nil {
			seen = make(map[string]struct{}, 8)
		}
		seen[key] = struct{}{}
		s.space()
		if s.i >= len(s.in) || s.in[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		start := s.i
		if !s.value(depth+1, sub) {
			return false
		}
		switch {
		case isTag:
			if tag = s.simpleString(start); tag == nil {
				return false
			}
		case isBody && deferBody:
			body = [2]int{start, s.i}
		}
		more, ok := s.separator('}')
		if more {
			continue
		}
		if ok && deferBody && tag != nil {
			// The body came before its tag: scan it again, now knowing
			// what it may hold.
			again := scanner{in: s.in[:body[1]], i: body[0], c: s.c}
			return again.value(depth+1, u.variant(string(tag))) && again.i == body[1]
		}
		return ok
	}
}

// simpleString returns the contents of the string value in[start:s.i]
// when it is ASCII without escapes, so that its raw bytes are its text;
// otherwise nil, and the walk reads it.
func (s *scanner) simpleString(start int) []byte {
	raw := s.in[start:s.i]
	if len(raw) < 2 || raw[0] != '"' {
		return nil
	}
	raw = raw[1 : len(raw)-1]
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return nil
		}
	}
	return raw
}

// separator scans what follows a container's member: a comma (more is
// true) or the closing byte (more is false, ok true).
func (s *scanner) separator(closing byte) (more, ok bool) {
	s.space()
	if s.i >= len(s.in) {
		return false, false
	}
	switch s.in[s.i] {
	case ',':
		s.i++
		s.space()
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

func (s *scanner) array(depth int, items *Fields) bool {
	s.i++ // [
	s.space()
	if s.i < len(s.in) && s.in[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth+1, items) {
			return false
		}
		if more, ok := s.separator(']'); !more {
			return ok
		}
	}
}

// str scans a string at s.i and returns its raw contents (escapes left
// as written). ok is false for a malformed string: an unterminated one, a
// control character, or an escape JSON does not have.
func (s *scanner) str() (raw []byte, ok bool) {
	start := s.i + 1
	for j := start; j < len(s.in); j++ {
		switch c := s.in[j]; {
		case c == '"':
			s.i = j + 1
			return s.in[start:j], true
		case c < 0x20:
			return nil, false
		case c == '\\':
			j++
			if j >= len(s.in) {
				return nil, false
			}
			switch s.in[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.in) {
					return nil, false
				}
				for _, h := range s.in[j+1 : j+5] {
					if !isHex(h) {
						return nil, false
					}
				}
				j += 4
			default:
				return nil, false
			}
		}
	}
	return nil, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

// number scans JSON's number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func (s *scanner) number() bool {
	if s.in[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.in) && s.in[s.i] == '0':
		s.i++
	case s.i < len(s.in) && isDigit(s.in[s.i]):
		s.digits()
	default:
		return false
	}
	if s.i < len(s.in) && s.in[s.i] == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if s.i < len(s.in) && (s.in[s.i] == 'e' || s.in[s.i] == 'E') {
		s.i++
		if s.i < len(s.in) && (s.in[s.i] == '+' || s.in[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits scans one or more digits.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.in) && isDigit(s.in[s.i]) {
		s.i++
	}
	return s.i > start
}
