package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/llm/llmtest"
	"novaos.dev/novaos/secret"
)

// dashboardFile is the Grafana dashboard operators import.
var dashboardFile = filepath.Join("..", "..", "docs", "grafana", "novaos.json")

// awaited are metrics the dashboard plots that services built on other
// branches register; until those merge, their absence is logged, not
// failed. Empty this list once they have.
var awaited = []string{}

// dashboardPanel is what the test reads of a Grafana panel; a row holds
// its panels when collapsed.
type dashboardPanel struct {
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardExprs are the PromQL expressions of the dashboard's panels, by
// panel title.
func dashboardExprs(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string][]string{}
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

var (
	// promStrings are PromQL string literals, label matchers and ranges,
	// and the label lists of aggregations and vector matching: none names
	// a metric.
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promBraces   = regexp.MustCompile(`\{[^{}]*\}|\[[^\[\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	// promWords are PromQL's keywords and operators spelled as words.
	promWords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames are the metrics expr reads.
func metricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, " ")
	s = promBraces.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		rest := strings.TrimLeft(s[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || slices.Contains(promWords, strings.ToLower(name)) {
			continue // a function, an aggregation or a keyword
		}
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // the exponent or unit of a number
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	tests := []struct{ expr, want string }{
		{`sum by (service, le) (rate(novaos_http_request_duration_seconds_bucket{instance=~"$instance",code=~"5.."}[$__rate_interval]))`,
			"novaos_http_request_duration_seconds_bucket"},
		{`histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m]))) / on (job) group_left(x) b * 3600`, "a_bucket b"},
		{`max(novaos_tasks) or vector(0)`, "novaos_tasks"},
		{`go_goroutines{job="novaos_x"} > 1e3`, "go_goroutines"},
	}
	for _, tc := range tests {
		if got := strings.Join(metricNames(tc.expr), " "); got != tc.want {
			t.Errorf("metricNames(%s) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// A metric the dashboard plots that the server does not export is a
// panel that stays empty forever: every name must be on /metrics of a
// server with every service, once it has served a little.
func TestDashboardMetricsExist(t *testing.T) {
	exprs := dashboardExprs(t)
	if len(exprs) < 20 {
		t.Fatalf("found %d panels with queries in %s; the reader missed them", len(exprs), dashboardFile)
	}
	srv := start(t, &app.Options{DataDir: t.TempDir(), LLM: app.LLMOptions{AllowPrivate: true}})
	// Requests to count, a task, and a model call (the LLM metrics are
	// per tenant: none exists before a tenant's first call).
	sendText(t, srv.URL()+"/agents/echo", "hello")
	callModel(t, srv)
	if code, _ := get(t, srv.URL()+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	families := scrape(t, srv.URL()+app.MetricsPath)

	for title, es := range exprs {
		for _, e := range es {
			names := metricNames(e)
			if len(names) == 0 {
				t.Errorf("panel %q: %q reads no metric", title, e)
			}
			for _, name := range names {
				if !strings.HasPrefix(name, "novaos_") && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
					t.Errorf("panel %q reads %s, which neither the platform nor the Go client exports", title, name)
					continue
				}
				if exported(families, name) {
					continue
				}
				if slices.ContainsFunc(awaited, func(a string) bool {
					return name == a || name == a+"_bucket" || name == a+"_sum" || name == a+"_count"
				}) {
					t.Logf("panel %q: %s is not exported yet (awaited from another branch)", title, name)
					continue
				}
				t.Errorf("panel %q plots %s, which /metrics does not export", title, name)
			}
		}
	}
}

// exported reports whether families hold the series name: a family of its
// own, or a histogram's or summary's _bucket, _sum or _count.
func exported(families map[string]*dto.MetricFamily, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if f, ok := families[base]; ok {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				return true
			case dto.MetricType_SUMMARY:
				return suffix != "_bucket"
			}
		}
	}
	return false
}

// scrape reads url's metrics in the text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return families
}

// callModel registers an in-process provider and a model route for the
// tenant acme and makes two chat completions through the LLM gateway.
func callModel(t *testing.T, srv *app.Server) {
	t.Helper()
	ctx := context.Background()
	provider := llmtest.NewServer(nil)
	t.Cleanup(provider.Close)
	mint := func(scopes ...string) string {
		tok, err := srv.Issuer().Mint(ctx, identity.Claims{TenantID: "acme", Subject: "ops", Scopes: scopes}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	admin := mint(llm.ScopeAdmin)
	put := func(path string, body any) {
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPut, srv.URL()+path, bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT %s: %s", path, resp.Status)
		}
	}
	put(llm.ProvidersPath+"/fake", llm.ProviderRequest{BaseURL: provider.BaseURL()})
	put(llm.ModelsPath+"/"+llmtest.ModelChat, llm.RouteRequest{Targets: []llm.Target{{Provider: "fake", Model: llmtest.ModelChat}},
		InputUSDPerMillion: 1, OutputUSDPerMillion: 2})
	c, err := llm.New(srv.URL()+"/v1", secret.New(mint("llm:model:*")), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Streamed, for the time to the first token.
	stream, err := c.ChatCompletionStream(ctx, &llm.ChatCompletionRequest{Model: llmtest.ModelChat,
		Messages: []llm.Message{{Role: "user", Content: llm.Text("hello there")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if err := stream.Err(); err != nil || chunks == 0 {
		t.Fatalf("the stream ended after %d chunks: %v", chunks, err)
	}
	// And whole: its answer comes once the call is settled and counted,
	// which a stream's end does not wait for.
	if _, err := c.ChatCompletion(ctx, &llm.ChatCompletionRequest{Model: llmtest.ModelChat,
		Messages: []llm.Message{{Role: "user", Content: llm.Text("hello")}}}); err != nil {
		t.Fatal(err)
	}
}
