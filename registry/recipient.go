package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"novaos.dev/novaos/ext/usercontext"
)

// ErrNoRecipientKey: the agent's record holds no recipient key (or none
// with the kid asked for), so nothing can be sealed to it from the
// registry.
var ErrNoRecipientKey = errors.New("registry: no recipient key")

// Recipient returns the recipient key to seal secrets to (see
// ext/usercontext): the one with this kid, or the first of RecipientKeys
// when kid is empty. The error wraps ErrNoRecipientKey when there is no
// such key, and usercontext.ErrKey when the stored JWK does not parse.
func (a *Agent) Recipient(kid string) (usercontext.Recipient, error) {
	if len(a.RecipientKeys) == 0 {
		return usercontext.Recipient{}, fmt.Errorf("%w: agent %s has none", ErrNoRecipientKey, a.Name)
	}
	for i, raw := range a.RecipientKeys {
		if kid != "" && recipientKID(raw) != kid {
			continue
		}
		to, err := usercontext.ParsePublicJWK(raw)
		if err != nil {
			return usercontext.Recipient{}, fmt.Errorf("registry: agent %s: recipientKeys[%d]: %w", a.Name, i, err)
		}
		return to, nil
	}
	return usercontext.Recipient{}, fmt.Errorf("%w: agent %s has none with kid %q (it has %s)",
		ErrNoRecipientKey, a.Name, kid, strings.Join(a.RecipientKIDs(), ", "))
}

// RecipientKIDs returns the kid of each of RecipientKeys, in order ("" for
// a key without one).
func (a *Agent) RecipientKIDs() []string {
	kids := make([]string, len(a.RecipientKeys))
	for i, raw := range a.RecipientKeys {
		kids[i] = recipientKID(raw)
	}
	return kids
}

// recipientKID reads the kid member of a JWK, "" when there is none.
func recipientKID(raw json.RawMessage) string {
	var m struct {
		KID json.RawMessage `json:"kid"`
	}
	var kid string
	if json.Unmarshal(raw, &m) == nil && json.Unmarshal(m.KID, &kid) == nil {
		return kid
	}
	return ""
}

// checkRecipientKeys applies the rules of Agent.RecipientKeys. Its
// messages name members, never their values: a key registered by mistake
// with its private half must not be repeated in an error, a log or a
// problem response.
func checkRecipientKeys(v *ValidationError, keys []json.RawMessage) {
	if len(keys) > MaxRecipientKeys {
		v.add("recipientKeys", "has more than %d keys", MaxRecipientKeys)
		return
	}
	seen := make(map[string]int, len(keys))
	for i, raw := range keys {
		field := fmt.Sprintf("recipientKeys[%d]", i)
		if len(raw) > MaxRecipientKeyLen {
			v.add(field, "is larger than %d bytes", MaxRecipientKeyLen)
			continue
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil || members == nil {
			v.add(field, "is not a JSON object")
			continue
		}
		if hasPrivateMember(members) {
			v.add(field, `holds a private key (member "d"): register the public JWK only (novaos keys public prints it)`)
			continue
		}
		to, err := usercontext.ParsePublicJWK(raw)
		if err != nil {
			v.add(field, "%s", strings.TrimPrefix(err.Error(), "usercontext: "))
			continue
		}
		thumb := usercontext.Thumbprint(to.Public)
		if _, ok := members["kid"]; !ok {
			v.add(field, "has no kid: it must be the key's RFC 7638 thumbprint, %s", thumb)
			continue
		}
		if to.KID != thumb {
			v.add(field, "kid must be the key's RFC 7638 thumbprint, %s", thumb)
			continue
		}
		if j, dup := seen[to.KID]; dup {
			v.add(field, "has the kid of recipientKeys[%d]", j)
			continue
		}
		seen[to.KID] = i
	}
}

// hasPrivateMember reports whether a JWK holds "d", the private member of
// an OKP key (in any letter case, though JWK member names are
// case-sensitive: such a member is refused rather than guessed about).
func hasPrivateMember(members map[string]json.RawMessage) bool {
	for name := range members {
		if strings.EqualFold(name, "d") {
			return true
		}
	}
	return false
}
