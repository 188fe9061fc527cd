package agent

import (
	"errors"
	"fmt"

	"novaos.dev/novaos/ext/usercontext"
)

// GetSecret opens the secret the platform delivered with this request
// under name (user-context/v1, see package ext/usercontext). The envelope
// is opened with Options.KeyRing and must be bound to this delivery: the
// tenant (Tenant: the server-verified scope's, else the platform
// context's), the platform context's instance_id and run_id, and name.
// Nothing is cached; each call opens the envelope again, so keep the
// value rather than asking twice.
//
// The value is a usercontext.Secret: it renders as "[REDACTED]" in logs,
// errors, fmt and JSON, and Reveal returns the plaintext.
//
// Errors: usercontext.ErrNotDelivered when nothing arrived under name or
// the request did not activate the extension (an agent-to-agent call, a
// hand-written request); otherwise every failure matches
// usercontext.ErrOpen (refined by ErrKeyUnavailable and ErrFormat).
// A failure to open is never a reason to fall back to a default: that
// would run the skill with the wrong credential. Failures are logged with
// the secret's name and the delivered names, never a value.
func (c *Context) GetSecret(name string) (usercontext.Secret, error) {
	sealed, err := c.sealedSecrets()
	if err != nil {
		return usercontext.Secret{}, err
	}
	s, err := sealed.Open(c.agent.opts.KeyRing, c.secretRun(), name)
	if err != nil && !errors.Is(err, usercontext.ErrNotDelivered) {
		c.Logger().WarnContext(c, "agent: delivered secret did not open",
			"name", name, "delivered", sealed.String(), "error", err.Error())
	}
	return s, err
}

// SecretNames returns the names of every secret delivered with this
// request, sorted; nil when none were. Safe to log, and worth logging when
// GetSecret reports ErrNotDelivered: it tells "no such secret" from
// "delivery is not working".
func (c *Context) SecretNames() []string {
	sealed, err := c.sealedSecrets()
	if err != nil {
		return nil
	}
	return sealed.Names()
}

// sealedSecrets reads the user-context payload of an activated extension.
func (c *Context) sealedSecrets() (*usercontext.Sealed, error) {
	v, ok := c.Extensions().Value(usercontext.URI)
	if !ok {
		if !c.Extensions().IsActive(usercontext.URI) {
			return nil, fmt.Errorf("%w: extension %s not active for this request", usercontext.ErrNotDelivered, usercontext.URI)
		}
		v = nil // activated, nothing sent: no secrets
	}
	sealed, err := usercontext.ParsePayload(v)
	if err != nil {
		c.Logger().WarnContext(c, "agent: malformed user-context payload", "error", err.Error())
		return nil, err
	}
	return sealed, nil
}

// secretRun is the run secrets are bound to, from verified identifiers
// where there are any.
func (c *Context) secretRun() usercontext.Run {
	return usercontext.Run{TenantID: c.Tenant(), InstanceID: c.pc.InstanceID, RunID: c.pc.RunID}
}
