package adapter

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/secret"
)

// clientMaxSecretFileBytes bounds what SecretFromFile and
// LoadOrCreateDPoPKey read: a token or a PEM key is far smaller.
const clientMaxSecretFileBytes = 64 << 10

// Credentials are what an adapter authenticates with: the agent's API
// token and, when the token is bound to a proof key (createToken with
// dpop_jkt), that key. With DPoP set every request carries
// "Authorization: DPoP <token>" and a fresh proof; without it
// "Authorization: Bearer <token>". Credentials never print the token or
// the key: every fmt verb shows the key's thumbprint only.
type Credentials struct {
	APIToken secret.Value
	DPoP     *dpop.Key
}

// String names the credentials without their secrets.
func (c Credentials) String() string {
	s := "adapter.Credentials{token=" + secret.Redacted
	if c.APIToken.IsZero() {
		s = "adapter.Credentials{token=none"
	}
	if c.DPoP != nil {
		s += " dpop=" + c.DPoP.Thumbprint()
	}
	return s + "}"
}

// GoString is String.
func (c Credentials) GoString() string { return c.String() }

// Format writes String whatever the verb.
func (c Credentials) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, c.String()) }

// LoadOrCreateDPoPKey reads the proof key at path (a PKCS#8 PEM file),
// or, when there is none, makes one and writes it there, created
// exclusively with mode 0600. It refuses a file that its group or others
// may read, because whoever reads the key can use the token bound to it.
// Give the key's Thumbprint to the platform's createToken as dpop_jkt.
func LoadOrCreateDPoPKey(path string) (*dpop.Key, error) {
	// Two adapters started at once race to create the file: O_EXCL lets
	// one win, and the other reads what the winner wrote.
	for range 2 {
		data, err := clientReadPrivateFile(path)
		if err == nil {
			k, err := dpop.ParseKey(data)
			if err != nil {
				return nil, fmt.Errorf("adapter: dpop key %s: %w", path, err)
			}
			return k, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("adapter: dpop key: %w", err)
		}
		k, err := dpop.GenerateKey()
		if err != nil {
			return nil, fmt.Errorf("adapter: dpop key: %w", err)
		}
		pemBytes, err := k.MarshalPEM()
		if err != nil {
			return nil, fmt.Errorf("adapter: dpop key: %w", err)
		}
		err = clientWriteExclusive(path, pemBytes)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("adapter: dpop key: %w", err)
		}
		return k, nil
	}
	return nil, fmt.Errorf("adapter: dpop key %s: created by another process but not readable yet", path)
}

// SecretFromFile reads a secret (an API token) from a file, without the
// white space around it. It refuses a file its group or others may read,
// an empty one and one larger than 64 KiB; its errors never quote the
// file's content.
func SecretFromFile(path string) (secret.Value, error) {
	data, err := clientReadPrivateFile(path)
	if err != nil {
		return secret.Value{}, fmt.Errorf("adapter: secret: %w", err)
	}
	v := strings.TrimSpace(string(data))
	if v == "" {
		return secret.Value{}, fmt.Errorf("adapter: secret file %s is empty", path)
	}
	if strings.ContainsAny(v, "\r\n") {
		return secret.Value{}, fmt.Errorf("adapter: secret file %s holds more than one line", path)
	}
	return secret.New(v), nil
}

// clientReadPrivateFile reads a regular file only its owner may read.
// The mode is checked on the opened file, so a rename between check and
// read cannot swap in another.
func clientReadPrivateFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	// Windows has no POSIX modes to check; its ACLs are the owner's business.
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is open to its group or others (mode %04o); make it 0600", path, st.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, clientMaxSecretFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > clientMaxSecretFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, clientMaxSecretFileBytes)
	}
	return data, nil
}

// clientWriteExclusive creates path (failing with fs.ErrExist when it
// is there) with mode 0600 and writes data durably; a failed write
// leaves no half file behind.
func clientWriteExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}
