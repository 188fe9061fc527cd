package jcs

// Compare orders two valid UTF-8 strings as JCS orders object member
// names (RFC 8785 §3.2.3): by their UTF-16 code units. It returns -1, 0
// or +1, like strings.Compare, and 0 only when a and b are the same bytes.
//
// UTF-8 byte order is code point order, and UTF-16 order differs from
// that only where a character beyond U+FFFF (written as a surrogate pair,
// D800–DBFF first) meets one in U+E000–U+FFFF: the first sorts before the
// second in UTF-16. So no character is decoded: at the first byte that
// differs, the two lead bytes of U+E000–U+FFFF (EE, EF) rank after the
// lead bytes of the supplementary planes (F0–F4), and every other byte
// ranks as itself. On invalid UTF-8 that is still a total order, just
// not a meaningful one.
func Compare[S ~string | ~[]byte](a, b S) int {
	n := min(len(a), len(b))
	for i := range n {
		if x, y := a[i], b[i]; x != y {
			if rank(x) < rank(y) {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}

// rank moves the lead bytes of U+E000–U+FFFF past every other byte.
func rank(b byte) int {
	if b == 0xEE || b == 0xEF {
		return int(b) + 0x100
	}
	return int(b)
}
