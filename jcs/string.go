package jcs

const lowerHex = "0123456789abcdef"

// AppendString appends s, which must be valid UTF-8, to dst as a JCS
// string (RFC 8785 §3.2.2.2): only the quote, the backslash and the C0
// controls are escaped, the five controls JSON has a short form for by
// it, the others as \u00xx in lower case. Everything else, U+007F and
// beyond included, is written as it is.
//
// It takes a string or a []byte, so that neither caller converts (and
// copies) what it holds. Invalid UTF-8 is copied through unchanged;
// callers validate first.
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', lowerHex[b>>4], lowerHex[b&0xF])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
