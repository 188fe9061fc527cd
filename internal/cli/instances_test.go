package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/gateway"
)

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInstancesLifecycle(t *testing.T) {
	s := newGWServer(t)
	dir := t.TempDir()
	const apiKey, newKey = "sk-live-value-of-the-api-key", "sk-live-the-rotated-api-key"
	s.secrets = append(s.secrets, apiKey, newKey)
	keyFile := writeFile(t, dir, "key", apiKey+"\n")
	newKeyFile := writeFile(t, dir, "newkey", newKey)
	cfgFile := writeFile(t, dir, "cfg.json", `{"tone": "dry"}`)

	out := s.must(t, "instances", "install", "--name", "helper", "--hosted", "echo",
		"--config", "@"+cfgFile, "--secret-file", "API_KEY="+keyFile, "--scope", "memory:read:*", "--scope", "memory:write:*",
		"--memory", "--memory-tokens", "800", "--memory-latency-ms", "40", "--custom-header", "X-Trace", "--publish")
	if !strings.HasPrefix(out, "installed helper (id ") || !strings.HasSuffix(out, ") running hosted echo\n") {
		t.Errorf("install printed %q", out)
	}
	var got gateway.Instance
	if err := json.Unmarshal([]byte(s.must(t, "instances", "show", "helper", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	want := gateway.Instance{ID: got.ID, TenantID: "acme", Name: "helper", Hosted: "echo", Config: map[string]any{"tone": "dry"},
		SecretNames: []string{"API_KEY"}, Memory: true, MemoryBudget: &gateway.MemoryBudget{TokenBudget: 800, LatencyBudgetMS: 40},
		Scopes: []string{"memory:read:*", "memory:write:*"}, CustomHeaders: []string{"X-Trace"}, Published: true, Version: 1}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(gateway.Instance{}, "CreatedAt", "UpdatedAt")); diff != "" {
		t.Errorf("the installed instance (-want +got):\n%s", diff)
	}

	list := s.must(t, "instances", "list")
	if !strings.HasPrefix(list, "NAME") || !strings.Contains(list, "helper") || !strings.Contains(list, got.ID) || !strings.Contains(list, "API_KEY") {
		t.Errorf("instances list:\n%s", list)
	}
	// By id as well as by name.
	show := s.must(t, "instances", "show", got.ID)
	for _, w := range []string{"name            helper", "secrets         API_KEY", "memory          true (budget 800 tokens, 40 ms)",
		"scopes          memory:read:* memory:write:*", "published       true", `config          {"tone":"dry"}`} {
		if !strings.Contains(show, w) {
			t.Errorf("instances show lacks %q:\n%s", w, show)
		}
	}

	out = s.must(t, "instances", "update", "helper", "--name", "helper2", "--remove-secret", "API_KEY",
		"--secret-file", "NEW_KEY="+newKeyFile, "--publish=false", "--memory=false", "--config", `{"tone":"warm"}`)
	if !strings.HasPrefix(out, "updated helper2 (id "+got.ID+", version 2)") {
		t.Errorf("update printed %q", out)
	}
	var upd gateway.Instance
	if err := json.Unmarshal([]byte(s.must(t, "instances", "show", "helper2", "--json")), &upd); err != nil {
		t.Fatal(err)
	}
	want.Name, want.SecretNames, want.Published, want.Memory, want.Config, want.Version = "helper2", []string{"NEW_KEY"}, false, false, map[string]any{"tone": "warm"}, 2
	if diff := cmp.Diff(want, upd, cmpopts.IgnoreFields(gateway.Instance{}, "CreatedAt", "UpdatedAt", "MemoryBudget")); diff != "" {
		t.Errorf("the updated instance (-want +got):\n%s", diff)
	}

	// Echo publishes no recipient key, so its secrets cannot reach it:
	// the run fails and says why. Without them it runs under its new name.
	code, _, errOut := s.cmd(t, "run", "helper2", "not yet")
	if code != exitFail || !strings.Contains(errOut, "FAILED: ") || !strings.Contains(errOut, "recipient key") {
		t.Errorf("run of an instance whose secrets cannot be sealed: exit %d: %s", code, errOut)
	}
	s.must(t, "instances", "update", "helper2", "--remove-secret", "NEW_KEY")
	if code, _, errOut := s.cmd(t, "run", "helper2", "still here"); code != exitOK {
		t.Errorf("run after the update: exit %d: %s", code, errOut)
	}
	if out := s.must(t, "instances", "remove", "helper2"); out != "removed instance helper2 (its runs stay)\n" {
		t.Errorf("remove printed %q", out)
	}
	if list := s.must(t, "instances", "list"); strings.Contains(list, "helper2") {
		t.Errorf("a removed instance is listed:\n%s", list)
	}
	code, _, errOut = s.cmd(t, "instances", "show", "helper2")
	if code != exitFail || !strings.Contains(errOut, `no instance "helper2"`) {
		t.Errorf("show after remove: exit %d: %s", code, errOut)
	}
	code, _, errOut = s.cmd(t, "instances", "show", got.ID)
	if code != exitFail || !strings.Contains(errOut, "404") {
		t.Errorf("show of a removed id: exit %d: %s", code, errOut)
	}
	// A name with the shape of an id is found by its name.
	const idLike = "0aaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	s.must(t, "instances", "install", "--name", idLike, "--hosted", "echo")
	if show := s.must(t, "instances", "show", idLike); !strings.Contains(show, "name            "+idLike) {
		t.Errorf("show of an id-shaped name:\n%s", show)
	}
	// Its run stays.
	if runs := s.must(t, "runs", "list", "--instance", got.ID); !strings.Contains(runs, "still here") {
		t.Errorf("the removed instance's run is gone:\n%s", runs)
	}
}

// The admin token installs and lists for the tenant --tenant names; a
// server without an admin token takes a tokenless caller on its own
// machine as its admin.
func TestInstancesAsAdmin(t *testing.T) {
	s := newGWServer(t)
	file := writeFile(t, t.TempDir(), "admin", gwTestAdminToken)
	e, out, errOut := testEnv(map[string]string{EnvServer: s.url})
	code := run(t.Context(), []string{"instances", "install", "--name", "echo", "--hosted", "echo", "--admin-token-file", file, "--tenant", "acme"}, e)
	s.noSecrets(t, out.String(), errOut.String())
	if code != exitOK {
		t.Fatalf("install as the admin: exit %d: %s", code, errOut)
	}
	if list := s.must(t, "instances", "list"); !strings.Contains(list, "echo") {
		t.Errorf("alice does not see the admin's install in her tenant:\n%s", list)
	}
	e, out, errOut = testEnv(map[string]string{EnvServer: s.url, EnvAdminToken: gwTestAdminToken})
	if code := run(t.Context(), []string{"instances", "list", "--tenant", "globex"}, e); code != exitOK || strings.Contains(out.String(), "echo") {
		t.Errorf("another tenant's listing: exit %d\n%s%s", code, out, errOut)
	}
}

func TestInstancesBadInput(t *testing.T) {
	s := newGWServer(t)
	dir := t.TempDir()
	const leaked = "the-secret-value-on-the-command-line"
	s.secrets = append(s.secrets, leaked)
	empty := writeFile(t, dir, "empty", "\n")
	s.must(t, "instances", "install", "--name", "echo", "--hosted", "echo")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no name", []string{"install", "--hosted", "echo"}, exitUsage, "--name is required"},
		{"no target", []string{"install", "--name", "x"}, exitUsage, "exactly one of --hosted, --url and --agent"},
		{"two targets", []string{"install", "--name", "x", "--hosted", "echo", "--url", "http://127.0.0.1:1"}, exitUsage, "exactly one of"},
		{"a secret as a flag", []string{"install", "--name", "x", "--hosted", "echo", "--secret", "API_KEY=" + leaked}, exitUsage, "use --secret-file NAME=PATH"},
		{"a secret as a flag on update", []string{"update", "echo", "--secret=" + leaked}, exitUsage, "never given as a flag"},
		{"a secret file without a name", []string{"install", "--name", "x", "--hosted", "echo", "--secret-file", empty}, exitUsage, "want NAME=PATH"},
		{"an empty secret file", []string{"install", "--name", "x", "--hosted", "echo", "--secret-file", "K=" + empty}, exitUsage, "is empty"},
		{"a missing secret file", []string{"install", "--name", "x", "--hosted", "echo", "--secret-file", "K=" + filepath.Join(dir, "nope")}, exitUsage, "--secret-file K: open"},
		{"config not an object", []string{"install", "--name", "x", "--hosted", "echo", "--config", "[1]"}, exitUsage, "--config: want a JSON object"},
		{"a budget without memory", []string{"install", "--name", "x", "--hosted", "echo", "--memory-tokens", "5"}, exitUsage, "need --memory"},
		{"a bad name", []string{"install", "--name", "Bad Name", "--hosted", "echo"}, exitFail, "invalid name"},
		{"an unknown hosted agent", []string{"install", "--name", "x", "--hosted", "nope"}, exitFail, "400"},
		{"a taken name", []string{"install", "--name", "echo", "--hosted", "echo"}, exitFail, "409"},
		{"nothing to update", []string{"update", "echo"}, exitUsage, "nothing to change"},
		{"update of an unknown instance", []string{"update", "nope", "--publish"}, exitFail, `no instance "nope"`},
		{"remove of an unknown instance", []string{"remove", "nope"}, exitFail, `no instance "nope"`},
		{"show without an instance", []string{"show"}, exitUsage, "want the instance's id or name"},
		{"unknown subcommand", []string{"frob"}, exitUsage, `unknown subcommand "frob"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := s.cmd(t, append([]string{"instances"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, want %d; stdout %q; stderr %q lacks %q", code, tc.code, out, clipLine(errOut, 400), tc.stderr)
			}
		})
	}
	if list := s.must(t, "instances", "list"); strings.Count(list, "\n") != 2 {
		t.Errorf("a refused install changed the instances:\n%s", list)
	}
}
