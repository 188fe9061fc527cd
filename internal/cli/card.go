package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/cardsig"
	"novaos.dev/novaos/jwk"
)

// maxCardBytes bounds a fetched or read agent card.
const maxCardBytes = 1 << 20

var cardCommands = []command{
	{"get", "print an agent's card: card get <url-or-agent-name>", runCardGet},
	{"verify", "verify a card's signature: card verify <url-or-agent-name> --jwks <url-or-file>", runCardVerify},
	{"sign", "sign a card: card sign --key <jwk-file> < card.json > signed.json", runCardSign},
	{"keygen", "make a card signing key: card keygen --alg EdDSA|ES256|RS256 --out <file>", runCardKeygen},
}

func runCard(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "card", cardCommands, args, e)
}

// parseTarget parses args that name one target (a URL or agent name)
// before or after the flags.
func parseTarget(fs *flag.FlagSet, args []string) (target string, code int, ok bool) {
	pos, code, ok := parseArgs(fs, args)
	switch {
	case !ok:
		return "", code, false
	case len(pos) > 1:
		return "", usageError(fs, "unexpected argument %q", pos[1]), false
	case len(pos) == 0:
		return "", usageError(fs, "name an agent card URL or agent name"), false
	}
	return pos[0], 0, true
}

// cardURL reads a card command's target: a URL names the card itself when
// it ends in .json, and otherwise the agent, whose well-known card path is
// added; a bare name is resolved through the server's registry.
func cardURL(ctx context.Context, target, server string, hc *http.Client) (string, error) {
	if strings.Contains(target, "://") && strings.HasSuffix(target, ".json") {
		return target, nil
	}
	base, err := agentEndpoint(ctx, target, server, hc)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(base, "/") + a2a.WellKnownCardPath, nil
}

// httpGet fetches url with a timeout and a size limit, with hc (nil:
// http.DefaultClient).
func httpGet(ctx context.Context, url string, limit int64, hc *http.Client) ([]byte, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL.Redacted(), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", req.URL.Redacted(), limit)
	}
	return data, nil
}

func fetchCard(ctx context.Context, target, server string, hc *http.Client) ([]byte, *a2a.AgentCard, error) {
	u, err := cardURL(ctx, target, server, hc)
	if err != nil {
		return nil, nil, err
	}
	data, err := httpGet(ctx, u, maxCardBytes, hc)
	if err != nil {
		return nil, nil, err
	}
	var card a2a.AgentCard
	if err := a2a.Unmarshal(data, &card); err != nil {
		return nil, nil, fmt.Errorf("not an agent card: %w", err)
	}
	return data, &card, nil
}

func runCardGet(ctx context.Context, args []string, e *env) int {
	fs := newFlags("card get", "card get <url-or-agent-name> [--server URL] [--ca-cert FILE]", e)
	server := serverFlag(fs, e)
	ca := caFlag(fs)
	target, code, ok := parseTarget(fs, args)
	if !ok {
		return code
	}
	cfg, err := clientTLS(*ca)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card get: %v\n", err)
		return exitFail
	}
	data, _, err := fetchCard(ctx, target, *server, httpClient(cfg))
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card get: %v\n", err)
		return exitFail
	}
	var out bytes.Buffer
	if err := json.Indent(&out, data, "", "  "); err != nil {
		out.Reset()
		out.Write(data)
	}
	out.WriteByte('\n')
	e.stdout.Write(out.Bytes())
	return exitOK
}

func runCardVerify(ctx context.Context, args []string, e *env) int {
	fs := newFlags("card verify", "card verify <url-or-agent-name> --jwks <url-or-file> [--server URL] [--ca-cert FILE]", e)
	server := serverFlag(fs, e)
	ca := caFlag(fs)
	jwks := fs.String("jwks", "", "`URL or file` of the JWKS holding the keys you trust (required; a jku in the card is never used)")
	algs := fs.String("alg", strings.Join(jwk.Algorithms, ","), "comma-separated `algorithms` to accept")
	target, code, ok := parseTarget(fs, args)
	if !ok {
		return code
	}
	if *jwks == "" {
		return usageError(fs, "--jwks is required: name the key set you trust")
	}
	cfg, err := clientTLS(*ca)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card verify: %v\n", err)
		return exitFail
	}
	hc := httpClient(cfg)
	_, card, err := fetchCard(ctx, target, *server, hc)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card verify: %v\n", err)
		return exitFail
	}
	var keys *jwk.KeySet
	if strings.HasPrefix(*jwks, "http://") || strings.HasPrefix(*jwks, "https://") {
		keys, err = jwk.FetchKeySet(ctx, *jwks, &jwk.FetchOptions{Client: hc})
	} else {
		var data []byte
		if data, err = os.ReadFile(*jwks); err == nil {
			keys, err = jwk.ParseKeySet(data)
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card verify: %v\n", err)
		return exitFail
	}
	v, err := cardsig.Verify(card, keys, &cardsig.VerifyOptions{Algorithms: strings.Split(*algs, ",")})
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card verify: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(e.stdout, "verified: %s card signed by key %q (%s)\n", card.Name, v.KeyID, v.Algorithm)
	return exitOK
}

