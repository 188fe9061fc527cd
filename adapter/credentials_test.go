package adapter

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

func TestClientLoadOrCreateDPoPKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dpop.pem")
	k1, err := LoadOrCreateDPoPKey(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %04o, want 0600", st.Mode().Perm())
	}
	k2, err := LoadOrCreateDPoPKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1.Thumbprint() != k2.Thumbprint() {
		t.Fatal("loading the key again gave another key")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "-----BEGIN PRIVATE KEY-----") {
		t.Fatal("the key file is not PKCS#8 PEM")
	}
}

func TestClientLoadOrCreateDPoPKeyConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dpop.pem")
	const n = 8
	jkts := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := LoadOrCreateDPoPKey(path)
			errs[i] = err
			if err == nil {
				jkts[i] = k.Thumbprint()
			}
		})
	}
	wg.Wait()
	final, err := LoadOrCreateDPoPKey(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		// A loser of the race may read the winner's file half written
		// and fail; it must never come back with a key of its own.
		if errs[i] == nil && jkts[i] != final.Thumbprint() {
			t.Fatalf("caller %d got a key that is not the one on disk", i)
		}
	}
}

func TestClientPrivateFilesRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no POSIX modes")
	}
	dir := t.TempDir()
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := key.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	const tok = "nv_secret_token_value_123456"
	cases := []struct {
		name string
		mode os.FileMode
		data []byte
	}{
		{"group readable", 0o640, nil},
		{"world readable", 0o604, nil},
		{"group writable", 0o620, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kp := filepath.Join(dir, tc.name+".pem")
			tp := filepath.Join(dir, tc.name+".token")
			for p, data := range map[string][]byte{kp: pemBytes, tp: []byte(tok + "\n")} {
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := LoadOrCreateDPoPKey(kp); err == nil || !strings.Contains(err.Error(), "0600") {
				t.Fatalf("LoadOrCreateDPoPKey: error %v, want a refusal naming 0600", err)
			}
			_, err := SecretFromFile(tp)
			if err == nil {
				t.Fatal("SecretFromFile read a file others may read")
			}
			if strings.Contains(err.Error(), tok) {
				t.Fatal("the error shows the secret")
			}
		})
	}
}

func TestClientSecretFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v, err := SecretFromFile(write("ok", "  nv_token_abc123\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Reveal() != "nv_token_abc123" {
		t.Fatal("SecretFromFile did not trim the value")
	}
	for name, data := range map[string]string{"empty": " \n", "two lines": "nv_line_one\nnv_line_two\n", "big": strings.Repeat("x", 70<<10)} {
		_, err := SecretFromFile(write(name, data))
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "nv_line") {
			t.Errorf("%s: the error shows the content: %v", name, err)
		}
	}
	if _, err := SecretFromFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := SecretFromFile(dir); err == nil {
		t.Error("a directory was read as a secret")
	}
	if _, err := LoadOrCreateDPoPKey(write("notakey.pem", "hello")); err == nil {
		t.Error("a file that is no key was accepted")
	}
}

func TestClientCredentialsNeverPrint(t *testing.T) {
	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := key.MarshalPEM()
	creds := Credentials{APIToken: secret.New(clientTestToken), DPoP: key}
	out := fmt.Sprintf("%v|%+v|%#v|%s|%q|%x|%v|%+v", creds, creds, creds, creds, creds, creds, &creds, struct{ C Credentials }{creds})
	if strings.Contains(out, clientTestToken) || strings.Contains(out, string(pemBytes[30:60])) {
		t.Fatalf("credentials printed a secret: %s", out)
	}
	if !strings.Contains(out, key.Thumbprint()) {
		t.Fatalf("credentials should name the key by its thumbprint: %s", out)
	}
	if got := (Credentials{}).String(); !strings.Contains(got, "token=none") {
		t.Fatalf("empty credentials: %s", got)
	}
}
