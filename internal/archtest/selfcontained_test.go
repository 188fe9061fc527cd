package archtest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// outside matches a reference to the documents kept beside the repository
// (the sibling directory "shared", by relative or absolute path). A fresh
// clone has no such directory, so nothing in the repository may point there:
// what the tests need lives inside the repository.
//
// The directory's name is put together at run time, so this file never
// spells a reference itself and needs no exemption from its own check.
var outside = regexp.MustCompile(`\.\./` + sibling + `\b|/work/` + sibling + `\b`)

// sibling is the name of the directory beside the repository.
const sibling = "sha" + "red"

// TestSelfContained fails when any text file of the module, Go or not
// (scripts, CI, READMEs, testdata, the interop module), refers to the
// directory beside the repository.
func TestSelfContained(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	hits, scanned, err := scanOutsideRefs(root)
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("scanned %d text files under %s; the walk missed the module", scanned, root)
	}
	for _, h := range hits {
		t.Errorf("%s refers outside the repository; keep what it needs inside it (see internal/schematest/testdata)", h)
	}
}

// scanOutsideRefs walks root and returns "path:line: text" for every line of
// a text file that matches outside, and how many text files it read. It
// skips version-control metadata, installed npm packages (not part of the
// module, and free to name their own directories so) and binary files.
func scanOutsideRefs(root string) (hits []string, scanned int, err error) {
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" || (d.IsDir() && d.Name() == "node_modules") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a worktree's .git is a file
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return nil // binary
		}
		scanned++
		for i, line := range bytes.Split(b, []byte("\n")) {
			if outside.Match(line) {
				hits = append(hits, fmt.Sprintf("%s:%d: %s", rel, i+1, bytes.TrimSpace(line)))
			}
		}
		return nil
	})
	return hits, scanned, err
}

// The guard itself: it finds references in any kind of text file and
// skips only what it says it skips.
func TestScanOutsideRefs(t *testing.T) {
	const ref = "../" + sibling
	tests := []struct {
		name, path, content string
		wantHit             bool
	}{
		{"go source", "pkg/x.go", "const p = \"" + ref + "/a2a/schema.json\"\n", true},
		{"shell script", "scripts/run", "#!/bin/sh\ncat " + ref + "/seeds/INDEX.md\n", true},
		{"markdown", "README.md", "See `" + ref + "/DESIGN.md`.\n", true},
		{"deeper relative path", "interop/js/x.mjs", "import '../" + ref + "/x.js'\n", true},
		{"absolute path", ".ci/run", "ls /work/" + sibling + "\n", true},
		{"testdata", "a/testdata/golden.txtar", "-- f --\n" + ref + "\n", true},
		{"a word, not the directory", "doc.go", "// the shared machinery of " + ref + "x\n", false},
		{"binary file", "bin/blob", "\x00\x01" + ref, false},
		{"installed npm package", "interop/js/node_modules/p/index.js", "require('" + ref + "')\n", false},
		{"git metadata", ".git/config", ref + "\n", false},
		{"the guard's own path", "internal/archtest/selfcontained_test.go", ref + "\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			file := filepath.Join(root, filepath.FromSlash(tc.path))
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			hits, _, err := scanOutsideRefs(root)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(hits) > 0; got != tc.wantHit {
				t.Fatalf("hits %q, want a hit: %v", hits, tc.wantHit)
			}
			if tc.wantHit && !slices.ContainsFunc(hits, func(h string) bool { return strings.HasPrefix(h, tc.path+":") }) {
				t.Errorf("hits %q do not name %s", hits, tc.path)
			}
		})
	}
}
