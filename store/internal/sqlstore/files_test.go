package sqlstore

import (
	"strings"
	"testing"
	"unicode/utf8"

	"novaos.dev/novaos/tools"
)

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct {
		prefix, end string
		ok          bool
	}{
		{"", "", false},
		{"a", "b", true},
		{"a/", "a0", true},
		{"ab~", "ab\x7f", true},
		{"é", "ê", true},
		{"x\u007f", "x\u0080", true}, // one byte to two
		{"x\uD7FF", "x\uE000", true}, // past the surrogates
		{"x\uFFFF", "x\U00010000", true},
		{"x\U0010FFFF", "y", true},
		{"\U0010FFFF\U0010FFFF", "", false},
	} {
		end, ok := prefixEnd(c.prefix)
		if end != c.end || ok != c.ok {
			t.Errorf("prefixEnd(%q) = %q, %v; want %q, %v", c.prefix, end, ok, c.end, c.ok)
		}
	}
}

// Every string that starts with a prefix sorts in [prefix, prefixEnd),
// and every valid string in that range starts with the prefix.
func FuzzPrefixEnd(f *testing.F) {
	for _, s := range []string{"a", "a/b", "é", "\uD7FF", "\U0010FFFF", "ノート"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, prefix, rest string) {
		if !utf8.ValidString(prefix) || !utf8.ValidString(rest) {
			return
		}
		end, ok := prefixEnd(prefix)
		if ok && !utf8.ValidString(end) {
			t.Fatalf("prefixEnd(%q) = %q, not UTF-8", prefix, end)
		}
		s := prefix + rest
		if s < prefix || ok && s >= end {
			t.Fatalf("%q starts with %q but is out of [%q, %q)", s, prefix, prefix, end)
		}
		if ok && rest >= prefix && rest < end && !strings.HasPrefix(rest, prefix) {
			t.Fatalf("%q is in [%q, %q) but does not start with the prefix", rest, prefix, end)
		}
	})
}

func TestFilePage(t *testing.T) {
	for _, c := range []struct {
		f       tools.FileFilter
		from    string
		after   bool
		end     string
		bounded bool
	}{
		{tools.FileFilter{}, "", true, "", false},
		{tools.FileFilter{Prefix: "a/"}, "a/", false, "a0", true},
		{tools.FileFilter{Prefix: "a/", After: "a"}, "a/", false, "a0", true},
		{tools.FileFilter{Prefix: "a/", After: "a/x"}, "a/x", true, "a0", true},
		{tools.FileFilter{After: "m"}, "m", true, "", false},
	} {
		from, after, end, bounded := FilePage(&c.f)
		if from != c.from || after != c.after || end != c.end || bounded != c.bounded {
			t.Errorf("FilePage(%+v) = %q %v %q %v; want %q %v %q %v", c.f, from, after, end, bounded, c.from, c.after, c.end, c.bounded)
		}
	}
}
