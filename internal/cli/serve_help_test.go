package cli

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every serve flag appears in -h under exactly one service's heading, and
// every flag a group names exists.
func TestServeFlagGroups(t *testing.T) {
	seen := map[string]string{}
	for _, g := range serveGroups {
		for _, f := range g.flags {
			if other, ok := seen[f]; ok {
				t.Errorf("--%s is in %q and %q", f, other, g.title)
			}
			seen[f] = g.title
		}
	}
	code, _, stderr := runCmd(t, "serve", "-h")
	if code != exitOK {
		t.Fatalf("serve -h: exit %d", code)
	}
	var titles []string
	printed := map[string]string{}
	group := ""
	flagLine := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	for line := range strings.Lines(stderr) {
		line = strings.TrimRight(line, "\n")
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			group = strings.TrimSuffix(line, ":")
			titles = append(titles, group)
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil {
			printed[m[1]] = group
		}
	}
	if slices.Contains(titles, otherFlags) {
		t.Errorf("serve -h has flags in no group (under %q): add them to serveGroups", otherFlags)
	}
	for f, title := range seen {
		if printed[f] != title {
			t.Errorf("--%s printed under %q, want %q", f, printed[f], title)
		}
	}
	for f := range printed {
		if _, ok := seen[f]; !ok {
			t.Errorf("--%s is in no group", f)
		}
	}
	var want []string
	for _, g := range serveGroups {
		want = append(want, g.title)
	}
	if !slices.Equal(titles, want) {
		t.Errorf("headings %q, want %q", titles, want)
	}
}
