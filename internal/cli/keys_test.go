package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/ext/usercontext"
)

// generateKey runs keys generate into dir and returns the kid and the
// public JWK it printed.
func generateKey(t *testing.T, dir string) (kid, public string) {
	t.Helper()
	code, out, errOut := runCmd(t, "keys", "generate", "--dir", dir)
	if code != exitOK {
		t.Fatalf("keys generate: exit %d: %s", code, errOut)
	}
	to, err := usercontext.ParsePublicJWK([]byte(out))
	if err != nil {
		t.Fatalf("printed public JWK %q: %v", out, err)
	}
	return to.KID, out
}

func TestKeysGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agent-keys")
	kid, public := generateKey(t, dir)

	// The public JWK: kid is the thumbprint, no private member.
	var members map[string]any
	if err := json.Unmarshal([]byte(public), &members); err != nil {
		t.Fatal(err)
	}
	if _, ok := members["d"]; ok {
		t.Errorf("the public JWK has a d member: %s", public)
	}
	to, err := usercontext.ParsePublicJWK([]byte(public))
	if err != nil {
		t.Fatal(err)
	}
	if want := usercontext.Thumbprint(to.Public); kid != want {
		t.Errorf("kid %q, want the thumbprint %q", kid, want)
	}

	// The private key: dir/{kid}.jwk, mode 0600, in a 0700 directory,
	// read by a key ring as the same key.
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != kid+".jwk" {
		t.Fatalf("key directory holds %v (%v), want %s.jwk", entries, err, kid)
	}
	fi, err = os.Stat(filepath.Join(dir, kid+".jwk"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	k, err := usercontext.NewKeyRing(dir).Key(kid)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Recipient().Public.Equal(to.Public) {
		t.Error("the key file's public key is not the printed one")
	}

	// keys public prints the same JWK again.
	code, out, errOut := runCmd(t, "keys", "public", filepath.Join(dir, kid+".jwk"))
	if code != exitOK || out != public {
		t.Errorf("keys public: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, public)
	}

	// A second key goes next to the first.
	kid2, _ := generateKey(t, dir)
	if kid2 == kid {
		t.Error("two keys with one kid")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("key directory holds %d files, want 2", len(entries))
	}
}

func TestKeysGenerateWarnsOfAnOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "keys", "generate", "--dir", dir)
	if code != exitOK || !strings.Contains(errOut, "warning: "+dir+" is accessible to other users (mode 0755)") {
		t.Errorf("exit %d, stderr %q; want a warning", code, errOut)
	}
	code, _, errOut = runCmd(t, "keys", "generate", "--dir", filepath.Join(dir, "own"))
	if code != exitOK || strings.Contains(errOut, "warning") {
		t.Errorf("exit %d, stderr %q; want no warning", code, errOut)
	}
}

func TestKeysGeneratePublicFile(t *testing.T) {
	dir := t.TempDir()
	pubFile := filepath.Join(dir, "public.jwk")
	code, out, errOut := runCmd(t, "keys", "generate", "--dir", filepath.Join(dir, "keys"), "--public", pubFile)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	b, err := os.ReadFile(pubFile)
	if err != nil {
		t.Fatal(err)
	}
	to, err := usercontext.ParsePublicJWK(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys", to.KID+".jwk")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(errOut, to.KID) || !strings.Contains(errOut, "--recipient-key "+pubFile) {
		t.Errorf("stderr %q does not say what was written and how to use it", errOut)
	}

	// An existing public file is refused before any key is written.
	keys := filepath.Join(dir, "keys2")
	code, _, errOut = runCmd(t, "keys", "generate", "--dir", keys, "--public", pubFile)
	if code != exitFail || !strings.Contains(errOut, "file exists") {
		t.Errorf("exit %d, stderr %q; want a refusal", code, errOut)
	}
	if entries, _ := os.ReadDir(keys); len(entries) != 0 {
		t.Errorf("a key was written: %v", entries)
	}
	if b2, _ := os.ReadFile(pubFile); string(b2) != string(b) {
		t.Error("the public file was overwritten")
	}
}

