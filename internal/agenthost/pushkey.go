package agenthost

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"

	"novaos.dev/novaos/internal/sealkey"
	"novaos.dev/novaos/netguard"
)

// PushKeyFile is the default name of the push-credential key inside the
// data directory.
const PushKeyFile = "push.key"

// Push-config secrets (the webhook's Authentication.Credentials and the
// client's Token) are sealed before they reach the store (sealkey), under
// the purpose pushPurpose and a binding to their tenant, task, config id,
// URL and field, so a value copied to another row, or a row whose URL is
// rewritten, does not open.
const (
	sealedPrefix = sealkey.Prefix
	pushPurpose  = "novaos push-config v1"
)

// errPushKey is wrapped by every failure to seal or open a push secret.
var errPushKey = errors.New("agenthost: push credentials")

// pushSealer seals and opens push-config secrets with the key in path
// (a sealkey.Sealer, opened on first use), keeping what is push's own:
// an empty secret stays empty, and a value stored before push secrets
// were sealed is read as it is.
type pushSealer struct {
	path   string
	log    *slog.Logger
	shared bool // the database is shared by replicas (PostgreSQL)

	mu       sync.Mutex
	sealer   *sealkey.Sealer
	kid      string // the key's id, once a value was sealed
	warnOnce sync.Once
}

// newPushSealer returns a sealer for the key in path, loading it now if it
// exists so a broken key file stops the server at start.
func newPushSealer(path string, shared bool, log *slog.Logger) (*pushSealer, error) {
	s := &pushSealer{path: path, shared: shared, log: log}
	if _, err := s.keySealer(); err != nil {
		return nil, err
	}
	return s, nil
}

// keySealer returns the sealkey.Sealer, opening it the first time. A
// failed open is tried again on the next call: the operator may fix the
// key file while the server runs.
func (s *pushSealer) keySealer() (*sealkey.Sealer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealer == nil {
		ks, err := sealkey.Open(s.path, &sealkey.Options{Logger: s.log, Shared: s.shared, Name: "push credential key", Flag: "--push-key-file"})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errPushKey, err)
		}
		s.sealer = ks
	}
	return s.sealer, nil
}

// pushAAD is the binding a secret is sealed under.
func pushAAD(tenant, taskID, id, url, field string) []string {
	return []string{tenant, taskID, id, url, field}
}

// seal returns plain sealed under binding; "" stays "".
func (s *pushSealer) seal(plain string, binding []string) (string, error) {
	if plain == "" {
		return "", nil
	}
	ks, err := s.keySealer()
	if err != nil {
		return "", err
	}
	v, err := ks.Seal([]byte(plain), pushPurpose, binding...)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errPushKey, err)
	}
	s.mu.Lock()
	s.kid = ks.KeyID()
	s.mu.Unlock()
	return v, nil
}

// open returns the secret stored as v. A value without the sealed prefix
// was written before push secrets were sealed and is returned as it is
// (it is sealed on its next write); a sealed value that does not open
// under this key and binding is an error: it fails closed.
func (s *pushSealer) open(v string, binding []string) (string, error) {
	if !sealkey.IsSealed(v) {
		if v != "" {
			s.warnOnce.Do(func() {
				s.log.Warn("agenthost: a push config stored before push secrets were sealed is read as plaintext; it is sealed when it is next written")
			})
		}
		return v, nil
	}
	ks, err := s.keySealer()
	if err != nil {
		return "", err
	}
	plain, err := ks.Unseal(v, pushPurpose, binding...)
	if errors.Is(err, sealkey.ErrNotOpened) {
		return "", fmt.Errorf("%w: a sealed value does not open for this config (moved, altered, or another key)", errPushKey)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %w", errPushKey, err)
	}
	return string(plain), nil
}

// pushSealer is the sealer for the hosted agents' push configs: under
// Options.PushKeyFile when one is named, else the server's Deps.Sealer,
// else the data directory's PushKeyFile; nil when secrets are left to the
// push-config store (stores given without a data directory or a key).
func (h *Host) pushSealer() (*pushSealer, error) {
	if h.stores.PushConfigs == nil {
		return nil, nil
	}
	if h.opts.PushKeyFile == "" && h.deps.Sealer != nil {
		return &pushSealer{path: h.deps.Sealer.Path(), shared: h.stores.Shared, log: h.log, sealer: h.deps.Sealer}, nil
	}
	path := h.opts.PushKeyFile
	if path == "" {
		if h.deps.DataDir == "" {
			return nil, nil
		}
		path = filepath.Join(h.deps.DataDir, PushKeyFile)
	}
	return newPushSealer(path, h.stores.Shared, h.log)
}

// pushURLPolicy is Options.PushURLPolicy, or by default public hosts; both
// also allow loopback when the server itself is on loopback, the default
// unless a PushURLPolicy is given without PushLoopbackIfLocal.
func (h *Host) pushURLPolicy() *netguard.Policy {
	p := &netguard.Policy{}
	if h.opts.PushURLPolicy != nil {
		*p = *h.opts.PushURLPolicy
		if !h.opts.PushLoopbackIfLocal {
			return p
		}
	}
	p.AllowLoopback = p.AllowLoopback || OnLoopback(h.deps.BaseURL)
	return p
}

// OnLoopback reports whether a server whose base URL is baseURL is reached
// on loopback: a developer's machine, where local webhook receivers and
// agents are the norm.
func OnLoopback(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	c, err := netguard.ClassifyHost(u.Hostname())
	return err == nil && c == netguard.Loopback
}
