//go:build unix

// Package docs holds the user documentation and the test that runs it.
//
// TestDocs runs every sh block of README.md and of each docs/*.md page
// against a live novaos server, so a documented command that stops working
// fails CI. docs/README.md states the conventions the pages follow.
package docs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"novaos.dev/novaos/internal/pgtest"
)

// pageTimeout bounds one page's script. It is a failure bound, not a
// measure: a page takes seconds.
const pageTimeout = 5 * time.Minute

// The documented addresses. The test server and the extra servers a page
// starts listen on free ports; these are rewritten to them.
const (
	documentedServer = "127.0.0.1:8080"
	// documentedPostgres is the URL a postgres block uses; it is rewritten
	// to a fresh database of NOVAOS_TEST_POSTGRES_URL's server.
	documentedPostgres = "postgres://novaos@db.example.com/novaos"
)

// block is one fenced code block of a page.
type block struct {
	line   int    // line of the opening fence, 1-based
	info   string // the fence's info string: sh, output, go, text, …
	marker string // the doc-test marker just above the block, if any
	text   string
	output *block // the output block that follows an sh block
}

var (
	markerRE = regexp.MustCompile(`^<!-- doc-test: (.*?) -->$`)
	skipRE   = regexp.MustCompile(`^skip \((.+)\)$`)
	fileRE   = regexp.MustCompile(`^file (\S+)$`)
	// shellInfo are info strings that mean a shell: only sh runs, so a
	// block written as bash or console would escape the test.
	shellInfo = []string{"bash", "shell", "zsh", "console", "shell-session", "sh-session"}
)

// parsePage returns the fenced blocks of a Markdown page, each with the
// marker comment on the last non-blank line above it.
func parsePage(src string) ([]*block, error) {
	var (
		blocks  []*block
		cur     *block
		fence   string
		lastTxt string
		body    strings.Builder
	)
	lines := strings.Split(src, "\n")
	for i, line := range lines {
		if cur != nil {
			if strings.TrimSpace(line) == fence {
				cur.text = body.String()
				blocks = append(blocks, cur)
				cur, lastTxt = nil, line
				continue
			}
			body.WriteString(line)
			body.WriteByte('\n')
			continue
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			n := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
			fence = strings.Repeat("`", n)
			cur = &block{line: i + 1, info: strings.TrimSpace(trimmed[n:])}
			if m := markerRE.FindStringSubmatch(strings.TrimSpace(lastTxt)); m != nil {
				cur.marker = m[1]
			}
			body.Reset()
			continue
		}
		if trimmed != "" {
			lastTxt = line
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: code block not closed", cur.line)
	}
	// An output block belongs to the sh block just before it.
	var out []*block
	for _, b := range blocks {
		if b.info == "output" {
			if len(out) == 0 || out[len(out)-1].info != "sh" || out[len(out)-1].output != nil {
				return nil, fmt.Errorf("line %d: an output block must follow an sh block", b.line)
			}
			out[len(out)-1].output = b
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// checkMarker reports a marker the test does not know, or one on a block
// it does not apply to.
func checkMarker(b *block) error {
	if strings.HasPrefix(b.info, "sh") && b.info != "sh" || slices.Contains(shellInfo, b.info) {
		return fmt.Errorf("line %d: a %q block: write shell commands as sh blocks, which the test runs (or text, which it does not)", b.line, b.info)
	}
	switch {
	case b.marker == "":
		return nil
	case skipRE.MatchString(b.marker), b.marker == "postgres", b.marker == "go-test":
		if b.info != "sh" {
			return fmt.Errorf("line %d: marker %q on a %s block: it applies to sh blocks", b.line, b.marker, b.info)
		}
		return nil
	case fileRE.MatchString(b.marker):
		return nil
	}
	return fmt.Errorf("line %d: unknown doc-test marker %q (skip (reason), postgres, go-test or file PATH)", b.line, b.marker)
}

// tools is what the test builds once for every page.
type tools struct {
	gopath   string // GOPATH of the scripts: novaos is in its bin
	examples string // a binary per examples/<name>
	root     string // the module root
	env      []string
}

var (
	toolsOnce sync.Once
	toolsVal  *tools
	toolsErr  error
)

// buildTools builds novaos and the examples into a directory that outlives
// the test's temporary directories; it is removed by TestMain.
func buildTools() (*tools, error) {
	toolsOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			toolsErr = err
			return
		}
		dir, err := os.MkdirTemp("", "novaos-doctest-")
		if err != nil {
			toolsErr = err
			return
		}
		buildDir = dir
		tl := &tools{gopath: filepath.Join(dir, "gopath"), examples: filepath.Join(dir, "examples"), root: root}
		// Without -race even when the test has it: the race detector
		// slows the server and the benchmarks the pages run about
		// fourfold, and the server's own tests run under it.
		args := []string{"build"}
		targets := map[string]string{filepath.Join(tl.gopath, "bin", "novaos"): "./cmd/novaos"}
		ex, err := os.ReadDir(filepath.Join(root, "examples"))
		if err != nil {
			toolsErr = err
			return
		}
		for _, e := range ex {
			if e.IsDir() {
				targets[filepath.Join(tl.examples, e.Name())] = "./examples/" + e.Name()
			}
		}
		for out, pkg := range targets {
			cmd := exec.Command("go", append(args, "-o", out, pkg)...)
			cmd.Dir = root
			if b, err := cmd.CombinedOutput(); err != nil {
				toolsErr = fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
				return
			}
		}
		toolsVal = tl
	})
	return toolsVal, toolsErr
}

var buildDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// goEnv reads one go env value.
func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// pages are README.md and every docs/*.md page, in that order.
func pages(t *testing.T, root string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 10 {
		t.Fatalf("found %d pages under docs/; the glob missed them", len(docs))
	}
	slices.Sort(docs)
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// commandsNeeded are what the pages' commands run besides novaos.
var commandsNeeded = []string{"bash", "curl", "openssl", "grep", "cut", "awk"}

func TestDocs(t *testing.T) {
	for _, c := range commandsNeeded {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("the pages' commands need %s on PATH (Debian: apt-get install bash curl openssl gawk): %v", c, err)
		}
	}
	tl, err := buildTools()
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages(t, tl.root) {
		rel, _ := filepath.Rel(tl.root, page)
		t.Run(rel, func(t *testing.T) { runPage(t, tl, page, rel) })
	}
}

// TestPagesParse checks every page's blocks and markers without running
// anything, so a malformed page is named even where TestDocs cannot run.
func TestPagesParse(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages(t, root) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parsePage(string(src))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		for _, b := range blocks {
			if err := checkMarker(b); err != nil {
				t.Errorf("%s: %v", page, err)
			}
		}
	}
}

