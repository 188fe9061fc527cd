package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/netguard"
)

// EnvToken is where commands that call the platform as an agent, and
// token verify, find a token not given as an argument.
const EnvToken = "NOVAOS_TOKEN"

// defaultIssuer is the issuer of a server started with the default
// --addr and no --public-url: serve's tokens carry its public base URL.
const defaultIssuer = "http://127.0.0.1:8080"

var tokenCommands = []command{
	{"mint", "sign a development execution token with the data directory's key: token mint --tenant T --agent A --scopes s1,s2", runTokenMint},
	{"verify", "check a token and print its claims: token verify [TOKEN | -]", runTokenVerify},
	{"rotate", "make a new signing key; the old one stays published until its tokens expire: token rotate", runTokenRotate},
}

func runToken(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "token", tokenCommands, args, e)
}

// issuerFlags are the flags every token subcommand shares.
type issuerFlags struct {
	fs                                   *flag.FlagSet
	data, keyFile, issuer, audience, alg *string
}

// addIssuerFlags adds --data, and --issuer and --audience unless the
// command only touches the key ring.
func addIssuerFlags(fs *flag.FlagSet, claims bool) issuerFlags {
	f := issuerFlags{
		fs:       fs,
		data:     fs.String("data", app.DefaultDataDir, "data `directory` whose "+auth.KeyFile+" signs tokens (created, owner-only, when missing); the server's --data"),
		keyFile:  fs.String("key-file", "", "the signing key ring `file`, when the server has a --token-key-file (default <--data>/"+auth.KeyFile+")"),
		issuer:   new(string),
		audience: new(string),
		alg:      new(string),
	}
	if claims {
		fs.StringVar(f.issuer, "issuer", "", "token issuer (iss) `URL`: the server's --token-issuer, by default its public base URL (default what the server on --data recorded in "+auth.RecordFile+", else "+defaultIssuer+")")
		fs.StringVar(f.audience, "audience", "", "token `audience` (aud): the server's --token-audience (default what the server on --data recorded, else "+identity.DefaultAudience+")")
	}
	return f
}

// addAlg adds --alg to a command that signs: a key it makes is of this
// algorithm, and a ring whose key is not is rotated before it signs.
func (f issuerFlags) addAlg() {
	f.fs.StringVar(f.alg, "alg", "", "signing `algorithm`, RS256 or EdDSA: the server's --token-alg (default what the server on --data recorded in "+auth.RecordFile+", else RS256); a key ring whose active key is of the other algorithm is rotated first")
}

// resolve fills in the issuer, audience and algorithm not given as
// flags: what the server on --data recorded when it started, else the
// defaults of a server started with none of the flags.
func (f issuerFlags) resolve() error {
	given := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	if *f.alg != "" && *f.alg != auth.RS256 && *f.alg != auth.EdDSA {
		return fmt.Errorf("--alg %q: want %s or %s", *f.alg, auth.RS256, auth.EdDSA)
	}
	algFromRecord := f.fs.Lookup("alg") != nil && !given["alg"]
	if f.fs.Lookup("issuer") == nil {
		// Only the key ring is touched (token rotate): no token is signed
		// or checked, so the claims' values do not matter.
		*f.issuer, *f.audience = defaultIssuer, identity.DefaultAudience
		if algFromRecord {
			rec, err := auth.ReadRecord(*f.data)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				return fmt.Errorf("%w (or give --alg)", err)
			default:
				*f.alg = rec.Algorithm
			}
		}
		return nil
	}
	if !given["issuer"] || !given["audience"] {
		rec, err := auth.ReadRecord(*f.data)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rec = auth.Record{Issuer: defaultIssuer, Audience: identity.DefaultAudience}
		case err != nil:
			return fmt.Errorf("%w (or give --issuer and --audience)", err)
		}
		if !given["issuer"] {
			*f.issuer = rec.Issuer
		}
		if !given["audience"] {
			*f.audience = rec.Audience
		}
		if algFromRecord {
			*f.alg = rec.Algorithm
		}
	}
	return nil
}

func (f issuerFlags) open(e *env, maxTTL time.Duration) (*auth.Issuer, error) {
	if err := f.resolve(); err != nil {
		return nil, err
	}
	path := *f.keyFile
	if path == "" {
		path = filepath.Join(*f.data, auth.KeyFile)
	}
	return auth.Open(path, auth.Options{
		Issuer: *f.issuer, Audience: *f.audience, MaxTTL: maxTTL, Algorithm: *f.alg,
		Logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{
			// Only what the operator should know: a key was made.
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
					return slog.Attr{}
				}
				return a
			},
		})),
	})
}

