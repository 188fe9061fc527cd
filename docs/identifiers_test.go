//go:build unix

package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docPackages maps the package names the pages write (memory.Retrieve) to
// their directories in the module.
var docPackages = map[string]string{
	"a2a":         "a2a",
	"a2aclient":   "a2a/a2aclient",
	"a2asrv":      "a2a/a2asrv",
	"agent":       "agent",
	"app":         "internal/app",
	"cardsig":     "a2a/cardsig",
	"confidence":  "ext/confidence",
	"conventions": "ext/conventions",
	"cost":        "ext/cost",
	"extmeta":     "ext/extmeta",
	"gate":        "gate",
	"grpcclient":  "a2a/a2agrpc/grpcclient",
	"hitl":        "a2a/hitl",
	"identity":    "identity",
	"jcs":         "jcs",
	"jwk":         "jwk",
	"memory":      "memory",
	"netguard":    "netguard",
	"pii":         "pii",
	"problem":     "problem",
	"postgres":    "store/postgres",
	"registry":    "registry",
	"resilience":  "resilience",
	"secret":      "secret",
	"sqlite":      "store/sqlite",
	"store":       "store",
	"storetest":   "store/storetest",
	"strictjson":  "strictjson",
	"usercontext": "ext/usercontext",
	"vecdot":      "vecdot",
}

var selectorRE = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)`)

// exported returns the exported top-level names of the package in dir
// (funcs, types, vars and consts of its non-test files).
func exported(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, id := range s.Names {
							names[id.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// TestGoIdentifiers fails when a page names pkg.Name, in prose or in a Go
// fragment, for one of the module's packages that has no such exported
// name: a renamed or removed API leaves no stale mention behind.
func TestGoIdentifiers(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]map[string]bool{}
	for _, page := range pages(t, root) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		missing := map[string]bool{}
		for _, m := range selectorRE.FindAllStringSubmatch(string(src), -1) {
			dir, ok := docPackages[m[1]]
			if !ok {
				continue
			}
			if known[dir] == nil {
				known[dir] = exported(t, filepath.Join(root, dir))
			}
			if !known[dir][m[2]] {
				missing[m[1]+"."+m[2]] = true
			}
		}
		var list []string
		for k := range missing {
			list = append(list, k)
		}
		sort.Strings(list)
		for _, k := range list {
			t.Errorf("%s names %s, which its package does not export", rel, k)
		}
	}
}
