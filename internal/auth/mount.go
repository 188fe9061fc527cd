package auth

import (
	"context"
	"path/filepath"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/httpapi"
)

// JWKSPath is where the server publishes the public keys of its token
// signing key ring (execution and push tokens), and nothing else: a
// verifier of that set accepts whatever its keys sign.
const JWKSPath = "/.well-known/jwks.json"

// DefaultKeyFile is the key ring's file name inside the data directory.
const DefaultKeyFile = "token.key"

// Deps are what the token issuer takes from the server around it.
type Deps struct {
	// BaseURL is the server's base URL, the tokens' default iss.
	BaseURL string
	// DataDir holds the key ring (DefaultKeyFile) and the issuer's record
	// (WriteRecord); "" keeps the keys in memory, for as long as the
	// process runs, unless KeyFile names a file.
	DataDir string
}

// Mount opens the server's token issuer: its key ring in o.KeyFile, or by
// default in deps.DataDir, and its issuer the base URL unless o says
// otherwise. It records the issuer in the data directory, so `novaos
// token mint --data` mints what this server accepts; a server that cannot
// write the record still serves, and logs why.
func Mount(deps Deps, o *Options) (*Issuer, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Issuer == "" {
		opts.Issuer = deps.BaseURL
	}
	keyFile := opts.KeyFile
	if keyFile == "" && deps.DataDir != "" {
		keyFile = filepath.Join(deps.DataDir, DefaultKeyFile)
	}
	i, err := Open(keyFile, opts)
	if err != nil {
		return nil, err
	}
	i.base = deps.BaseURL
	if deps.DataDir != "" {
		if err := WriteRecord(deps.DataDir, i.Record()); err != nil {
			i.opts.Logger.Warn("auth: cannot record the token issuer in the data directory; token mint will need --issuer", "err", err)
		}
	}
	return i, nil
}

// Routes publish the token keys at JWKSPath and, with the server's base
// URL known (Mount), serve the OAuth authorization server MCP clients
// find from a resource's metadata: its metadata at
// AuthServerMetadataPath and its token endpoint at TokenPath.
func (i *Issuer) Routes() []httpapi.Route {
	r := []httpapi.Route{{Pattern: "GET " + JWKSPath, Handler: i.JWKSHandler()}}
	if i.base != "" {
		r = append(r, i.oauthRoutes(i.base)...)
	}
	return r
}

// Interceptors are none: services verify tokens where they need them.
func (i *Issuer) Interceptors() []a2asrv.Interceptor { return nil }

// Run has no background work: keys rotate when a Mint finds the active
// one past its lifetime.
func (i *Issuer) Run(context.Context) {}
