package archtest

import (
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxSynopsisWords bounds a package doc's first sentence, "Package x" and
// all: long enough to say what the package provides, short enough to read
// in a package list (the Go SDKs we measure ourselves against average 11–12).
const maxSynopsisWords = 15

// provenance matches a comment that cites where the code came from instead
// of saying what it does: a numbered seed document ("seed 004", "seeds
// 000"), the seed documents in the plural, "the seed" or "a seed's", and
// issue numbers ("issue 9", "issue #9"). The bare word "seed" is not
// matched: Go code seeds random generators (math/rand's PCG, hnsw's level
// draws) and fuzz targets take a seed corpus, and those comments say "the
// random seed" or name the identifier. "issuer" and "issued" are other
// words and stay out through the word boundaries.
var provenance = regexp.MustCompile(`(?i)\bseeds?\s*#?\d+|\bseeds\b|\bseed(?:'s|’s)|\b(?:the|a|an|this|that|each|every)\s+seed\b|\bissues?\s*#?\d+\b`)

// TestGodoc holds every non-test Go file of the module to three rules: a
// package doc begins "Package name " (a command's is free), its first
// sentence has at most maxSynopsisWords words, and no comment (doc
// comments and the comments inside function bodies alike) cites a seed
// document or an issue number; comments say what the code does and cite
// standards by name (A2A, RFC 9457, RFC 8785, JSON-RPC 2.0).
func TestGodoc(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs := modulePackages(loadGraph(t))
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages in the module")
	}
	files := 0
	for _, p := range pkgs {
		if len(p.GoFiles) == 0 {
			continue // test-only directory
		}
		var paths []string
		for _, f := range p.GoFiles {
			paths = append(paths, filepath.Join(p.Dir, f))
		}
		files += len(paths)
		problems, err := godocProblems(root, paths)
		if err != nil {
			t.Fatalf("%s: %v", p.ImportPath, err)
		}
		for _, pr := range problems {
			t.Error(pr)
		}
	}
	if files < 100 {
		t.Fatalf("parsed %d Go files; the walk missed the module", files)
	}
}

// godocProblems parses the Go files at paths and returns one
// "file:line: problem" for each package doc that does not name its package
// or whose first sentence is too long, and for each comment line that cites
// a seed document or an issue (see citation). File names are relative to
// root.
func godocProblems(root string, paths []string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		if f.Doc != nil {
			if name := f.Name.Name; name != "main" && !strings.HasPrefix(f.Doc.Text(), "Package "+name+" ") {
				out = append(out, fmt.Sprintf("%s:%d: package doc does not begin \"Package %s \"", rel, fset.Position(f.Doc.Pos()).Line, name))
			}
			syn := new(doc.Package).Synopsis(f.Doc.Text())
			if n := len(strings.Fields(syn)); n > maxSynopsisWords {
				out = append(out, fmt.Sprintf("%s:%d: package doc's first sentence has %d words, want at most %d (say what the package provides): %q",
					rel, fset.Position(f.Doc.Pos()).Line, n, maxSynopsisWords, syn))
			}
		}
		for _, g := range f.Comments {
			for _, c := range g.List {
				line := fset.Position(c.Slash).Line
				for i, l := range strings.Split(c.Text, "\n") {
					if m := citation(l); m != "" {
						out = append(out, fmt.Sprintf("%s:%d: comment cites %q; say what the code does, citing standards by name: %s",
							rel, line+i, m, strings.TrimSpace(l)))
					}
				}
			}
		}
	}
	return out, nil
}

// citation returns the first match of provenance in line that is not a
// fuzz target's seed corpus ("the seed corpus", "a seed corpus entry"),
// or "" when there is none.
func citation(line string) string {
	for _, m := range provenance.FindAllStringIndex(line, -1) {
		if corpus.MatchString(line[m[1]:]) {
			continue
		}
		return line[m[0]:m[1]]
	}
	return ""
}

// corpus matches what follows "seed" when it means a fuzz seed corpus.
var corpus = regexp.MustCompile(`(?i)^[\s-]+corp(?:us|ora)\b`)

// The rules must be able to fail, and must not fail on words that only
// look like a citation.
func TestGodocRules(t *testing.T) {
	const long = "Package p does a great many things that nobody could list in one short sentence at all."
	tests := []struct {
		name, src string
		want      []string // substrings, one per problem, in order
	}{
		{"short package doc", "// Package p verifies tokens.\npackage p\n", nil},
		{"fifteen words", "// Package p has one two three four five six seven eight nine ten eleven twelve.\npackage p\n", nil},
		{"long package doc", "// " + long + " More.\npackage p\n", []string{"x.go:1: package doc's first sentence has 17 words"}},
		{"long doc after a blank line", "// Copyright.\n\n// " + long + "\npackage p\n", []string{"x.go:3: package doc's first sentence has 17 words"}},
		{"wrong package name", "// Package q verifies tokens.\npackage p\n", []string{`x.go:1: package doc does not begin "Package p "`}},
		{"command", "// Novaos serves agents.\npackage main\n", nil},
		{"second sentence may be long", "// Package p verifies tokens. " + long + "\npackage p\n", nil},
		{"numbered seed", "package p\n\n// F is seed 004's session.\nfunc F() {}\n", []string{`x.go:3: comment cites "seed 004"`}},
		{"seed with a hash", "package p\n\n// F, as Seed #2 says.\nfunc F() {}\n", []string{`"Seed #2"`}},
		{"the seeds", "package p\n\n// T prints as the seeds print.\ntype T int\n", []string{`"seeds"`}},
		{"the seed's", "package p\n\n// T keeps our seed's names.\ntype T int\n", []string{`"seed's"`}},
		{"a seed client", "package p\n\n// T serves a seed client.\ntype T int\n", []string{`"a seed"`}},
		{"issue number", "package p\n\n// F checks the faults\n// issue 9 lists.\nfunc F() {}\n", []string{`x.go:4: comment cites "issue 9"`}},
		{"issue with a hash", "package p\n\n// F fixes Issue #12.\nfunc F() {}\n", []string{`"Issue #12"`}},
		{"field comment", "package p\n\ntype T struct {\n\tA int // seed 002's limit\n}\n", []string{`x.go:4: comment cites "seed 002"`}},
		{"block comment", "package p\n\n/*\nT follows\nissue 7.\n*/\ntype T int\n", []string{`x.go:5: comment cites "issue 7"`}},
		{"comment in a body", "package p\n\nfunc F() {\n\t// as in seed 000\n}\n", []string{`x.go:4: comment cites "seed 000"`}},
		{"package doc citation", "// Package p is the gate (issue 9).\npackage p\n", []string{`x.go:1: comment cites "issue 9"`}},
		{"the issuer", "package p\n\n// T names the issuer and the issued-at time; it issues tokens.\ntype T int\n", nil},
		{"random seed", "package p\n\n// Seed fixes the random draws; log the random seed of a failed run.\nvar Seed uint64\n", nil},
		{"seed corpus", "package p\n\n// F adds a seed corpus entry to the seed corpora.\nfunc F() {}\n", nil},
		{"seed corpus, then a citation", "package p\n\n// F adds a seed corpus entry, as the seed's tests do.\nfunc F() {}\n", []string{`"the seed"`}},
		{"string literals are code", "package p\n\nconst s = \"seed 004\"\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "x.go")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := godocProblems(root, []string{path})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems %q, want %d matching %q", len(got), got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}
