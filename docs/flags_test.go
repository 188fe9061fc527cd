//go:build unix

package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	// helpFlagRE matches a flag line of novaos serve -h: "  -addr address".
	helpFlagRE = regexp.MustCompile(`^\s+--?([a-z0-9][a-z0-9-]*)(?:\s|$)`)
	// helpDefaultRE is the default flag.PrintDefaults appends to the usage.
	helpDefaultRE = regexp.MustCompile(`\(default "?([^"()]*?)"?\)$`)
	rowFlagRE     = regexp.MustCompile("`--([a-z0-9][a-z0-9-]*)")
	codeSpanRE    = regexp.MustCompile("`([^`]+)`")
)

// helpFlags runs novaos args -h and returns each flag with the default
// it prints ("" when it prints none); fewer than min flags fails the
// test, as a parser that missed them.
func helpFlags(t *testing.T, min int, args ...string) map[string]string {
	t.Helper()
	tl, err := buildTools()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(tl.gopath, "bin", "novaos"), append(args, "-h")...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("novaos %s -h: %v\n%s", strings.Join(args, " "), err, out)
	}
	flags := map[string]string{}
	var last string
	for _, line := range strings.Split(string(out), "\n") {
		if m := helpFlagRE.FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last] = ""
			continue
		}
		if m := helpDefaultRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil && last != "" {
			flags[last] = m[1]
		}
	}
	if len(flags) < min {
		t.Fatalf("found %d flags in novaos %s -h; the parser missed them:\n%s", len(flags), strings.Join(args, " "), out)
	}
	return flags
}

// flagRows returns, for each flag that leads a table row of page's
// section whose heading names command (such as "`novaos serve`"), the
// text of that row.
func flagRows(t *testing.T, page, command string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.Contains(line, command)
			continue
		}
		if !in || !strings.HasPrefix(line, "| `--") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range rowFlagRE.FindAllStringSubmatch(first, -1) {
			if _, dup := rows[m[1]]; dup {
				t.Errorf("%s: --%s has two rows", page, m[1])
			}
			rows[m[1]] = line
		}
	}
	return rows
}

// checkFlagsDocumented keeps a page's section of a command in step with
// its -h: every flag has a row, every row a flag, and each row shows the
// default -h prints.
func checkFlagsDocumented(t *testing.T, flags, rows map[string]string, page, command string) {
	t.Helper()
	for name, def := range flags {
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s has no row for --%s (%s -h lists it)", page, name, command)
			continue
		}
		if def == "" || strings.Contains(def, " ") {
			continue // no default, or one the usage explains in words
		}
		// A default named as $VARIABLE is the row's Environment column.
		if !rowShowsDefault(row, strings.TrimPrefix(def, "$")) {
			t.Errorf("%s: the row of --%s does not show its default %q", page, name, def)
		}
	}
	for name := range rows {
		if _, ok := flags[name]; !ok {
			t.Errorf("%s documents --%s, which %s -h does not list", page, name, command)
		}
	}
}

// TestServeFlagsDocumented keeps flags.md and novaos serve -h in step.
func TestServeFlagsDocumented(t *testing.T) {
	checkFlagsDocumented(t, helpFlags(t, 50, "serve"), flagRows(t, "flags.md", "`novaos serve`"), "flags.md", "novaos serve")
}

// TestAdapterFlagsDocumented keeps the adapter commands' sections of
// flags.md, and adapter.md's table of adapter run, in step with their -h.
func TestAdapterFlagsDocumented(t *testing.T) {
	for _, c := range []struct {
		page string
		args []string
	}{
		{"flags.md", []string{"adapter", "run"}},
		{"adapter.md", []string{"adapter", "run"}},
		{"flags.md", []string{"adapter", "token"}},
		{"flags.md", []string{"adapter", "key"}},
	} {
		command := "novaos " + strings.Join(c.args, " ")
		rows := flagRows(t, c.page, "`"+command+"`")
		if len(rows) == 0 {
			t.Errorf("%s has no section of flags of `%s`", c.page, command)
			continue
		}
		checkFlagsDocumented(t, helpFlags(t, 1, c.args...), rows, c.page, command)
	}
}

// rowShowsDefault reports whether a row names def in a code span, as
// written or as the same duration (5m0s is shown as 5m).
func rowShowsDefault(row, def string) bool {
	want, wantErr := time.ParseDuration(def)
	for _, m := range codeSpanRE.FindAllStringSubmatch(row, -1) {
		if m[1] == def {
			return true
		}
		if wantErr == nil {
			if got, err := time.ParseDuration(m[1]); err == nil && got == want {
				return true
			}
		}
	}
	return false
}

