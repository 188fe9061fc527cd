package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "novaos.dev/novaos"

// pkg is the part of `go list -json` output the rules need.
type pkg struct {
	ImportPath string
	Dir        string
	Name       string
	Doc        string
	Standard   bool
	DepOnly    bool
	GoFiles    []string
	Imports    []string
	Deps       []string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

var (
	graphOnce sync.Once
	graph     map[string]*pkg
	graphErr  error
)

// loadGraph lists every package of the module and everything they import.
func loadGraph(t *testing.T) map[string]*pkg {
	t.Helper()
	graphOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			graphErr = err
			return
		}
		cmd := exec.Command("go", "list", "-e", "-deps", "-json", "./...")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			graphErr = errors.New("go list: " + err.Error() + ": " + stderr.String())
			return
		}
		graph = map[string]*pkg{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p pkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				graphErr = err
				return
			}
			graph[p.ImportPath] = &p
		}
	})
	if graphErr != nil {
		t.Fatal(graphErr)
	}
	return graph
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// modulePackages are the packages of this module (not dependencies), sorted.
func modulePackages(g map[string]*pkg) []*pkg {
	var out []*pkg
	for _, p := range g {
		if !p.DepOnly && p.Module != nil && p.Module.Path == module {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return out
}

func TestEveryPackageHasADocComment(t *testing.T) {
	pkgs := modulePackages(loadGraph(t))
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages in the module")
	}
	for _, p := range pkgs {
		if len(p.GoFiles) == 0 {
			continue // test-only directory: nothing to document
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment (add a doc.go)", p.ImportPath)
		}
	}
}

// rule forbids some imports, direct or transitive, in one package's
// non-test build.
type rule struct {
	pkg    string
	why    string
	forbid func(dep *pkg) bool
}

var rules = []rule{
	{
		pkg: module + "/a2a",
		why: "the wire model is shared by clients, servers and agents and must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/agent",
		why: "the agent SDK must not drag database drivers or platform internals into users' binaries",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath)
		},
	},
	{
		pkg: module + "/netguard",
		why: "the SSRF guard sits on the first floor so every package that stores or dials a URL can import it; it must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/store/storetest",
		why: "a store written outside this module runs the contract suites, so they may use public contracts only",
		forbid: func(dep *pkg) bool {
			return platformInternal(dep.ImportPath)
		},
	},
	{
		pkg: module + "/a2a/a2asrv",
		why: "a protocol package sits below the stores and the platform: what it shares with stores lives at its floor (a2a/a2astore)",
		forbid: func(dep *pkg) bool {
			return underAny(dep.ImportPath, "store", "internal", "agent", "registry")
		},
	},
	{
		pkg: module + "/a2a/a2astore",
		why: "the records every A2A store shares are read by a2asrv and the stores alike, so they depend on the wire model and the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && dep.ImportPath != module+"/a2a"
		},
	},
	{
		pkg: module + "/store/sqlite",
		why: "a durable store implements public contracts and is usable outside the platform, so it imports no platform internals",
		forbid: func(dep *pkg) bool {
			return platformInternal(dep.ImportPath)
		},
	},
	{
		pkg: module + "/store/postgres",
		why: "a durable store implements public contracts and is usable outside the platform, so it imports no platform internals",
		forbid: func(dep *pkg) bool {
			return platformInternal(dep.ImportPath)
		},
	},
	{
		pkg: module + "/registry",
		why: "the registry SDK (types, client, store contract) sits below the stores and the service",
		forbid: func(dep *pkg) bool {
			return underAny(dep.ImportPath, "store", "internal")
		},
	},
	{
		pkg: module + "/resilience",
		why: "every service client (memory, gate, …) shares the retry rules, so they must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/identity",
		why: "the public token verifier is imported by agents written outside the platform; it must not drag stores, database drivers or platform internals in, and it takes its keys from jwk, not from the card signer",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath) || underAny(dep.ImportPath, "store") ||
				dep.ImportPath == module+"/a2a/cardsig"
		},
	},
	{
		pkg: module + "/store/internal/hnsw",
		why: "the vector index is a data structure under every store's search path; it must depend on the standard library and the shared dot product only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && dep.ImportPath != module+"/vecdot"
		},
	},
	{
		pkg: module + "/gate",
		why: "the governance SDK is imported by agents written outside the platform and its store contract by the stores; it must not drag stores, database drivers or platform internals in, nor the agent SDK (it takes a skill's execution through its own interfaces)",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath) || underAny(dep.ImportPath, "store", "agent")
		},
	},
	{
		pkg: module + "/vecdot",
		why: "the dot product sits under the public memory package and the vector index alike; it must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/jcs",
		why: "the RFC 8785 leaves sit under the public gate and a2a/cardsig packages; they must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/jwk",
		why: "JSON Web Keys sit under identity and a2a/cardsig alike, so they depend on the standard library and go-jose only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && !joseModule(dep.ImportPath)
		},
	},
	{
		pkg: module + "/memory",
		why: "the memory SDK is imported by agents written outside the platform and its store contract by the stores; it must not drag stores, database drivers or platform internals in, nor the agent SDK (it takes a skill's execution through its own interfaces)",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath) || underAny(dep.ImportPath, "store", "agent")
		},
	},
	{
		pkg: module + "/ext/usercontext",
		why: "an extension sits beside the A2A client, not on it: it says what a call must carry and the caller's client sends it",
		forbid: func(dep *pkg) bool {
			return dep.ImportPath == module+"/a2a/a2aclient" || underAny(dep.ImportPath, "agent", "store", "internal")
		},
	}, {
		pkg: module + "/gateway",
		why: "the gateway's client is imported by applications and its store contract by the stores; it must not drag stores, database drivers or platform internals in, nor the agent SDK",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath) || underAny(dep.ImportPath, "store", "agent")
		},
	},
	{
		pkg: module + "/heartbeat",
		why: "the heartbeat client is imported by applications and its store contract by the stores; it must not drag stores, database drivers or platform internals in, nor the agent SDK",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath) || underAny(dep.ImportPath, "store", "agent")
		},
	},
	{
		pkg: module + "/heartbeat/cron",
		why: "the cron parser sits under the heartbeat client and the stores alike; it must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},

	{
		pkg: module + "/rest",
		why: "the REST plumbing sits under the public SDK clients (gateway, heartbeat, llm, tools), so of this module it knows only the problem, retry and secret leaves, and no database driver",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || strings.HasPrefix(dep.ImportPath, module+"/") &&
				!underAny(dep.ImportPath, "problem", "resilience", "secret")
		},
	},
	{
		pkg: module + "/dpop",
		why: "DPoP proofs are made by the adapter SDK and checked by the platform, so the package knows only the standard library and the strict JSON check",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && dep.ImportPath != module+"/strictjson"
		},
	},
	{
		pkg: module + "/delivery",
		why: "the pull-delivery wire contract is shared by the adapter SDK, the platform and the stores; it must not drag stores, database drivers, platform internals or other SDKs in",
		forbid: func(dep *pkg) bool {
			return isDatabaseDriver(dep) || platformInternal(dep.ImportPath) || underAny(dep.ImportPath, "store", "agent", "gateway", "adapter")
		},
	},
	{
		pkg: module + "/strictjson",
		why: "the strict JSON check sits under the public gate SDK and every service's decoders; it must depend on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/problem",
		why: "the RFC 9457 problem is read and written by every SDK client and every service, so it depends on the standard library only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard
		},
	},
	{
		pkg: module + "/envconfig",
		why: "configuration from the environment is read by programs and handed down to every SDK, so it sits on the first floor: the standard library, the secret leaf and netguard's host matching only",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && dep.ImportPath != module+"/secret" && dep.ImportPath != module+"/netguard"
		},
	},
	{
		pkg: module + "/a2a/a2aotel",
		why: "A2A tracing and metrics hang off the public server's and client's interceptors and are usable outside the platform",
		forbid: func(dep *pkg) bool {
			return underAny(dep.ImportPath, "store", "internal", "agent", "registry")
		},
	},
	{
		pkg: module + "/a2a/a2apb",
		why: "the generated gRPC messages are the wire contract only: protobuf, gRPC and the standard library",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && !protoModule(dep.ImportPath)
		},
	},
	{
		pkg: module + "/a2a/a2agrpc",
		why: "the gRPC wire layer sits under both the server binding and the client transport, so it knows only the wire model, the generated messages, protobuf and gRPC",
		forbid: func(dep *pkg) bool {
			return !dep.Standard && !protoModule(dep.ImportPath) &&
				dep.ImportPath != module+"/a2a" && dep.ImportPath != module+"/a2a/a2apb"
		},
	},
	{
		pkg: module + "/a2a/a2apush",
		why: "push delivery runs over a store's outbox contract (a2asrv) and is usable outside the platform",
		forbid: func(dep *pkg) bool {
			return underAny(dep.ImportPath, "store", "internal", "agent", "registry")
		},
	},
	{
		pkg: module + "/a2a/a2agrpc/grpcclient",
		why: "the gRPC client transport plugs into the public client and is usable outside the platform",
		forbid: func(dep *pkg) bool {
			return underAny(dep.ImportPath, "store", "internal", "agent", "registry") || dep.ImportPath == module+"/a2a/a2asrv"
		},
	},
	{
		pkg: module + "/a2a/a2agrpc/grpcsrv",
		why: "the gRPC server binding is a protocol package like a2asrv, under the stores and the platform, usable outside NovaOS",
		forbid: func(dep *pkg) bool {
			return underAny(dep.ImportPath, "store", "internal", "agent", "registry")
		},
	},
}

