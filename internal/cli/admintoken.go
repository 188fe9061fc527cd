package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"novaos.dev/novaos/secret"
)

// EnvAdminToken holds the registry admin token when no --admin-token-file
// is given: the token serve requires of writes to /api/v1/agents, and the
// one agents register sends.
const EnvAdminToken = "NOVAOS_ADMIN_TOKEN"

// minAdminTokenLen is the shortest token serve accepts: long enough that
// it cannot be guessed, short enough for `openssl rand -hex 16`.
const minAdminTokenLen = 16

// maxAdminTokenFile bounds what is read of a token file.
const maxAdminTokenFile = 4 << 10

// adminToken reads the admin token from file, or from $NOVAOS_ADMIN_TOKEN
// when file is "". Surrounding white space (a file's final newline) is
// dropped. The zero Value means none is configured. Errors never hold the
// token.
func adminToken(file string, e *env) (secret.Value, error) {
	raw, from := e.getenv(EnvAdminToken), "$"+EnvAdminToken
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return secret.Value{}, fmt.Errorf("admin token: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxAdminTokenFile+1))
		if err != nil {
			return secret.Value{}, fmt.Errorf("admin token: read %s: %w", file, err)
		}
		if len(b) > maxAdminTokenFile {
			return secret.Value{}, fmt.Errorf("admin token: %s is larger than %d bytes; it should hold the token only", file, maxAdminTokenFile)
		}
		raw, from = string(b), file
		if strings.TrimSpace(raw) == "" {
			return secret.Value{}, fmt.Errorf("admin token: %s is empty", file)
		}
	}
	raw = strings.TrimSpace(raw)
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] > '~' {
			return secret.Value{}, fmt.Errorf("admin token in %s: it may hold visible ASCII characters only (found one at byte %d)", from, i)
		}
	}
	return secret.New(raw), nil
}

// serverAdminToken is adminToken for serve, which also refuses a token
// too short to keep anyone out.
func serverAdminToken(file string, e *env) (secret.Value, error) {
	tok, err := adminToken(file, e)
	if err == nil && !tok.IsZero() && len(tok.Reveal()) < minAdminTokenLen {
		err = fmt.Errorf("admin token: want at least %d characters (for example the output of `openssl rand -hex 32`)", minAdminTokenLen)
	}
	return tok, err
}

// optBool is a boolean flag that also knows whether it was given.
type optBool struct{ set, v bool }

func (b *optBool) IsBoolFlag() bool { return true }

func (b *optBool) String() string {
	if b == nil || !b.set {
		return ""
	}
	return strconv.FormatBool(b.v)
}

func (b *optBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.set, b.v = true, v
	return nil
}
