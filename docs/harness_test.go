//go:build unix

package docs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The doc test's own parts: a page's blocks and markers, output matching,
// and the split of a script's output into its blocks.

func TestParsePage(t *testing.T) {
	src := strings.Join([]string{
		"# Page",
		"",
		"```sh",
		"novaos version",
		"```",
		"",
		"```output",
		"novaos …",
		"```",
		"<!-- doc-test: skip (needs a dataset) -->",
		"",
		"```sh",
		"novaos bench memory --locomo x.json",
		"```",
		"````go",
		"```sh",
		"not a block of its own",
		"````",
	}, "\n")
	blocks, err := parsePage(src)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		Line                       int
		Info, Marker, Text, Output string
	}
	var gotBlocks []got
	for _, b := range blocks {
		g := got{b.line, b.info, b.marker, b.text, ""}
		if b.output != nil {
			g.Output = b.output.text
		}
		gotBlocks = append(gotBlocks, g)
	}
	want := []got{
		{3, "sh", "", "novaos version\n", "novaos …\n"},
		{12, "sh", "skip (needs a dataset)", "novaos bench memory --locomo x.json\n", ""},
		{15, "go", "", "```sh\nnot a block of its own\n", ""},
	}
	if diff := cmp.Diff(want, gotBlocks); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
}

func TestParsePageErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unclosed", "```sh\nls\n", "not closed"},
		{"output alone", "text\n\n```output\nx\n```\n", "must follow an sh block"},
		{"output after go", "```go\nx\n```\n```output\nx\n```\n", "must follow an sh block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parsePage(tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckMarker(t *testing.T) {
	tests := []struct {
		name, info, marker string
		ok                 bool
	}{
		{"plain sh", "sh", "", true},
		{"skip with reason", "sh", "skip (needs X)", true},
		{"skip without reason", "sh", "skip", false},
		{"postgres", "sh", "postgres", true},
		{"go-test", "sh", "go-test", true},
		{"file on go", "go", "file examples/greeter/main.go", true},
		{"skip on go", "go", "skip (x)", false},
		{"typo", "sh", "postgress", false},
		{"bash block", "bash", "", false},
		{"console block", "console", "", false},
		{"sh with attributes", "sh title", "", false},
		{"text block", "text", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMarker(&block{line: 1, info: tc.info, marker: tc.marker})
			if (err == nil) != tc.ok {
				t.Errorf("checkMarker(%q, %q) = %v, want ok %v", tc.info, tc.marker, err, tc.ok)
			}
		})
	}
}

func TestMatchOutput(t *testing.T) {
	got := "task 01ab completed | hello\nTYPE    SESSION  STATE\nrefund  s-1      PAUSED\ndone\n"
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"wildcard", "task … completed | hello", true},
		{"in order, lines between", "task …\ndone", true},
		{"padding differs", "TYPE SESSION STATE\nrefund s-1 PAUSED", true},
		{"out of order", "done\ntask …", false},
		{"whole line only", "completed", false},
		{"missing", "task … failed …", false},
		{"blank lines ignored", "\ntask …\n\n", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := matchOutput(tc.want, got)
			if (msg == "") != tc.ok {
				t.Errorf("matchOutput(%q) = %q, want ok %v", tc.want, msg, tc.ok)
			}
		})
	}
}

func TestSplitOutput(t *testing.T) {
	stdout := "\n" + blockMark + " 0\none\n\n" + blockMark + " 1\ntwo\nthree\n\n" + endMark + "\n"
	outs, done := splitOutput(stdout)
	if !done {
		t.Error("done = false, want true")
	}
	if diff := cmp.Diff([]string{"one\n\n", "two\nthree\n\n"}, outs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if _, done := splitOutput("\n" + blockMark + " 0\none\n"); done {
		t.Error("done = true for a script that stopped, want false")
	}
}
