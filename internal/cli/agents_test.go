package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/registry"
)

func agentsServer(t *testing.T) string {
	t.Helper()
	srv, err := app.New(t.Context(), &app.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv.URL()
}

func TestAgents(t *testing.T) {
	base := agentsServer(t)
	steps := []struct {
		name string
		args []string
		code int
		want string // regexp of stdout
	}{
		{"list the hosted agents", []string{"agents", "list", "--server", base}, 0,
			`^NAME +STATUS +URL +CAPABILITIES +DESCRIPTION\necho +active +` + regexp.QuoteMeta(base) + `/agents/echo +echo +Answers with.*\ntck +active +` + regexp.QuoteMeta(base) + `/agents/tck +tck, TCK conformance +.*\n$`},
		{"register", []string{"agents", "register", "--server", base, "--name", "weather", "--url", "http://127.0.0.1:9/a2a",
			"--description", "Forecasts the\nweather", "--capability", "Weather Forecast", "--tag", "beta", "--tag", "eu", "--domain", "meteo"}, 0,
			`^registered weather \(id [0-9a-f-]{36}\) at http://127\.0\.0\.1:9/a2a\n$`},
		{"search, flags after the text", []string{"agents", "search", "forecasts", "--server", base}, 0,
			`(?s)^NAME.*\nweather +active +http://127\.0\.0\.1:9/a2a +Weather Forecast +Forecasts the\\nweather\n$`},
		{"search with several words", []string{"agents", "search", "--server", base, "echo", "streams"}, 0,
			`(?s)^NAME.*\necho .*\n$`},
		{"search finds nothing", []string{"agents", "search", "--server", base, "nothing-here"}, 0, `^no agents\n$`},
		{"list by tag", []string{"agents", "list", "--server", base, "--tag", "eu", "--json"}, 0,
			`^\{"id":"[0-9a-f-]{36}","name":"weather",.*"tags":\["beta","eu"\].*\}\n$`},
		{"find by capability", []string{"agents", "find", "--server", base, "weather_forecast"}, 0,
			`(?s)^NAME +SCORE +URL +MATCHED +MISSING\nweather +1\.00 +http://127\.0\.0\.1:9/a2a +weather_forecast +\n$`},
		{"find fuzzy, any", []string{"agents", "find", "--server", base, "--any", "--fuzzy", "weather forecasts", "ech"}, 0,
			`(?s)^NAME.*\nweather +0\.48 .*\necho +0\.43 .*\n$`},
		{"register a duplicate", []string{"agents", "register", "--server", base, "--name", "weather", "--url", "http://127.0.0.1:9/"}, 1, `^$`},
		{"register an invalid agent", []string{"agents", "register", "--server", base, "--name", "Bad Name", "--url", "ftp://x"}, 1, `^$`},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), tc.args, e); code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr %s", code, tc.code, errOut)
			}
			if !regexp.MustCompile(tc.want).MatchString(out.String()) {
				t.Errorf("stdout:\n%s\nwant it to match %s", out, tc.want)
			}
		})
	}
}

func TestAgentsErrors(t *testing.T) {
	base := agentsServer(t)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no subcommand", []string{"agents"}, exitUsage, "Usage: novaos agents"},
		{"unknown subcommand", []string{"agents", "delete"}, exitUsage, `unknown subcommand "delete"`},
		{"search without text", []string{"agents", "search", "--server", base}, exitUsage, "want the search text"},
		{"find without capability", []string{"agents", "find", "--server", base}, exitUsage, "want at least one capability"},
		{"list with an argument", []string{"agents", "list", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"register without url", []string{"agents", "register", "--server", base, "--name", "x"}, exitUsage, "--name and --url are required"},
		{"bad server", []string{"agents", "list", "--server", "localhost:8080"}, exitUsage, "--server"},
		{"duplicate", []string{"agents", "register", "--server", base, "--name", "echo", "--url", "http://127.0.0.1:9/"}, exitFail, "409 Agent Exists"},
		{"invalid, with the broken rules", []string{"agents", "register", "--server", base, "--name", "ok", "--url", "http://127.0.0.1:9/", "--tag", ""}, exitFail, "tags[0]: is empty"},
		{"unreachable server", []string{"agents", "list", "--server", "http://127.0.0.1:1"}, exitFail, "novaos agents list:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, out, errOut := testEnv(nil)
			if code := run(t.Context(), tc.args, e); code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr %s", code, tc.code, errOut)
			}
			if !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.want)
			}
			if out.String() != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
	// Help goes to stdout and succeeds.
	e, out, _ := testEnv(nil)
	if code := run(t.Context(), []string{"help", "agents"}, e); code != exitOK || !strings.Contains(out.String(), "register --name N --url U") {
		t.Errorf("help agents: %d %q", code, out)
	}
	// --json output is the registry's own record.
	e, out, _ = testEnv(nil)
	if code := run(t.Context(), []string{"agents", "list", "--server", base, "--json"}, e); code != exitOK {
		t.Fatal(code)
	}
	var a registry.Agent
	if err := json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &a); err != nil || a.Name != "echo" {
		t.Errorf("first JSON line: %+v, %v", a, err)
	}
}