// platformInternal reports whether path is one of the module's internal
// packages: they know the platform. The leaves the public packages share
// (vecdot, jcs, strictjson) are public themselves, on the ground floor.
func platformInternal(path string) bool {
	return underAny(path, "internal")
}

// joseModule reports whether path belongs to go-jose.
func joseModule(path string) bool {
	const m = "github.com/go-jose/go-jose/v4"
	return path == m || strings.HasPrefix(path, m+"/")
}

// protoModule reports whether path belongs to protobuf, gRPC or what gRPC
// itself imports (golang.org/x/net's HTTP/2, x/sys, x/text, the
// google.rpc messages).
func protoModule(path string) bool {
	for _, m := range []string{"google.golang.org/protobuf", "google.golang.org/grpc", "google.golang.org/genproto/googleapis/rpc", "golang.org/x/net", "golang.org/x/sys", "golang.org/x/text"} {
		if path == m || strings.HasPrefix(path, m+"/") {
			return true
		}
	}
	return false
}

// underAny reports whether path is a package of the module under one of
// the top-level directories dirs (module/internal/... for "internal"; not
// module/store/internal/...).
func underAny(path string, dirs ...string) bool {
	for _, d := range dirs {
		if p := module + "/" + d; path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// driverModules are SQL driver modules we know by name; any other package
// that implements database/sql/driver is caught by its imports.
var driverModules = []string{
	"modernc.org/sqlite",
	"github.com/jackc/pgx",
	"github.com/lib/pq",
	"github.com/mattn/go-sqlite3",
	"github.com/go-sql-driver/mysql",
	"github.com/ncruces/go-sqlite3",
	"zombiezen.com/go/sqlite",
	"crawshaw.io/sqlite",
	"github.com/microsoft/go-mssqldb",
	"github.com/denisenkom/go-mssqldb",
}

func isDatabaseDriver(p *pkg) bool {
	if p.Standard {
		return false
	}
	for _, m := range driverModules {
		if p.ImportPath == m || strings.HasPrefix(p.ImportPath, m+"/") {
			return true
		}
	}
	return slices.Contains(p.Imports, "database/sql/driver")
}

func TestImportRules(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		t.Run(strings.TrimPrefix(r.pkg, module+"/"), func(t *testing.T) {
			p, ok := g[r.pkg]
			if !ok || len(p.GoFiles) == 0 {
				// The rule is about a package a later change adds; there
				// is nothing to check until it exists.
				t.Skipf("%s does not exist in this tree", r.pkg)
			}
			if p.Error != nil {
				t.Fatalf("%s: %s", r.pkg, p.Error.Err)
			}
			for _, dep := range p.Deps {
				d, ok := g[dep]
				if !ok {
					t.Errorf("%s: dependency %s missing from go list output", r.pkg, dep)
					continue
				}
				if r.forbid(d) {
					t.Errorf("%s imports %s (via %s): %s", r.pkg, dep, importChain(g, r.pkg, dep), r.why)
				}
			}
		})
	}
}

// importChain returns one import path from 'from' to 'to', for the failure
// message.
func importChain(g map[string]*pkg, from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var chain []string
			for p := to; p != ""; p = prev[p] {
				chain = append(chain, p)
			}
			slices.Reverse(chain)
			return strings.Join(chain, " → ")
		}
		p, ok := g[cur]
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := prev[imp]; !seen {
				prev[imp] = cur
				queue = append(queue, imp)
			}
		}
	}
	return "?"
}