func TestKeysErrors(t *testing.T) {
	dir := t.TempDir()
	kid, public := generateKey(t, dir)
	write := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	priv, err := os.ReadFile(filepath.Join(dir, kid+".jwk"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no subcommand", []string{"keys"}, exitUsage, "Usage: novaos keys <subcommand>"},
		{"unknown subcommand", []string{"keys", "rotate"}, exitUsage, `unknown subcommand "rotate"`},
		{"generate without --dir", []string{"keys", "generate"}, exitUsage, "--dir is required"},
		{"generate into a file", []string{"keys", "generate", "--dir", filepath.Join(dir, kid+".jwk")}, exitFail, "not a directory"},
		{"public without a file", []string{"keys", "public"}, exitUsage, "want one private key file"},
		{"public of a missing file", []string{"keys", "public", filepath.Join(dir, "nope.jwk")}, exitFail, "no such file"},
		{"public of a public key", []string{"keys", "public", write(kid+".jwk", public)}, exitFail, "invalid key: d must be"},
		{"public of a key filed under another kid", []string{"keys", "public", write("other.jwk", string(priv))}, exitFail, `its kid member "` + kid + `" is not its file name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.code, tc.want)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			if strings.Contains(errOut, `"d"`) {
				t.Errorf("stderr shows key material: %q", errOut)
			}
		})
	}
}

func TestKeysPublicAnyFileName(t *testing.T) {
	k, err := usercontext.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	priv, err := k.PrivateJWK()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "backup of agent key.json")
	if err := os.WriteFile(p, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "keys", "public", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got, want map[string]any
	wantJWK, _ := k.PublicJWK()
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(wantJWK, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("public JWK (-want +got):\n%s", diff)
	}
}

func TestKeysHelp(t *testing.T) {
	code, out, _ := runCmd(t, "keys", "-h")
	if code != exitOK || !strings.Contains(out, "generate") || !strings.Contains(out, "public") {
		t.Errorf("keys -h: exit %d, stdout %q", code, out)
	}
	code, out, _ = runCmd(t, "help")
	if code != exitOK || !strings.Contains(out, "keys     make agents' recipient keys") {
		t.Errorf("help: exit %d, stdout %q", code, out)
	}
}

// The sealed-secrets walk-through with the registry as the key store:
// keys generate, agents register --recipient-key, then send <name>
// --secret with no key file, sealed to the key the registry holds and
// opened by the agent's key ring.
func TestSealedSecretsThroughTheRegistry(t *testing.T) {
	const value = "registry-walk-secret-6d1e"
	dir := t.TempDir()
	keyDir := filepath.Join(dir, "agent-keys")
	pubFile := filepath.Join(dir, "vault.pub.jwk")
	if code, _, errOut := runCmd(t, "keys", "generate", "--dir", keyDir, "--public", pubFile); code != exitOK {
		t.Fatalf("keys generate: %s", errOut)
	} else if !strings.Contains(errOut, "novaos agents register --name <agent> --url <url> --recipient-key "+pubFile) {
		t.Errorf("keys generate does not say how to register the key: %q", errOut)
	}
	kid := recipientKIDOfFile(t, pubFile)
	var logs syncBuffer
	vaultURL, calls := vaultServer(t, keyDir, &logs)
	base := agentsServer(t)

	// An agent registered without a key: send says how to register one,
	// and nothing reaches the agent.
	vars := map[string]string{"API_KEY": value}
	runOK := func(args ...string) (stdout, stderr string) {
		t.Helper()
		e, out, errOut := testEnv(vars)
		if code := run(t.Context(), args, e); code != exitOK {
			t.Fatalf("%s: exit %d; stderr: %s", strings.Join(args[:2], " "), code, errOut)
		}
		return out.String(), errOut.String()
	}
	runOK("agents", "register", "--server", base, "--name", "vault", "--url", vaultURL)
	send := []string{"send", "vault", "read", "--server", base, "--secret", "API_KEY", "--instance", "vault-1", "--run", "run-9"}
	e, out, errOut := testEnv(vars)
	if code := run(t.Context(), send, e); code != exitFail {
		t.Fatalf("send to an agent without a registered key: exit %d, stdout %q", code, out)
	}
	if want := `agent "vault" has no recipient key in the registry of ` + base; !strings.Contains(errOut.String(), want) ||
		!strings.Contains(errOut.String(), "register one with novaos agents register … --recipient-key") {
		t.Errorf("stderr %q, want %q and how to register a key", errOut, want)
	}
	if calls.Load() != 0 {
		t.Errorf("%d requests reached the agent", calls.Load())
	}

	// The key is registered; a second agent gets it at registration.
	stdout, _ := runOK("agents", "update", "vault", "--server", base, "--recipient-key", pubFile)
	if want := "updated vault (id "; !strings.HasPrefix(stdout, want) || !strings.HasSuffix(stdout, "recipient keys "+kid+"\n") {
		t.Errorf("agents update: stdout %q", stdout)
	}
	runOK("agents", "register", "--server", base, "--name", "vault-2", "--url", vaultURL, "--recipient-key", pubFile)

	for _, name := range []string{"vault", "vault-2"} {
		args := slices.Clone(send)
		args[1] = name
		stdout, stderr := runOK(args...)
		if want := "tenant default instance vault-1 run run-9: API_KEY=sha256:" + sha256Hex(value); !strings.Contains(stdout, want) {
			t.Errorf("send %s: stdout %q, want the agent to have opened the value: %q", name, stdout, want)
		}
		if want := "sealed API_KEY to kid " + kid + " for tenant default"; !strings.Contains(stderr, want) {
			t.Errorf("send %s: stderr %q, want %q", name, stderr, want)
		}
		if strings.Contains(stdout+stderr+logs.String(), value) {
			t.Errorf("send %s: the output or the agent's log shows the value", name)
		}
	}
}

func recipientKIDOfFile(t *testing.T, path string) string {
	t.Helper()
	to, err := usercontext.ParsePublicJWK([]byte(mustRead(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	return to.KID
}
