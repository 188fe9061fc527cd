package upstream

import (
	"encoding/json"
	"errors"
	"fmt"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// sealPurpose is what a registration's sealed values are, bound to its
// tenant and name: a value copied to another registration fails to open.
const sealPurpose = "novaos tool-server-credentials v1"

// sealedCredentials is the plaintext under UpstreamServer.SealedCredentials.
type sealedCredentials struct {
	Headers map[string]string `json:"headers,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

var errNoSealer = errors.New("upstream: this server keeps no key to seal credentials with")

// openCredentials opens a registration's sealed values (none: empty).
func (p *Provider) openCredentials(reg *tools.UpstreamServer) (sealedCredentials, error) {
	var c sealedCredentials
	if len(reg.SealedCredentials) == 0 {
		return c, nil
	}
	if p.deps.Sealer == nil {
		return c, errNoSealer
	}
	b, err := p.deps.Sealer.Unseal(string(reg.SealedCredentials), sealPurpose, reg.TenantID, reg.Name)
	if err != nil {
		return c, fmt.Errorf("upstream: open the credentials of %s: %w", reg.Name, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("upstream: the credentials of %s do not decode", reg.Name)
	}
	return c, nil
}

// sealCredentials seals c into reg (nothing to seal: none).
func (p *Provider) sealCredentials(reg *tools.UpstreamServer, c sealedCredentials) error {
	if len(c.Headers) == 0 && len(c.Env) == 0 {
		reg.SealedCredentials = nil
		return nil
	}
	if p.deps.Sealer == nil {
		return errNoSealer
	}
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	sealed, err := p.deps.Sealer.Seal(b, sealPurpose, reg.TenantID, reg.Name)
	if err != nil {
		return fmt.Errorf("upstream: seal the credentials of %s: %w", reg.Name, err)
	}
	reg.SealedCredentials = []byte(sealed)
	return nil
}

// credentials returns the values of the registration's headers and
// environment, opened once per registration version. Only the names the
// registration lists are kept.
func (u *upstream) credentials(reg *tools.UpstreamServer) (*credentials, error) {
	u.mu.Lock()
	c := u.creds
	u.mu.Unlock()
	if c != nil {
		return c, nil
	}
	open, err := u.p.openCredentials(reg)
	if err != nil {
		u.p.log.Error("upstream: credentials unusable", "tenant_id", reg.TenantID, "server", reg.Name, "err", err)
		return nil, toolgw.Failf(tools.ReasonUnavailable, "upstream %s's credentials cannot be opened on this server", reg.Name)
	}
	c = &credentials{Headers: map[string]secret.Value{}, Env: map[string]secret.Value{}}
	for _, n := range reg.Headers {
		if v, ok := open.Headers[n]; ok {
			c.Headers[n] = secret.New(v)
		}
	}
	for _, n := range reg.Env {
		if v, ok := open.Env[n]; ok {
			c.Env[n] = secret.New(v)
		}
	}
	u.mu.Lock()
	u.creds = c
	u.mu.Unlock()
	return c, nil
}