// The rules must be able to fail: check them against synthetic packages.
func TestRulesCatchViolations(t *testing.T) {
	tests := []struct {
		rule int
		dep  pkg
		want bool
	}{
		{0, pkg{ImportPath: "encoding/json", Standard: true}, false},
		{0, pkg{ImportPath: "github.com/google/uuid"}, true},
		{0, pkg{ImportPath: module + "/internal/x"}, true},
		{1, pkg{ImportPath: "net/http", Standard: true}, false},
		{1, pkg{ImportPath: "database/sql", Standard: true}, false},
		{1, pkg{ImportPath: "modernc.org/sqlite"}, true},
		{1, pkg{ImportPath: "modernc.org/sqlite/lib"}, true},
		{1, pkg{ImportPath: "github.com/jackc/pgx/v5/stdlib"}, true},
		{1, pkg{ImportPath: "example.com/somedriver", Imports: []string{"database/sql/driver"}}, true},
		{1, pkg{ImportPath: module + "/internal/app"}, true},
		{1, pkg{ImportPath: module + "/a2a"}, false},
		{1, pkg{ImportPath: "github.com/google/uuid"}, false},
		{2, pkg{ImportPath: "net/http", Standard: true}, false},
		{2, pkg{ImportPath: module + "/secret"}, true},
		{3, pkg{ImportPath: module + "/internal/registrysvc"}, true},
		{3, pkg{ImportPath: module + "/registry"}, false},
		{3, pkg{ImportPath: module + "/a2a/a2asrv"}, false},
		{4, pkg{ImportPath: module + "/store/keyset"}, true},
		{4, pkg{ImportPath: module + "/internal/httpapi"}, true},
		{4, pkg{ImportPath: module + "/registry"}, true},
		{4, pkg{ImportPath: module + "/a2a/a2astore"}, false},
		{4, pkg{ImportPath: module + "/netguard"}, false},
		{5, pkg{ImportPath: module + "/a2a"}, false},
		{5, pkg{ImportPath: "strings", Standard: true}, false},
		{5, pkg{ImportPath: module + "/netguard"}, true},
		{6, pkg{ImportPath: module + "/internal/sqlmigrate"}, true},
		{6, pkg{ImportPath: module + "/store/internal/sqlmigrate"}, false},
		{7, pkg{ImportPath: module + "/internal/registrysvc"}, true},
		{8, pkg{ImportPath: module + "/store/sqlite"}, true},
		{8, pkg{ImportPath: module + "/netguard"}, false},
		{9, pkg{ImportPath: "time", Standard: true}, false},
		{9, pkg{ImportPath: module + "/secret"}, true},
		{10, pkg{ImportPath: module + "/internal/auth"}, true},
		{10, pkg{ImportPath: "github.com/jackc/pgx/v5"}, true},
		{10, pkg{ImportPath: module + "/store/sqlite"}, true},
		{10, pkg{ImportPath: "github.com/go-jose/go-jose/v4"}, false},
		{11, pkg{ImportPath: "math/rand/v2", Standard: true}, false},
		{11, pkg{ImportPath: module + "/memory"}, true},
		{11, pkg{ImportPath: module + "/vecdot"}, false},
		{13, pkg{ImportPath: "math", Standard: true}, false},
		{12, pkg{ImportPath: module + "/internal/auth"}, true},
		{12, pkg{ImportPath: module + "/secret"}, false},
		{6, pkg{ImportPath: module + "/vecdot"}, false},
		{6, pkg{ImportPath: module + "/internal/auth"}, true},
		{3, pkg{ImportPath: module + "/vecdot"}, false},
		{13, pkg{ImportPath: "golang.org/x/sys/cpu"}, true},
		{12, pkg{ImportPath: module + "/jcs"}, false},
		{1, pkg{ImportPath: module + "/jcs"}, false},
		{12, pkg{ImportPath: module + "/strictjson"}, false},
		{15, pkg{ImportPath: "bytes", Standard: true}, false},
		{15, pkg{ImportPath: module + "/a2a"}, true},
		{16, pkg{ImportPath: "net/http", Standard: true}, false},
		{16, pkg{ImportPath: module + "/internal/httpapi"}, true},
		{14, pkg{ImportPath: "strconv", Standard: true}, false},
		{14, pkg{ImportPath: module + "/a2a"}, true},
		{10, pkg{ImportPath: module + "/a2a/cardsig"}, true},
		{10, pkg{ImportPath: module + "/jwk"}, false},
		{12, pkg{ImportPath: module + "/agent"}, true},
		{12, pkg{ImportPath: module + "/secret"}, false},
		{15, pkg{ImportPath: "crypto/ed25519", Standard: true}, false},
		{15, pkg{ImportPath: "github.com/go-jose/go-jose/v4/json"}, false},
		{15, pkg{ImportPath: "github.com/go-jose/go-jose/v5"}, true},
		{15, pkg{ImportPath: module + "/a2a"}, true},
		{16, pkg{ImportPath: module + "/agent"}, true},
		{16, pkg{ImportPath: module + "/vecdot"}, false},
		{16, pkg{ImportPath: module + "/internal/memorysvc"}, true},
		{16, pkg{ImportPath: module + "/store/sqlite"}, true},
		{16, pkg{ImportPath: module + "/secret"}, false},
		{17, pkg{ImportPath: module + "/a2a/a2aclient"}, true},
		{17, pkg{ImportPath: module + "/agent"}, true},
		{17, pkg{ImportPath: module + "/a2a"}, false},
		{17, pkg{ImportPath: module + "/secret"}, false},
		{18, pkg{ImportPath: module + "/internal/execgw"}, true},
		{18, pkg{ImportPath: module + "/store/postgres"}, true},
		{18, pkg{ImportPath: module + "/agent"}, true},
		{18, pkg{ImportPath: module + "/a2a"}, false},
		{18, pkg{ImportPath: module + "/resilience"}, false},
		{21, pkg{ImportPath: module + "/secret"}, false},
		{21, pkg{ImportPath: "go.opentelemetry.io/otel/propagation"}, false},
		{21, pkg{ImportPath: module + "/gateway"}, true},
		{21, pkg{ImportPath: module + "/internal/httpapi"}, true},
		{ruleIndex(t, "envconfig"), pkg{ImportPath: "net/url", Standard: true}, false},
		{ruleIndex(t, "envconfig"), pkg{ImportPath: module + "/secret"}, false},
		{ruleIndex(t, "envconfig"), pkg{ImportPath: module + "/netguard"}, false},
		{ruleIndex(t, "envconfig"), pkg{ImportPath: module + "/tools"}, true},
		{ruleIndex(t, "envconfig"), pkg{ImportPath: module + "/internal/cli"}, true},
		{ruleIndex(t, "envconfig"), pkg{ImportPath: "github.com/google/uuid"}, true},
		{len(rules) - 6, pkg{ImportPath: module + "/a2a/a2asrv"}, false},
		{len(rules) - 6, pkg{ImportPath: module + "/internal/instrument"}, true},
		{len(rules) - 5, pkg{ImportPath: "google.golang.org/protobuf/proto"}, false},
		{len(rules) - 5, pkg{ImportPath: module + "/a2a"}, true},
		{len(rules) - 4, pkg{ImportPath: module + "/a2a/a2apb"}, false},
		{len(rules) - 4, pkg{ImportPath: module + "/a2a/a2asrv"}, true},
		{len(rules) - 3, pkg{ImportPath: module + "/netguard"}, false},
		{len(rules) - 3, pkg{ImportPath: module + "/internal/auth"}, true},
		{len(rules) - 2, pkg{ImportPath: module + "/a2a/a2aclient"}, false},
		{len(rules) - 2, pkg{ImportPath: module + "/a2a/a2asrv"}, true},
		{len(rules) - 1, pkg{ImportPath: module + "/a2a/a2asrv"}, false},
		{len(rules) - 1, pkg{ImportPath: module + "/internal/auth"}, true},
	}
	for _, tc := range tests {
		if got := rules[tc.rule].forbid(&tc.dep); got != tc.want {
			t.Errorf("rule %s forbids %s = %v, want %v", rules[tc.rule].pkg, tc.dep.ImportPath, got, tc.want)
		}
	}
}

// ruleIndex returns the index of the rule for the package under module.
func ruleIndex(t *testing.T, path string) int {
	t.Helper()
	for i, r := range rules {
		if r.pkg == module+"/"+path {
			return i
		}
	}
	t.Fatalf("no rule for %s", path)
	return -1
}