// readCardKey reads a private JWK file; "" means no key.
func readCardKey(path string) (*jwk.Key, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("card key: %w", err)
	}
	key, err := jwk.ParseKey(data)
	if err != nil {
		return nil, fmt.Errorf("card key %s: %w", path, err)
	}
	if !key.IsPrivate() {
		return nil, fmt.Errorf("card key %s: a public key; signing needs the private JWK", path)
	}
	return key, nil
}

func runCardSign(_ context.Context, args []string, e *env) int {
	fs := newFlags("card sign", "card sign --key <jwk-file> [--kid ID] [--jku URL] < card.json > signed.json", e)
	keyFile := fs.String("key", "", "private JWK `file` (novaos card keygen makes one)")
	kid := fs.String("kid", "", "key `id` for the signature (default: the JWK's kid, else its thumbprint)")
	jku := fs.String("jku", "", "informational `URL` of your JWKS for the protected header (verifiers do not fetch it)")
	in := fs.String("in", "-", "card `file` to sign; - is standard input")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *keyFile == "" {
		return usageError(fs, "--key is required")
	}
	key, err := readCardKey(*keyFile)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card sign: %v\n", err)
		return exitFail
	}
	if *kid != "" {
		key = key.WithKeyID(*kid)
	}
	data, err := readInput(*in)
	if err == nil && len(data) > maxCardBytes {
		err = fmt.Errorf("card larger than %d bytes", maxCardBytes)
	}
	var card a2a.AgentCard
	if err == nil {
		err = a2a.Unmarshal(data, &card)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card sign: read card: %v\n", err)
		return exitFail
	}
	signed, err := cardsig.Sign(&card, key, &cardsig.SignOptions{JKU: *jku})
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card sign: %v\n", err)
		return exitFail
	}
	out, err := json.MarshalIndent(signed, "", "  ")
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card sign: %v\n", err)
		return exitFail
	}
	e.stdout.Write(append(out, '\n'))
	return exitOK
}

func runCardKeygen(_ context.Context, args []string, e *env) int {
	fs := newFlags("card keygen", "card keygen [--alg EdDSA|ES256|RS256] --out <file>", e)
	alg := fs.String("alg", jwk.EdDSA, "`algorithm`: EdDSA (Ed25519), ES256 or RS256")
	outFile := fs.String("out", "", "`file` to write the private JWK to (mode 0600; never overwritten)")
	kid := fs.String("kid", "", "key `id` (default: the key's RFC 7638 thumbprint)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *outFile == "" {
		return usageError(fs, "--out is required")
	}
	key, err := jwk.GenerateKey(*alg)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if *kid != "" {
		key = key.WithKeyID(*kid)
	}
	priv, err := key.PrivateJWK()
	if err == nil {
		err = writeNewFile(*outFile, append(priv, '\n'))
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card keygen: %v\n", err)
		return exitFail
	}
	pub, err := json.MarshalIndent(key, "", "  ")
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos card keygen: %v\n", err)
		return exitFail
	}
	e.stdout.Write(append(pub, '\n'))
	fmt.Fprintf(e.stderr, "Wrote the private key to %s. Serve signed cards with: novaos serve --card-key %s\n", *outFile, *outFile)
	return exitOK
}

// writeNewFile writes data to a file that must not exist yet, readable by
// its owner only.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readInput reads up to maxCardBytes+1 bytes of a file, or of standard
// input for "-".
func readInput(path string) ([]byte, error) {
	r := io.Reader(os.Stdin)
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	return io.ReadAll(io.LimitReader(r, maxCardBytes+1))
}
