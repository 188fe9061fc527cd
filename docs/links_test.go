//go:build unix

package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^#+ (.*)$`)
	idRE      = regexp.MustCompile(`<a id="([^"]+)">`)
	// notInAnchor is what GitHub drops from a heading to make its anchor.
	notInAnchor = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// anchors returns the anchors of a Markdown page as GitHub makes them
// (lower case, punctuation dropped, spaces as hyphens), and its explicit
// <a id> ones.
func anchors(src string) map[string]bool {
	a := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			h := notInAnchor.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
			a[strings.ReplaceAll(h, " ", "-")] = true
		}
		for _, m := range idRE.FindAllStringSubmatch(line, -1) {
			a[m[1]] = true
		}
	}
	return a
}

// codeSpan is inline code, which holds no links.
var codeSpan = regexp.MustCompile("`[^`\n]*`")

// prose is src without its fenced code blocks and inline code: what a
// Markdown renderer reads links in.
func prose(src string) string {
	var b strings.Builder
	inFence := false
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			b.WriteString(codeSpan.ReplaceAllString(line, ""))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestLinks fails on a relative link of the README or a page that names a
// file that does not exist, or an anchor its page does not have.
func TestLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages(t, root) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, m := range linkRE.FindAllStringSubmatch(prose(string(src)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
			}
			b, err := os.ReadFile(file)
			if err != nil {
				if _, statErr := os.Stat(file); statErr != nil {
					t.Errorf("%s: link %s: no such file", rel, target)
				}
				continue // a directory
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !anchors(string(b))[frag] {
				t.Errorf("%s: link %s: no such anchor", rel, target)
			}
		}
	}
}
