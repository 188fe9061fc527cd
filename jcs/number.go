package jcs

import (
	"bytes"
	"math"
	"strconv"
)

// AppendNumber appends f to dst as ECMAScript's Number.prototype.toString
// writes it (RFC 8785 §3.2.2.3): the shortest digits that read back as f,
// in plain notation from 1e-6 up to (not including) 1e21 and in exponent
// notation (1e-7, 1e+21) outside; both zeros as 0. It panics if f is NaN
// or infinite, which JSON cannot carry: callers refuse those first.
func AppendNumber(dst []byte, f float64) []byte {
	var buf [32]byte
	digits, n := ShortestDigits(buf[:0], f)
	return AppendDigits(dst, f < 0, digits, n)
}

// ShortestDigits returns the shortest decimal digits that read back as
// |f| (the nearest to |f| where several are as short, as ECMAScript
// picks), and the exponent n with |f| = 0.digits × 10^n: ECMAScript's
// digits and n. Zero has no digits. The digits are built in buf's
// storage; 32 bytes hold every double's.
//
// AppendNumber is ShortestDigits then AppendDigits. The two halves are
// exported for a caller that judges the digits before it writes them (the
// gate refuses a number whose text has more digits than its double), so
// that it formats the double once. It panics if f is NaN or infinite.
func ShortestDigits(buf []byte, f float64) (digits []byte, n int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("jcs: NaN or infinite number")
	}
	if f == 0 {
		return buf[:0], 0
	}
	// 'e' with precision -1 is d.ddddde±xx with the shortest digits.
	s := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64)
	e := bytes.IndexByte(s, 'e')
	x := 0
	for _, d := range s[e+2:] { // past the sign, which 'e' always writes
		x = x*10 + int(d-'0')
	}
	if s[e+1] == '-' {
		x = -x
	}
	digits = s[:1]
	if e > 1 {
		digits = append(digits, s[2:e]...) // overwrites the point in place
	}
	return digits, x + 1
}

// AppendDigits appends ±0.digits × 10^n (digits as ShortestDigits returns
// them, no leading or trailing zeros) in ECMAScript's notation. No digits
// is zero, written 0 whatever neg says.
func AppendDigits(dst []byte, neg bool, digits []byte, n int) []byte {
	k := len(digits)
	if k == 0 {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}