// commands are the novaos commands whose -h the pages' flags are checked
// against. A page that documents a new command's flags adds it here.
var commands = [][]string{
	{"serve"}, {"send"},
	{"bench", "a2a"}, {"bench", "memory"}, {"bench", "gate"}, {"bench", "runs"}, {"bench", "tools"}, {"bench", "ops"}, {"bench", "llm"}, {"bench", "delivery"},
	{"agents", "list"}, {"agents", "search"}, {"agents", "find"}, {"agents", "register"}, {"agents", "update"},
	{"keys", "generate"}, {"keys", "public"},
	{"memory", "write"}, {"memory", "query"}, {"memory", "update"}, {"memory", "forget"}, {"memory", "hint"},
	{"memory", "assemble"}, {"memory", "hint-status"}, {"memory", "proposal-status"},
	{"gate", "list"}, {"gate", "show"}, {"gate", "approve"}, {"gate", "deny"}, {"gate", "confirm"},
	{"gate", "rules", "put"}, {"gate", "rules", "get"}, {"gate", "audit", "verify"},
	{"token", "mint"}, {"token", "verify"}, {"token", "rotate"},
	{"card", "get"}, {"card", "verify"}, {"card", "sign"}, {"card", "keygen"},
	{"proxy"}, {"run"},
	{"instances", "install"}, {"instances", "list"}, {"instances", "show"}, {"instances", "update"}, {"instances", "remove"},
	{"runs", "list"}, {"runs", "show"}, {"runs", "cancel"}, {"runs", "reply"}, {"runs", "events"}, {"runs", "debug"},
	{"tools", "list"}, {"tools", "call"},
	{"llm", "providers", "list"}, {"llm", "providers", "show"}, {"llm", "providers", "set"}, {"llm", "providers", "remove"},
	{"llm", "models", "list"}, {"llm", "models", "show"}, {"llm", "models", "set"}, {"llm", "models", "remove"},
	{"llm", "budgets", "list"}, {"llm", "budgets", "show"}, {"llm", "budgets", "set"}, {"llm", "budgets", "remove"},
	{"llm", "usage"},
	{"schedules", "create"}, {"schedules", "list"}, {"schedules", "pause"}, {"schedules", "resume"}, {"schedules", "delete"},
	{"adapter", "run"}, {"adapter", "token"}, {"adapter", "key"},
}

// otherFlags are the flags the pages give to programs other than novaos:
// curl's, the examples' and the a2a-go CLI's.
var otherFlags = map[string]bool{
	"cacert": true, "retry": true, "retry-connrefused": true, "retry-delay": true, "max-time": true, // curl
	"keys":     true, // examples/mailer
	"models":   true, // examples/fakellm
	"insecure": true, // the a2a-go CLI
}

var pageFlagRE = regexp.MustCompile("--([a-z][a-z0-9-]*[a-z0-9])\\b(-?)")

// TestPageFlagsExist fails when a page names a --flag that no novaos
// command takes (nor curl, the examples or the a2a-go CLI, which the
// pages also run): a renamed flag leaves no stale mention behind.
func TestPageFlagsExist(t *testing.T) {
	tl, err := buildTools()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range commands {
		cmd := exec.Command(filepath.Join(tl.gopath, "bin", "novaos"), append(c, "-h")...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		out, _ := cmd.CombinedOutput() // -h exits 0; a failure shows as no flags
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			if m := helpFlagRE.FindStringSubmatch(line); m != nil {
				known[m[1]] = true
				n++
			}
		}
		if n == 0 && !strings.Contains(string(out), "Usage: novaos") {
			t.Errorf("novaos %s -h printed no usage:\n%s", strings.Join(c, " "), out)
		}
	}
	for _, page := range pages(t, tl.root) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(tl.root, page)
		seen := map[string]bool{}
		for _, m := range pageFlagRE.FindAllStringSubmatch(string(src), -1) {
			if m[2] == "-" || seen[m[1]] {
				continue // a prefix such as --push-*, or reported already
			}
			seen[m[1]] = true
			if !known[m[1]] && !otherFlags[m[1]] {
				t.Errorf("%s names --%s, which no novaos command takes", rel, m[1])
			}
		}
	}
}