func runPage(t *testing.T, tl *tools, page, rel string) {
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parsePage(string(src))
	if err != nil {
		t.Fatal(err)
	}
	var run []*block
	needPostgres := false
	for _, b := range blocks {
		if err := checkMarker(b); err != nil {
			t.Fatal(err)
		}
		switch m := b.marker; {
		case fileRE.MatchString(m):
			checkFileBlock(t, tl.root, b, fileRE.FindStringSubmatch(m)[1])
		case b.info != "sh", skipRE.MatchString(m):
		case m == "go-test":
			checkGoTest(t, tl.root, b)
		case m == "postgres":
			needPostgres = true
			run = append(run, b)
		default:
			run = append(run, b)
		}
	}
	if len(run) == 0 {
		return
	}
	pgURL := ""
	if needPostgres {
		if os.Getenv(pgtest.EnvURL) == "" && os.Getenv(pgtest.EnvRequire) != "1" {
			t.Logf("%s is not set: the postgres blocks of %s are left out", pgtest.EnvURL, rel)
			run = slices.DeleteFunc(run, func(b *block) bool { return b.marker == "postgres" })
		} else {
			pgURL = pgtest.URL(t)
		}
	}

	dir := t.TempDir()
	// The files a page names by relative path, as in a clone.
	for _, name := range []string{"examples"} {
		if err := os.Symlink(filepath.Join(tl.root, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServer(t, tl, dir)

	ports := map[string]string{"8080": srv.port}
	rewrite := func(s string) string {
		s = strings.ReplaceAll(s, "go run ./cmd/novaos", "novaos")
		s = strings.ReplaceAll(s, "go install ./cmd/novaos", "true")
		s = regexp.MustCompile(`go run \./examples/([a-z0-9]+)`).ReplaceAllString(s, filepath.Join(tl.examples, "$1"))
		s = regexp.MustCompile(`(127\.0\.0\.1|localhost):(\d{4,5})\b`).ReplaceAllStringFunc(s, func(hp string) string {
			host, port, _ := strings.Cut(hp, ":")
			if _, ok := ports[port]; !ok {
				ports[port] = freePort(t)
			}
			return host + ":" + ports[port]
		})
		if pgURL != "" {
			s = strings.ReplaceAll(s, documentedPostgres, pgURL)
		}
		return s
	}

	var script strings.Builder
	script.WriteString(preamble)
	for i, b := range run {
		fmt.Fprintf(&script, "printf '\\n%s %d\\n'\n", blockMark, i)
		script.WriteString(rewrite(b.text))
	}
	fmt.Fprintf(&script, "printf '\\n%s\\n'\n", endMark)

	path := os.Getenv("PATH")
	if rel != "README.md" {
		// The README puts $(go env GOPATH)/bin on PATH itself; the pages
		// take that as done.
		path = filepath.Join(tl.gopath, "bin") + string(os.PathListSeparator) + path
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + path,
		"HOME=" + os.Getenv("HOME"),
		"GOPATH=" + tl.gopath,
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOFLAGS=",
		"TMPDIR=" + tmp,
		"LC_ALL=C",
		"NOVAOS_SERVER=http://" + srv.addr,
	}
	stdout, stderr, err := runScript(t, dir, env, script.String())
	if pgURL != "" {
		stdout = strings.ReplaceAll(stdout, pgURL, documentedPostgres)
		stderr = strings.ReplaceAll(stderr, pgURL, documentedPostgres)
	}
	outs, done := splitOutput(stdout)
	if err != nil || !done {
		b := run[max(len(outs)-1, 0)]
		t.Fatalf("%s:%d: the block failed (%v):\n%s\n--- its stdout (tail):\n%s\n--- stderr (tail):\n%s\n--- server log (tail):\n%s",
			rel, b.line, err, b.text, tail(outs[len(outs)-1], 30), tail(stderr, 30), tail(srv.log(), 20))
	}
	for i, b := range run {
		if b.output == nil {
			continue
		}
		if msg := matchOutput(rewrite(b.output.text), outs[i]); msg != "" {
			t.Errorf("%s:%d: output of the block above differs: %s\n--- got:\n%s", rel, b.output.line, msg, tail(outs[i], 40))
		}
	}
}

// preamble opens every page's script: errors stop it, and novaos bench
// runs briefly (a later flag wins, so these win over the page's).
const preamble = `set -euo pipefail
novaos() {
	if [[ ${1-} == bench ]]; then
		local extra=(--d 200ms --warmup 0s --c 4)
		if [[ ${2-} == memory ]]; then extra+=(--sizes 300); fi
		command novaos "$@" "${extra[@]}"
	else
		command novaos "$@"
	fi
}
`

const (
	blockMark = "@@doc-test-block"
	endMark   = "@@doc-test-end@@"
)

// splitOutput cuts a script's stdout at the block marks; done says the
// script reached its end.
func splitOutput(stdout string) (outs []string, done bool) {
	outs = []string{""}
	started := false
	for _, line := range strings.SplitAfter(stdout, "\n") {
		l := strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(l, blockMark+" "):
			if started {
				outs = append(outs, "")
			} else {
				outs[0] = "" // what the preamble printed
			}
			started = true
			continue
		case l == endMark:
			done = true
			continue
		}
		outs[len(outs)-1] += line
	}
	return outs, done
}

// spacesRE is a run of spaces in an expected line: tables pad their
// columns to what they hold.
var spacesRE = regexp.MustCompile(`[ \t]+`)

// matchOutput checks that every non-blank line of want matches a line of
// got, in order; … in want matches any text, and a run of spaces any run
// of spaces. It returns what is missing.
func matchOutput(want, got string) string {
	lines := strings.Split(got, "\n")
	at := 0
	for _, w := range strings.Split(want, "\n") {
		if strings.TrimSpace(w) == "" {
			continue
		}
		parts := strings.Split(strings.TrimSpace(w), "…")
		for i, p := range parts {
			parts[i] = spacesRE.ReplaceAllString(regexp.QuoteMeta(p), `\s+`)
		}
		re := regexp.MustCompile(`^\s*` + strings.Join(parts, ".*") + `\s*$`)
		found := false
		for at < len(lines) {
			at++
			if re.MatchString(lines[at-1]) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Sprintf("no line matching %q (in order)", strings.TrimSpace(w))
		}
	}
	return ""
}

// runScript runs a page's script with bash in dir. Its own process group
// holds the servers a page starts in the background; they are stopped
// when the script ends.
func runScript(t *testing.T, dir string, env []string, script string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pageTimeout)
	defer cancel()
	outF, err := os.Create(filepath.Join(dir, ".doc-test.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	errF, err := os.Create(filepath.Join(dir, ".doc-test.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	// Files, not pipes: a background server keeps its copy of the
	// descriptors open, and Wait must not wait for it.
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, outF, errF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	runErr := cmd.Run()
	if cmd.Process != nil {
		stopGroup(t, cmd.Process.Pid)
	}
	outF.Close()
	errF.Close()
	o, _ := os.ReadFile(outF.Name())
	e, _ := os.ReadFile(errF.Name())
	if ctx.Err() != nil {
		runErr = fmt.Errorf("the page ran past %v: %w", pageTimeout, runErr)
	}
	return string(o), string(e), runErr
}

// stopGroup ends what is left of a script's process group: SIGTERM, which
// a novaos server answers with a graceful shutdown, then SIGKILL should the
// group outlive a generous bound.
func stopGroup(t *testing.T, pgid int) {
	t.Helper()
	if err := syscall.Kill(-pgid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("process group %d outlived SIGTERM; killing it", pgid)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// server is the novaos serve a page runs against.
type server struct {
	addr, port string
	logPath    string
}

func (s *server) log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

var servingRE = regexp.MustCompile(`^NovaOS is serving on https?://(127\.0\.0\.1:(\d+))`)

// startServer starts novaos serve with ./novaos-data in dir, the documented
// defaults but for a free port, and stops it when the test ends.
func startServer(t *testing.T, tl *tools, dir string) *server {
	t.Helper()
	s := &server{logPath: filepath.Join(dir, ".doc-test.server.log")}
	logF, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(tl.gopath, "bin", "novaos"), "serve", "--addr", "127.0.0.1:0", "--data", "./novaos-data")
	cmd.Dir, cmd.Stderr = dir, logF
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + dir}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("novaos serve did not stop within a minute of SIGTERM; killing it")
			_ = cmd.Process.Kill()
			<-exited
		}
		logF.Close()
	})
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := servingRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
		}
		exited <- cmd.Wait()
		close(found)
	}()
	select {
	case m, ok := <-found:
		if !ok {
			t.Fatalf("novaos serve exited before serving:\n%s", tail(s.log(), 30))
		}
		s.addr, s.port = m[1], m[2]
	case <-time.After(2 * time.Minute):
		t.Fatalf("novaos serve did not say it was serving within two minutes:\n%s", tail(s.log(), 30))
	}
	return s
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// checkFileBlock checks that a block shows a file of the repository as it
// is, so a snippet the README shows is the one that compiles.
func checkFileBlock(t *testing.T, root string, b *block, rel string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Errorf("line %d: %v", b.line, err)
		return
	}
	if b.text != string(want) {
		t.Errorf("line %d: the block differs from %s; copy the file into it", b.line, rel)
	}
}

