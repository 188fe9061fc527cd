package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"novaos.dev/novaos/ext/usercontext"
)

// maxKeyFileBytes bounds a JWK file read by keys public and send
// --recipient-key.
const maxKeyFileBytes = 16 << 10

var keysCommands = []command{
	{"generate", "make an agent's recipient key for sealed secrets: keys generate --dir <key-dir> [--public <file>]", runKeysGenerate},
	{"public", "print the public JWK of a key file: keys public <key-dir>/<kid>.jwk", runKeysPublic},
}

func runKeys(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "keys", keysCommands, args, e)
}

func runKeysGenerate(_ context.Context, args []string, e *env) int {
	fs := newFlags("keys generate", "keys generate --dir <key-dir> [--public <file>]", e)
	dir := fs.String("dir", "", "the agent's key `directory`: the private JWK is written there as {kid}.jwk, mode 0600, never overwritten (the directory is created with mode 0700 if missing)")
	public := fs.String("public", "", "write the public JWK to this `file` (never overwritten) instead of standard output")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *dir == "" {
		return usageError(fs, "--dir is required")
	}
	fail := func(err error) int {
		fmt.Fprintf(e.stderr, "novaos keys generate: %v\n", err)
		return exitFail
	}
	if *public != "" {
		// Refuse before a private key is written that nobody could seal to.
		if _, err := os.Lstat(*public); err == nil {
			return fail(fmt.Errorf("--public %s: file exists", *public))
		}
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return fail(err)
	}
	if fi, err := os.Stat(*dir); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(e.stderr, "novaos keys generate: warning: %s is accessible to other users (mode %#o); an agent's key directory should be its own\n", *dir, fi.Mode().Perm())
	}
	key, err := usercontext.GenerateKey()
	if err != nil {
		return fail(err)
	}
	pub, err := indentedPublicJWK(key)
	if err != nil {
		return fail(err)
	}
	if err := usercontext.WriteKeyFile(*dir, key); err != nil {
		return fail(err)
	}
	path := filepath.Join(*dir, key.KID()+".jwk")
	if *public != "" {
		if err := writeNewFile(*public, pub); err != nil {
			_ = os.Remove(path)
			return fail(err)
		}
	} else {
		_, _ = e.stdout.Write(pub)
	}
	dest := *public
	if dest == "" {
		dest = "<public.jwk>"
	}
	fmt.Fprintf(e.stderr, "Wrote the private key %s (kid %s). The agent opens secrets with usercontext.NewKeyRing(%q).\n"+
		"Publish the public JWK in the registry: novaos agents register --name <agent> --url <url> --recipient-key %s\n"+
		"(or novaos agents update <agent> --recipient-key %s); then novaos send <agent> \"text\" --secret NAME --instance <id> seals to it.\n",
		path, key.KID(), *dir, dest, dest)
	return exitOK
}

func runKeysPublic(_ context.Context, args []string, e *env) int {
	fs := newFlags("keys public", "keys public <key-dir>/<kid>.jwk", e)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, "want one private key file, got %d arguments", len(pos))
	}
	key, err := readPrivateKeyFile(pos[0])
	var pub []byte
	if err == nil {
		pub, err = indentedPublicJWK(key)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos keys public: %v\n", err)
		return exitFail
	}
	_, _ = e.stdout.Write(pub)
	return exitOK
}

// indentedPublicJWK is the public JWK as the key commands print it.
func indentedPublicJWK(k *usercontext.PrivateKey) ([]byte, error) {
	pub, err := k.PublicJWK()
	if err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(json.RawMessage(pub), "", "  ")
	return append(out, '\n'), err
}

// readPrivateKeyFile reads a private X25519 JWK. A file named {kid}.jwk
// is read as an agent's key ring reads it, so its kid is the one the
// agent files it under.
func readPrivateKeyFile(path string) (*usercontext.PrivateKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	var ringErr error
	if kid, ok := strings.CutSuffix(filepath.Base(path), ".jwk"); ok {
		k, err := usercontext.NewKeyRing(filepath.Dir(path)).Key(kid)
		if err == nil {
			return k, nil
		}
		ringErr = err
	}
	// Not a name a key ring reads, or a file it refuses: parse the file on
	// its own, for a plain error or for a key under any file name.
	b, err := readKeyFile(path)
	defer clear(b)
	if err != nil {
		return nil, err
	}
	k, err := usercontext.ParsePrivateJWK(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if errors.Is(ringErr, usercontext.ErrKey) {
		return nil, fmt.Errorf("%s: its kid member %q is not its file name, so a key ring refuses it", path, k.KID())
	}
	return k, nil
}

// readRecipientKey reads a recipient key file for the sealing side: a
// public X25519 JWK, or a private one read for its public half only. It
// returns the public JWK (compact, with its kid, never d) and the
// Recipient. send --recipient-key and agents register/update
// --recipient-key read keys with it. Errors name the file, never key
// material.
func readRecipientKey(path string) (json.RawMessage, usercontext.Recipient, error) {
	b, err := readKeyFile(path)
	defer clear(b)
	if err != nil {
		return nil, usercontext.Recipient{}, err
	}
	k, privErr := usercontext.ParsePrivateJWK(b)
	if privErr == nil {
		pub, err := k.PublicJWK()
		return pub, k.Recipient(), err
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(b, &members) == nil {
		if _, private := members["d"]; private {
			// A private key that does not parse: its x alone is not to be trusted.
			return nil, usercontext.Recipient{}, fmt.Errorf("%s: %w", path, privErr)
		}
	}
	to, err := usercontext.ParsePublicJWK(b)
	if err != nil {
		return nil, usercontext.Recipient{}, fmt.Errorf("%s: %w", path, err)
	}
	var pub bytes.Buffer
	if err := json.Compact(&pub, b); err != nil {
		return nil, usercontext.Recipient{}, fmt.Errorf("%s: %w", path, err)
	}
	return pub.Bytes(), to, nil
}

// readKeyFile reads a JWK file of at most maxKeyFileBytes.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		clear(b)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		clear(b)
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxKeyFileBytes)
	}
	return b, nil
}
