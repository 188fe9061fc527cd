package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/llm"
)

// The providers' and the models' commands ask the administration for the
// record they name, with the tenant, and print what it answers.
func TestLLMRecordCommands(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get(llm.TenantHeader))
		var body any
		switch {
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
			return
		case r.URL.Path == llm.ProvidersPath:
			body = llm.ProviderList{Providers: []llm.ProviderInfo{{Name: "p1", BaseURL: "http://p1/v1"}}}
		case strings.HasPrefix(r.URL.Path, llm.ProvidersPath+"/"):
			body = llm.ProviderInfo{Name: "p1", BaseURL: "http://p1/v1"}
		case strings.HasPrefix(r.URL.Path, llm.BudgetsPath+"/"):
			body = llm.BudgetInfo{TenantID: "t1", InstanceID: "i1", DailyTokens: 1000}
		case r.URL.Path == llm.ModelsPath:
			body = llm.RouteList{Models: []llm.RouteInfo{{Name: "m1", Targets: []llm.Target{{Provider: "p1", Model: "gpt"}}}}}
		default:
			body = llm.RouteInfo{Name: "m1", Targets: []llm.Target{{Provider: "p1", Model: "gpt"}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}))
	defer srv.Close()
	tests := []struct {
		args      []string
		request   string
		wantOut   string
		wantInOut string
	}{
		{[]string{"providers", "list"}, "GET " + llm.ProvidersPath + " t1", "", "http://p1/v1"},
		{[]string{"providers", "show", "p1"}, "GET " + llm.ProvidersPath + "/p1 t1", "", "http://p1/v1"},
		{[]string{"providers", "set", "p1", "--base-url", "http://p1/v1"}, "PUT " + llm.ProvidersPath + "/p1 t1", "", "http://p1/v1"},
		{[]string{"providers", "remove", "p1"}, "DELETE " + llm.ProvidersPath + "/p1 t1", "provider p1 removed\n", ""},
		{[]string{"models", "list"}, "GET " + llm.ModelsPath + " t1", "", "p1=gpt"},
		{[]string{"models", "show", "m1"}, "GET " + llm.ModelsPath + "/m1 t1", "", "p1=gpt"},
		{[]string{"models", "set", "m1", "--target", "p1=gpt"}, "PUT " + llm.ModelsPath + "/m1 t1", "", "p1=gpt"},
		{[]string{"models", "remove", "m1"}, "DELETE " + llm.ModelsPath + "/m1 t1", "model m1 removed\n", ""},
		// A budget's tenant is in its path, not a header.
		{[]string{"budgets", "show", "--instance", "i1"}, "GET " + llm.BudgetsPath + "/t1/instances/i1 ", "", "1000"},
		{[]string{"budgets", "set", "--daily-tokens", "1000"}, "PUT " + llm.BudgetsPath + "/t1 ", "", "1000"},
		{[]string{"budgets", "remove"}, "DELETE " + llm.BudgetsPath + "/t1 ", "budget removed\n", ""},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			got = nil
			e, out, errOut := testEnv(nil)
			args := append(append([]string{"llm"}, tc.args...), "--server", srv.URL, "--tenant", "t1")
			if code := run(t.Context(), args, e); code != exitOK {
				t.Fatalf("exit code %d; stderr %s", code, errOut)
			}
			if len(got) != 1 || got[0] != tc.request {
				t.Errorf("requests %q, want %q", got, tc.request)
			}
			if tc.wantOut != "" && out.String() != tc.wantOut {
				t.Errorf("stdout %q, want %q", out, tc.wantOut)
			}
			if !strings.Contains(out.String(), tc.wantInOut) {
				t.Errorf("stdout %q lacks %q", out, tc.wantInOut)
			}
		})
	}
	// A record is named, alone; a budget by its tenant, with limits that
	// are not negative.
	for _, args := range [][]string{{"providers", "show"}, {"models", "remove", "a", "b"}, {"budgets", "show"},
		{"budgets", "remove", "x", "--tenant", "t1"}, {"budgets", "set", "--tenant", "t1", "--run-tokens", "-1"}} {
		e, _, errOut := testEnv(nil)
		if code := run(t.Context(), append(append([]string{"llm"}, args...), "--server", srv.URL), e); code != exitUsage {
			t.Errorf("llm %s: exit code %d, want %d; stderr %s", strings.Join(args, " "), code, exitUsage, errOut)
		}
	}
}