func runTokenMint(ctx context.Context, args []string, e *env) int {
	const synopsis = "token mint [--data DIR] --tenant T --agent A [--user U] [--run R] [--conversation C] [--call ID] --scopes s1,s2 [--ttl D]"
	fs := newFlags("token mint", synopsis, e)
	iss := addIssuerFlags(fs, true)
	iss.addAlg()
	tenant := fs.String("tenant", "", "tenant `id` (tenant_id); required")
	agentID := fs.String("agent", "", "agent `id` (agent_id, and sub); required")
	agentName := fs.String("agent-name", "", "agent `name` (agent_name)")
	instance := fs.String("instance", "", "agent instance `id` (instance_id)")
	user := fs.String("user", "", "user `id` the agent acts for (user_id)")
	runID := fs.String("run", "", "run `id` (run_id)")
	conversation := fs.String("conversation", "", "conversation `id` (conversation_id)")
	call := fs.String("call", "", "tool call `id` a resume token is bound to (call_id)")
	scopes := fs.String("scopes", "", "comma-separated `scopes`, e.g. memory:read:*,memory:write:agent; required")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token, at most --max-ttl")
	maxTTL := fs.Duration("max-ttl", auth.DefaultMaxTTL, "longest lifetime signed; a rotated-out key stays published this long")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *tenant == "" || *agentID == "" || *scopes == "" {
		return usageError(fs, "--tenant, --agent and --scopes are required")
	}
	var list []string
	for s := range strings.SplitSeq(*scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			list = append(list, s)
		}
	}
	if *ttl <= 0 || *ttl > *maxTTL {
		return usageError(fs, "--ttl %s is not within (0, %s]", *ttl, *maxTTL)
	}
	issuer, err := iss.open(e, *maxTTL)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos token mint: %v\n", err)
		return exitFail
	}
	tok, err := issuer.Mint(ctx, identity.Claims{
		TenantID: *tenant, AgentID: *agentID, AgentName: *agentName, InstanceID: *instance,
		UserID: *user, RunID: *runID, ConversationID: *conversation, CallID: *call, Scopes: list,
	}, *ttl)
	if err != nil {
		if errors.Is(err, auth.ErrClaims) {
			return usageError(fs, "%v", err)
		}
		fmt.Fprintf(e.stderr, "novaos token mint: %v\n", err)
		return exitFail
	}
	fmt.Fprintln(e.stdout, tok)
	return exitOK
}

func runTokenVerify(ctx context.Context, args []string, e *env) int {
	fs := newFlags("token verify", "token verify [--data DIR | --jwks URL] [--issuer URL] [TOKEN | -]   (no TOKEN: $"+EnvToken+"; -: standard input)", e)
	iss := addIssuerFlags(fs, true)
	jwks := fs.String("jwks", "", "verify with the key set at this `URL` (e.g. http://127.0.0.1:8080/.well-known/jwks.json) instead of --data's keys")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 1 {
		return usageError(fs, "one token at most")
	}
	tok := e.getenv(EnvToken)
	switch {
	case fs.Arg(0) == "-":
		line, err := bufio.NewReader(io.LimitReader(os.Stdin, identity.DefaultMaxTokenBytes+2)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			fmt.Fprintf(e.stderr, "novaos token verify: read standard input: %v\n", err)
			return exitFail
		}
		tok = line
	case fs.NArg() == 1:
		tok = fs.Arg(0)
	}
	tok = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(tok), "Bearer "))
	if tok == "" {
		return usageError(fs, "no token: give one as the argument, - to read it from standard input, or set $%s", EnvToken)
	}
	var v *identity.Verifier
	var err error
	if *jwks != "" {
		if err := iss.resolve(); err != nil {
			fmt.Fprintf(e.stderr, "novaos token verify: %v\n", err)
			return exitFail
		}
		var keys *identity.JWKS
		// The URL is the operator's own: any destination but metadata.
		keys, err = identity.NewJWKS(*jwks, &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true, AllowPrivate: true}})
		if err == nil {
			v, err = identity.New(keys, identity.Options{Issuer: *iss.issuer, Audience: *iss.audience})
		}
	} else {
		var issuer *auth.Issuer
		if issuer, err = iss.open(e, 0); err == nil {
			v = issuer.Verifier()
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos token verify: %v\n", err)
		return exitFail
	}
	c, err := v.Verify(ctx, tok)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos token verify: %v\n", err)
		return exitFail
	}
	out, _ := json.MarshalIndent(c, "", "  ")
	fmt.Fprintf(e.stdout, "%s\n", out)
	return exitOK
}

func runTokenRotate(ctx context.Context, args []string, e *env) int {
	fs := newFlags("token rotate", "token rotate [--data DIR] [--alg RS256|EdDSA] [--max-ttl D]", e)
	iss := addIssuerFlags(fs, false)
	iss.addAlg()
	maxTTL := fs.Duration("max-ttl", auth.DefaultMaxTTL, "the server's --token-max-ttl: the old key stays published this long (plus leeway), until every token it signed has expired")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	issuer, err := iss.open(e, *maxTTL)
	if err == nil {
		var kid string
		if kid, err = issuer.Rotate(ctx); err == nil {
			fmt.Fprintln(e.stdout, kid)
			return exitOK
		}
	}
	fmt.Fprintf(e.stderr, "novaos token rotate: %v\n", err)
	return exitFail
}
