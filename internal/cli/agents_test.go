package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

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
			`^NAME +STATUS +URL +CAPABILITIES +RECIPIENT KEYS +DESCRIPTION\nask +active +` + regexp.QuoteMeta(base) + `/agents/ask +ask +- +Asks what.*\necho +active +` + regexp.QuoteMeta(base) + `/agents/echo +echo +- +Answers with.*\ntck +active +` + regexp.QuoteMeta(base) + `/agents/tck +tck, TCK conformance +- +.*\n$`},
		{"register", []string{"agents", "register", "--server", base, "--name", "weather", "--url", "http://127.0.0.1:9/a2a",
			"--description", "Forecasts the\nweather", "--capability", "Weather Forecast", "--tag", "beta", "--tag", "eu", "--domain", "meteo"}, 0,
			`^registered weather \(id [0-9a-f-]{36}\) at http://127\.0\.0\.1:9/a2a\n$`},
		{"search, flags after the text", []string{"agents", "search", "forecasts", "--server", base}, 0,
			`(?s)^NAME.*\nweather +active +http://127\.0\.0\.1:9/a2a +Weather Forecast +- +Forecasts the\\nweather\n$`},
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
	if err := json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &a); err != nil || a.Name != "ask" {
		t.Errorf("first JSON line: %+v, %v", a, err)
	}
}

// Recipient keys in the registry: registered from a public or a private
// key file (its public half only), listed by kid, shown whole in --json,
// added and removed by agents update.
func TestAgentsRecipientKeys(t *testing.T) {
	base := agentsServer(t)
	dir := t.TempDir()
	kid1, public1 := generateKey(t, filepath.Join(dir, "keys"))
	kid2, _ := generateKey(t, filepath.Join(dir, "keys"))
	pubFile := filepath.Join(dir, "one.pub.jwk")
	if err := os.WriteFile(pubFile, []byte(public1), 0o600); err != nil {
		t.Fatal(err)
	}
	privFile := filepath.Join(dir, "keys", kid2+".jwk")
	forged := filepath.Join(dir, "forged.pub.jwk")
	if err := os.WriteFile(forged, []byte(strings.Replace(public1, kid1, "mailer-key-1", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	d := privateMember(t, privFile)

	agents := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		e, out, errOut := testEnv(nil)
		code = run(t.Context(), append(append([]string{"agents"}, args...), "--server", base), e)
		return code, out.String(), errOut.String()
	}
	record := func() registry.Agent {
		t.Helper()
		code, out, errOut := agents("search", "mailer", "--json")
		var a registry.Agent
		if code != exitOK || json.Unmarshal([]byte(out), &a) != nil {
			t.Fatalf("search --json: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		return a
	}
	steps := []struct {
		name string
		args []string
		code int
		out  string // regexp of stdout
		kids []string
		err  string // in stderr
	}{
		{"register with both", []string{"register", "--name", "mailer", "--url", "http://127.0.0.1:9/a2a", "--recipient-key", pubFile, "--recipient-key", privFile}, exitOK,
			`^registered mailer \(id [0-9a-f-]{36}\) at http://127\.0\.0\.1:9/a2a, recipient keys ` + kid1 + `, ` + kid2 + `\n$`, []string{kid1, kid2}, ""},
		{"list shows the kids", []string{"list"}, exitOK,
			`(?s)\nmailer +active +http://127\.0\.0\.1:9/a2a +` + kid1 + `, ` + kid2 + ` *\n`, []string{kid1, kid2}, ""},
		{"remove one", []string{"update", "mailer", "--remove-recipient-key", kid1}, exitOK,
			`^updated mailer \(id [0-9a-f-]{36}\) at http://127\.0\.0\.1:9/a2a, recipient keys ` + kid2 + `\n$`, []string{kid2}, ""},
		{"add it back, and one it has", []string{"update", "mailer", "--recipient-key", pubFile, "--recipient-key", privFile}, exitOK,
			`recipient keys ` + kid2 + `, ` + kid1 + `\n$`, []string{kid2, kid1}, ""},
		{"remove a key it does not have", []string{"update", "mailer", "--remove-recipient-key", "nope"}, exitFail,
			`^$`, []string{kid2, kid1}, `agent mailer has no recipient key "nope" (it has ` + kid2 + `, ` + kid1 + `)`},
		{"remove both", []string{"update", "mailer", "--remove-recipient-key", kid1, "--remove-recipient-key", kid2, "--description", "Sends mail"}, exitOK,
			`^updated mailer \(id [0-9a-f-]{36}\) at http://127\.0\.0\.1:9/a2a\n$`, nil, ""},
		{"nothing to change", []string{"update", "mailer"}, exitUsage, `^$`, nil, "nothing to change"},
		{"no name", []string{"update", "--recipient-key", pubFile}, exitUsage, `^$`, nil, "want the agent's name"},
		{"unknown agent", []string{"update", "nobody", "--recipient-key", pubFile}, exitFail, `^$`, nil, "404 Agent Not Found"},
		{"a hosted agent", []string{"update", "echo", "--recipient-key", pubFile}, exitFail, `^$`, nil, "403 Agent Read-Only"},
		{"not a key", []string{"update", "mailer", "--recipient-key", filepath.Join(dir, "nope.jwk")}, exitFail, `^$`, nil, "--recipient-key open " + filepath.Join(dir, "nope.jwk")},
		{"a kid that is not the thumbprint", []string{"register", "--name", "forged", "--url", "http://127.0.0.1:9/a2a", "--recipient-key", forged}, exitFail,
			`^$`, nil, "recipientKeys[0]: kid must be the key's RFC 7638 thumbprint, " + kid1},
	}
	for _, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := agents(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
			if !regexp.MustCompile(tc.out).MatchString(out) {
				t.Errorf("stdout:\n%s\nwant it to match %s", out, tc.out)
			}
			if !strings.Contains(errOut, tc.err) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.err)
			}
			a := record()
			if diff := cmp.Diff(tc.kids, a.RecipientKIDs(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the record's kids (-want +got):\n%s", diff)
			}
			if strings.Contains(out+errOut, d) {
				t.Error("the output shows the private key")
			}
			for i, k := range a.RecipientKeys {
				if strings.Contains(string(k), `"d"`) {
					t.Errorf("recipientKeys[%d] holds a private member", i)
				}
			}
		})
	}
	// --json is the registry's record, keys and all.
	_, out, _ := agents("register", "--name", "mailer-2", "--url", "http://127.0.0.1:9/a2a", "--recipient-key", pubFile, "--json")
	if want := `"recipientKeys":[` + compactJSON(t, public1) + `]`; !strings.Contains(out, want) {
		t.Errorf("register --json: %s, want %s", out, want)
	}
}

// privateMember returns the d member of a private key file.
func privateMember(t *testing.T, path string) string {
	t.Helper()
	var m map[string]string
	if err := json.Unmarshal([]byte(mustRead(t, path)), &m); err != nil || m["d"] == "" {
		t.Fatalf("%s: %v", path, err)
	}
	return m["d"]
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
