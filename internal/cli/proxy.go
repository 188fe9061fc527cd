package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/execgw/authproxy"
	"novaos.dev/novaos/internal/tlscert"
	"novaos.dev/novaos/netguard"
)

// Defaults of the proxy command's flags.
const (
	defaultProxyListen     = "127.0.0.1:8090"
	defaultProxyHeaderSize = 64 << 10
)

func runProxy(ctx context.Context, args []string, e *env) int {
	const synopsis = "proxy --upstream URL --issuer URL [--listen ADDR] [--jwks URL] [--audience AUD] [flags]\n\n" +
		"The auth-proxy sidecar of an agent in any language: every request but GET /healthz must carry\n" +
		"Authorization: Bearer <execution token>; the proxy verifies it with the platform's JWKS, removes the\n" +
		"caller's X-NovaOS-* headers, sets X-NovaOS-User-Id, -Tenant-Id, -Run-Id, -Agent-Id, -Instance-Id\n" +
		"(and -Agent-Name, -Conversation-Id) from the token's claims and X-NovaOS-Execution-Token to the token,\n" +
		"and forwards the request, Authorization unchanged, to --upstream. Responses stream through unbuffered."
	fs := newFlags("proxy", synopsis, e)
	listen := fs.String("listen", defaultProxyListen, "`address` to listen on; one that is not loopback needs --tls-cert and --tls-key, or --insecure-listen")
	upstream := fs.String("upstream", "", "the agent's base `URL` (http or https), e.g. http://127.0.0.1:9000; required")
	issuer := fs.String("issuer", "", "the `URL` tokens must be issued by (iss): the server's --token-issuer, by default its public base URL; required")
	jwks := fs.String("jwks", "", "`URL` of the key set to verify tokens with (default <--issuer>"+identity.JWKSPath+")")
	audience := fs.String("audience", identity.DefaultAudience, "the `audience` tokens must name (aud): the server's --token-audience")
	algs := fs.String("algorithms", identity.RS256+","+identity.EdDSA, "comma-separated signature `algorithms` accepted, of RS256, EdDSA and ES256")
	leeway := fs.Duration("leeway", identity.DefaultLeeway, "clock skew tolerated on exp, nbf and iat")
	maxBody := fs.Int64("max-body-bytes", authproxy.DefaultMaxBodyBytes, "largest request body forwarded, in `bytes` (413 beyond); -1 for no limit")
	maxHeader := fs.Int("max-header-bytes", defaultProxyHeaderSize, "largest request line and headers read, in `bytes` (431 beyond)")
	readHeader := fs.Duration("read-header-timeout", 10*time.Second, "time a client has to send the request headers")
	idle := fs.Duration("idle-timeout", 2*time.Minute, "time a keep-alive connection may wait for its next request")
	grace := fs.Duration("grace", 10*time.Second, "on SIGINT or SIGTERM, how long open requests (event streams too) may take to end")
	tlsCert := fs.String("tls-cert", "", "PEM `file` of the certificate chain to serve over TLS 1.2+; with --tls-key. Read again when it changes")
	tlsKey := fs.String("tls-key", "", "PEM `file` of the private key of --tls-cert")
	insecureListen := fs.Bool("insecure-listen", false, "serve plaintext on an address that is not loopback (inside a pod, behind a mesh that encrypts)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *upstream == "" || *issuer == "" {
		return usageError(fs, "--upstream and --issuer are required")
	}
	if u, err := url.Parse(*issuer); err != nil || u.Scheme == "" || u.Host == "" {
		return usageError(fs, "--issuer must be an absolute URL")
	}
	var allowed []string
	for a := range strings.SplitSeq(*algs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			allowed = append(allowed, a)
		}
	}
	if len(allowed) == 0 {
		return usageError(fs, "--algorithms names none")
	}
	if *maxBody == 0 || *maxBody < -1 {
		return usageError(fs, "--max-body-bytes must be positive, or -1 for no limit")
	}
	if *maxHeader <= 0 {
		return usageError(fs, "--max-header-bytes must be positive")
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageError(fs, "--tls-cert and --tls-key go together: give both, or neither")
	}
	if *jwks == "" {
		*jwks = identity.JWKSURL(*issuer)
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))

	// The key set's URL is the operator's own: loopback and private
	// addresses are where a gateway beside the agent is.
	keys, err := identity.NewJWKS(*jwks, &identity.JWKSOptions{Policy: &netguard.Policy{AllowLoopback: true, AllowPrivate: true}})
	if err != nil {
		return usageError(fs, "--jwks: %v", err)
	}
	v, err := identity.New(keys, identity.Options{Issuer: *issuer, Audience: *audience, Algorithms: allowed, Leeway: *leeway})
	if err != nil {
		return usageError(fs, "%v", err)
	}
	p, err := authproxy.New(*upstream, v, &authproxy.Options{MaxBodyBytes: *maxBody, Logger: logger})
	if err != nil {
		return usageError(fs, "--upstream: %v", err)
	}
	var tlsConfig *tls.Config
	if *tlsCert != "" {
		pair, err := tlscert.Load(*tlsCert, *tlsKey, &tlscert.Options{Logger: logger})
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos proxy: %v\n", err)
			return exitFail
		}
		go pair.Run(ctx)
		tlsConfig = pair.Config()
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos proxy: %v\n", err)
		return exitFail
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); tlsConfig == nil && !*insecureListen && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return usageError(fs, "refusing to serve tokens in plaintext on %s, which is not loopback: give --tls-cert and --tls-key, or --insecure-listen", ln.Addr())
	}
	scheme := "http"
	if tlsConfig != nil {
		ln, scheme = tls.NewListener(ln, tlsConfig), "https"
	}
	srv := &http.Server{
		Handler:           p,
		MaxHeaderBytes:    *maxHeader,
		ReadHeaderTimeout: *readHeader,
		IdleTimeout:       *idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	// The upstream is printed without any credentials (New refuses them).
	fmt.Fprintf(e.stdout, "novaos proxy: serving %s://%s, forwarding verified requests to %s\n", scheme, ln.Addr(), *upstream)
	fmt.Fprintf(e.stdout, "  tokens of %s for %s, keys at %s\n  health %s://%s%s\n", *issuer, *audience, *jwks, scheme, ln.Addr(), authproxy.HealthPath)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), *grace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
			if !errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(e.stderr, "novaos proxy: %v\n", err)
				return exitFail
			}
		}
		return exitOK
	case err := <-served:
		fmt.Fprintf(e.stderr, "novaos proxy: %v\n", err)
		return exitFail
	}
}
