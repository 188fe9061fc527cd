package tools_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"novaos.dev/novaos/tools"
)

func TestValidateFilePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"a", true},
		{"notes/2026/today.md", true},
		{"a b/c~d!", true},
		{"é/ノート/😀", true},
		{".hidden", true},
		{"a..b", true},
		{"...", true},
		{`back\slash`, true},
		{strings.Repeat("a", tools.MaxFilePath), true},
		{strings.Repeat("é", tools.MaxFilePath/2), true},
		{"", false},
		{strings.Repeat("a", tools.MaxFilePath+1), false},
		{strings.Repeat("é", tools.MaxFilePath/2) + "a", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{".", false},
		{"..", false},
		{"./a", false},
		{"a/./b", false},
		{"a/..", false},
		{"../a", false},
		{"a\x00b", false},
		{"a\tb", false},
		{"a\nb", false},
		{"a\u0085b", false}, // NEL, a C1 control
		{"a\u00a0b", false}, // a no-break space is not printable by unicode.IsPrint
		{"a\u200bb", false}, // zero-width space
		{"a\u202eb", false}, // right-to-left override
		{"a\xffb", false},
		{"a\xc3", false},
		{"\ufeffa", false}, // byte order mark
	} {
		err := tools.ValidateFilePath(tc.path)
		if (err == nil) != tc.ok {
			t.Errorf("ValidateFilePath(%q) = %v, want ok %v", tc.path, err, tc.ok)
		}
		if err != nil && !errors.Is(err, tools.ErrInvalidFile) {
			t.Errorf("ValidateFilePath(%q) = %v, not ErrInvalidFile", tc.path, err)
		}
	}
}

func TestValidateFilePrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"", true},
		{"a", true},
		{"a/", true},
		{"reports/2026-", true},
		{"a//", true}, // matches nothing, harmlessly
		{"/", false},
		{"/a", false},
		{"a\x00", false},
		{"a\x7f", false},
		{"a\xff", false},
		{strings.Repeat("a", tools.MaxFilePath+1), false},
	} {
		if err := tools.ValidateFilePrefix(tc.prefix); (err == nil) != tc.ok || err != nil && !errors.Is(err, tools.ErrInvalidFile) {
			t.Errorf("ValidateFilePrefix(%q) = %v, want ok %v", tc.prefix, err, tc.ok)
		}
	}
}

// wantPath is the rule of a valid path, written another way.
func wantPath(p string) bool {
	if p == "" || len(p) > tools.MaxFilePath || !utf8.ValidString(p) || path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return strings.IndexFunc(p, func(r rune) bool { return r != '/' && !unicode.IsPrint(r) }) < 0
}

// ValidateFilePath accepts exactly the paths of its rule, and every path
// it accepts is clean, relative and stays inside its area when joined to
// a directory.
func FuzzValidateFilePath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../a", "a/..", "/a", "a//b", "a/./b", "é/😀", "a\x00", "a\xff", ".", "..", "...", "a/", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := tools.ValidateFilePath(p)
		if got, want := err == nil, wantPath(p); got != want {
			t.Fatalf("ValidateFilePath(%q) = %v, want ok %v", p, err, want)
		}
		if err != nil {
			if !errors.Is(err, tools.ErrInvalidFile) {
				t.Fatalf("ValidateFilePath(%q) = %v, not ErrInvalidFile", p, err)
			}
			return
		}
		if j := path.Join("/area", p); !strings.HasPrefix(j, "/area/") || j != "/area/"+p {
			t.Fatalf("%q joins to %q, out of its area or changed", p, j)
		}
		if tools.ValidateFilePrefix(p) != nil {
			t.Fatalf("a valid path %q is no valid prefix", p)
		}
	})
}

// Only growth past a limit is refused, and the error names the limit.
func TestFileQuotaCheck(t *testing.T) {
	q := tools.FileQuota{Bytes: 100, Files: 2}
	for _, tc := range []struct {
		name          string
		before, after tools.FileUsage
		kind          string
	}{
		{"within", tools.FileUsage{Bytes: 10, Files: 1}, tools.FileUsage{Bytes: 100, Files: 2}, ""},
		{"bytes past", tools.FileUsage{Bytes: 90, Files: 1}, tools.FileUsage{Bytes: 101, Files: 1}, tools.QuotaBytes},
		{"files past", tools.FileUsage{Bytes: 10, Files: 2}, tools.FileUsage{Bytes: 10, Files: 3}, tools.QuotaFiles},
		{"over, shrinking", tools.FileUsage{Bytes: 200, Files: 5}, tools.FileUsage{Bytes: 150, Files: 5}, ""},
		{"over, level", tools.FileUsage{Bytes: 200, Files: 5}, tools.FileUsage{Bytes: 200, Files: 5}, ""},
		{"over, growing", tools.FileUsage{Bytes: 200, Files: 1}, tools.FileUsage{Bytes: 201, Files: 1}, tools.QuotaBytes},
	} {
		err := q.Check("acme", tc.before, tc.after)
		var qe *tools.QuotaError
		switch {
		case tc.kind == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.kind != "" && (!errors.As(err, &qe) || qe.Kind != tc.kind || !errors.Is(err, tools.ErrQuotaExceeded)):
			t.Errorf("%s: %v, want a %s *QuotaError", tc.name, err, tc.kind)
		}
	}
	if err := (tools.FileQuota{}).Check("acme", tools.FileUsage{}, tools.FileUsage{Bytes: 1 << 40, Files: 1 << 40}); err != nil {
		t.Errorf("a zero quota refused: %v", err)
	}
}
