package app

import (
	"cmp"
	"fmt"
	"path/filepath"

	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/internal/sealkey"
)

// DeliveryOptions configure pull delivery under /api/v1/delivery
// (Options.Delivery).
type DeliveryOptions = deliverysvc.Options

func (o *Options) delivery() *deliverysvc.Options {
	d := o.Delivery
	d.Logger = cmp.Or(d.Logger, o.Logger.With("service", "delivery"))
	return &d
}

// mountDelivery builds pull delivery over the stores, when they keep
// its records and the execution gateway's runs: its invocation tokens
// are signed with an Ed25519 ring of their own (Options.DeliveryKeyFile,
// else deliverysvc.KeyFile in the data directory; in memory without
// one), its DPoP nonces with a key derived from the sealing key (so that
// replicas sharing it take each other's), and tenant admins issue
// agents' API tokens with the platform's own tokens.
func (s *Server) mountDelivery(base, dataDir string, issuer *auth.Issuer, sealer *sealkey.Sealer) (*deliverysvc.Service, error) {
	st := s.stores
	if st.Delivery == nil || st.Gateway == nil {
		return nil, nil
	}
	path := s.opts.DeliveryKeyFile
	if path == "" && dataDir != "" {
		path = filepath.Join(dataDir, deliverysvc.KeyFile)
	}
	opts := s.opts.delivery()
	if sealer != nil && opts.NonceKey == nil {
		// Replicas sharing the sealing key take each other's DPoP nonces.
		key, err := sealer.DeriveKey("novaos delivery dpop-nonce v1")
		if err != nil {
			return nil, fmt.Errorf("app: DPoP nonce key: %w", err)
		}
		opts.NonceKey = key
	}
	ring, err := auth.Open(path, auth.Options{Issuer: base, Algorithm: auth.EdDSA, JWKSMaxAge: opts.JWKSMaxAge, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("app: invocation-token keys: %w", err)
	}
	return deliverysvc.Mount(st, deliverysvc.Deps{Keys: ring, Tokens: issuer.Authenticator(), AdminToken: s.opts.AdminToken,
		BaseURL: base, Tracing: s.tracing(), Metrics: s.metrics()}, opts)
}