var (
	goTestRE  = regexp.MustCompile(`^go test (.*)$`)
	funcRE    = regexp.MustCompile(`(?m)^func ((?:Benchmark|Test|Fuzz)\w*)\(`)
	benchArgs = regexp.MustCompile(`-(?:bench|run)[= ]'?([^' ]+)'?`)
)

// checkGoTest checks, without running them, that the go test commands of a
// block name packages that exist and benchmarks or tests they hold. They
// are not run: each would compile a package's tests.
func checkGoTest(t *testing.T, root string, b *block) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(b.text), "\n") {
		line, _, _ = strings.Cut(line, " #")
		m := goTestRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			t.Errorf("line %d: %q in a go-test block is not a go test command", b.line, line)
			continue
		}
		var pkgs []string
		for _, f := range strings.Fields(m[1]) {
			if strings.HasPrefix(f, "./") {
				pkgs = append(pkgs, f)
			}
		}
		if len(pkgs) == 0 {
			t.Errorf("line %d: %q names no package", b.line, line)
			continue
		}
		var funcs []string
		for _, p := range pkgs {
			files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(p), "*_test.go"))
			if len(files) == 0 {
				t.Errorf("line %d: %s has no tests", b.line, p)
			}
			for _, f := range files {
				src, _ := os.ReadFile(f)
				for _, fm := range funcRE.FindAllSubmatch(src, -1) {
					funcs = append(funcs, string(fm[1]))
				}
			}
		}
		for _, a := range benchArgs.FindAllStringSubmatch(m[1], -1) {
			if a[1] == "^$" {
				continue
			}
			re, err := regexp.Compile(a[1])
			if err != nil {
				t.Errorf("line %d: %q: %v", b.line, a[1], err)
				continue
			}
			if !slices.ContainsFunc(funcs, re.MatchString) {
				t.Errorf("line %d: %q matches no test or benchmark of %s", b.line, a[1], strings.Join(pkgs, " "))
			}
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
