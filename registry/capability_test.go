package registry

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalizeCapability(t *testing.T) {
	tests := []struct{ in, want string }{
		// The reference SDK's documented examples.
		{"Web Scraping", "web-scraping"},
		{"web_scraping", "web-scraping"},
		{"API Integration", "api-integration"},
		{"Web-Scraping", "web-scraping"},
		// Extra white space is removed; runs of separators are one '-'.
		{"  Web   Scraping  ", "web-scraping"},
		{"web\tscraping\n", "web-scraping"},
		{"web__scraping", "web-scraping"},
		{"web - scraping", "web-scraping"},
		{"-web-scraping_", "web-scraping"},
		// Special characters are dropped, letters and digits kept.
		{"C++ / Go!", "c-go"},
		{"OAuth2.0", "oauth20"},
		{"A/B testing", "ab-testing"},
		{"Übersetzung", "übersetzung"},
		{"", ""},
		{"!!!", ""},
	}
	for _, tc := range tests {
		if got := NormalizeCapability(tc.in); got != tc.want {
			t.Errorf("NormalizeCapability(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSimilarity(t *testing.T) {
	// Ratios cross-checked with Python's difflib.SequenceMatcher(None, a, b).ratio()
	// on the normalized names.
	tests := []struct {
		a, b string
		want float64
	}{
		{"Web Scraping", "web_scraping", 1},
		{"data analysis", "data analytics", 0.8148148148148148},
		{"web scrap", "web scraping", 0.8571428571428571},
		{"scraping", "Web Scraping", 0.8},         // contained, ratio already above 0.6
		{"api", "API Integration", 0.6},           // contained: floor 0.6 (ratio 0.333)
		{"integration", "API Integration", 0.846}, // ratio 22/26
		{"api", "Data Analysis", 0.25},            // not contained
		{"translate", "translation", 0.8},
		{"image generation", "image recognition", 0.7272727272727273},
		{"summarise", "summarize", 0.8888888888888888},
		{"rap", "rapid deploy", 0.4}, // a substring but not a word: no floor
		{"", "anything", 0},
		{"!!!", "!!!", 0},
	}
	for _, tc := range tests {
		got := Similarity(tc.a, tc.b)
		if math.Abs(got-tc.want) > 0.001 {
			t.Errorf("Similarity(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if rev := Similarity(tc.b, tc.a); math.Abs(rev-got) > 0.2 {
			t.Errorf("Similarity(%q, %q) = %v, far from the reverse %v", tc.b, tc.a, rev, got)
		}
	}
}

func TestMatchCapability(t *testing.T) {
	avail := []string{"Web Scraping", "Data Analysis", "API Integration"}
	tests := []struct {
		required  string
		threshold float64
		want      string
		score     float64
		ok        bool
	}{
		{"web scraping", 0.8, "Web Scraping", 1, true},                     // the Python SDK's example 1
		{"api", 0.5, "API Integration", 0.6, true},                         // the Python SDK's example 2
		{"api", 0.8, "", 0, false},                                         // same pair under the default threshold
		{"data analytics", 0.8, "Data Analysis", 0.8888888888888888, true}, // difflib order: (required, available)
		{"data analytics", 0.9, "", 0, false},
		{"web scrap", 0.8, "Web Scraping", 0.8571428571428571, true},
		{"cooking", 0.8, "", 0, false},
		{"", 0.1, "", 0, false},
	}
	for _, tc := range tests {
		got, score, ok := MatchCapability(tc.required, avail, tc.threshold)
		if got != tc.want || ok != tc.ok || math.Abs(score-tc.score) > 1e-9 {
			t.Errorf("MatchCapability(%q, %v) = %q, %v, %v; want %q, %v, %v", tc.required, tc.threshold, got, score, ok, tc.want, tc.score, tc.ok)
		}
	}
	// The first of equal scores wins; an exact match stops the search.
	if got, _, _ := MatchCapability("web-scraping", []string{"web_scraping", "Web Scraping"}, 0.8); got != "web_scraping" {
		t.Errorf("tie: got %q, want the first", got)
	}
}

func agents() []*Agent {
	return []*Agent{
		{Name: "scraper", Capabilities: []string{"Web Scraping", "API Integration"}},
		{Name: "analyst", Capabilities: []string{"data_analysis"}, Metadata: map[string]any{
			"capabilities": []any{"Reporting", map[string]any{"name": "web scrape"}, 42.0},
		}},
		{Name: "writer", Capabilities: []string{"Translation", "Summarize"}},
		{Name: "empty"},
	}
}

func names(res []MatchResult) []string {
	out := []string{}
	for _, r := range res {
		out = append(out, fmt.Sprintf("%s %.3f +%v -%v", r.Agent.Name, r.Score, r.MatchedCapabilities, r.MissingCapabilities))
	}
	return out
}

func TestIndexMatch(t *testing.T) {
	x := NewIndex(agents())
	tests := []struct {
		name      string
		required  []string
		mode      MatchMode
		threshold float64
		want      []string
	}{
		{"exact after normalization", []string{"web_scraping"}, MatchAll, 1,
			[]string{"scraper 1.000 +[web_scraping] -[]"}},
		{"metadata capabilities count", []string{"reporting"}, MatchAll, 1,
			[]string{"analyst 1.000 +[reporting] -[]"}},
		{"fuzzy reaches the metadata one", []string{"web scraping"}, MatchAll, 0.8,
			[]string{"scraper 1.000 +[web scraping] -[]", "analyst 0.818 +[web scraping] -[]"}},
		{"all needs every one", []string{"web scraping", "api integration"}, MatchAll, 1,
			[]string{"scraper 1.000 +[web scraping api integration] -[]"}},
		{"any ranks by mean score", []string{"web scraping", "translation", "data analysis"}, MatchAny, 1,
			[]string{"scraper 0.333 +[web scraping] -[translation data analysis]",
				"analyst 0.333 +[data analysis] -[web scraping translation]",
				"writer 0.333 +[translation] -[web scraping data analysis]"}},
		{"any with fuzzy scores", []string{"summarise", "translate"}, MatchAny, 0.8,
			[]string{"writer 0.844 +[summarise translate] -[]"}},
		{"low threshold takes word containment", []string{"api"}, MatchAny, 0.5,
			[]string{"scraper 0.600 +[api] -[]"}},
		{"nothing", []string{"cooking"}, MatchAny, 0.8, []string{}},
		{"no required names", nil, MatchAny, 0.8, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(x.Match(tc.required, tc.mode, tc.threshold))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestIndexFind(t *testing.T) {
	x := NewIndex(agents())
	find := func(caps []string, all, fuzzy bool) []string {
		var out []string
		for _, a := range x.FindByCapabilities(caps, all, fuzzy) {
			out = append(out, a.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"scraper"}, find([]string{"Web Scraping"}, true, false)); diff != "" {
		t.Error(diff)
	}
	// Fuzzy keeps the indexed order, not the score order.
	if diff := cmp.Diff([]string{"scraper", "analyst"}, find([]string{"web scraping"}, true, true)); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]string{"scraper", "writer"}, find([]string{"api integration", "translation"}, false, false)); diff != "" {
		t.Error(diff)
	}
	if got := x.FindByCapability("translation", false); len(got) != 1 || got[0].Name != "writer" {
		t.Errorf("FindByCapability = %v", got)
	}
}

func TestMatcher(t *testing.T) {
	got := names(Matcher{}.Match(agents(), []string{"Web Scraping", "Reporting"}, MatchAny))
	want := []string{"analyst 0.909 +[Web Scraping Reporting] -[]", "scraper 0.500 +[Web Scraping] -[Reporting]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default matcher (-want +got):\n%s", diff)
	}
	// Raw names: case and separators matter.
	got = names(Matcher{Threshold: 1, RawNames: true}.Match(agents(), []string{"web scraping", "Web Scraping"}, MatchAny))
	want = []string{"scraper 0.500 +[Web Scraping] -[web scraping]"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("raw matcher (-want +got):\n%s", diff)
	}
}

func TestAgentCapabilityHelpers(t *testing.T) {
	a := agents()[1]
	a.Tags = []string{"x"}
	a.Metadata["tags"] = []any{"y", "x", 3.0}
	a.Metadata["domains"] = []any{"finance"}
	if diff := cmp.Diff([]string{"data_analysis", "Reporting", "web scrape"}, a.AllCapabilities()); diff != "" {
		t.Errorf("AllCapabilities (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x", "y"}, a.AllTags()); diff != "" {
		t.Errorf("AllTags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"finance"}, a.AllDomains()); diff != "" {
		t.Errorf("AllDomains (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		cap   string
		fuzzy bool
		want  bool
	}{
		{"Data Analysis", false, true},
		{"data analytics", false, false},
		{"data analytics", true, true},
		{"web scraping", true, true}, // 0.818 against "web scrape"
		{"web scraping", false, false},
	} {
		if got := a.HasCapability(tc.cap, tc.fuzzy); got != tc.want {
			t.Errorf("HasCapability(%q, %v) = %v, want %v", tc.cap, tc.fuzzy, got, tc.want)
		}
	}
	if !a.Available() || (&Agent{Status: StatusInactive}).Available() {
		t.Error("Available: want active (or empty) only")
	}
}

// The ASCII fast path agrees with the general one.
func FuzzNormalizeCapability(f *testing.F) {
	for _, s := range []string{"Web Scraping", "a--b", "-x-", "web_scraping", " A\tB\n", "c++", "a-b", "", "-", "Ab-9_z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeCapability(s)
		if want := normalizeUnicode(s); got != want {
			t.Fatalf("NormalizeCapability(%q) = %q, general path %q", s, got, want)
		}
		if NormalizeCapability(got) != got {
			t.Fatalf("NormalizeCapability(%q) = %q is not a fixed point", s, got)
		}
	})
}
