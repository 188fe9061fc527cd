package usercontext

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"novaos.dev/novaos/a2a"
)

// URI identifies the user-context/v1 extension. A caller activates it
// with the A2A-Extensions header and puts a Payload at metadata[URI] of
// the SendMessage request (or, for a hand-built message, of the message).
const URI = "novaos.platform/extensions/user-context/v1"

// Declaration returns the extension as an agent card declares it: its
// params publish the suite, the one thing a sealing caller must agree on.
// Key ids are not published; the sealing side gets them from the control
// plane. required makes a caller that does not activate it fail with
// ExtensionSupportRequired (-32008).
func Declaration(required bool) a2a.AgentExtension {
	return a2a.AgentExtension{
		URI:         URI,
		Description: "Per-run secrets, each sealed to this agent's recipient key (sealed envelope v1).",
		Required:    required,
		Params:      map[string]any{"suite": Suite, "version": Version},
	}
}

// Payload is the value at metadata[URI]: the sealed secrets of one run by
// name. Names travel in the clear by design; values never do. The wrapper
// object leaves room for sibling members in v1, which openers ignore.
type Payload struct {
	Secrets map[string]Envelope `json:"secrets"`
}

// Run identifies the run secrets are delivered to. With a secret's name
// it makes the Delivery an envelope is bound to.
type Run struct {
	TenantID   string
	InstanceID string
	RunID      string
}

// Delivery returns the delivery of the secret name within the run.
func (r Run) Delivery(name string) Delivery {
	return Delivery{TenantID: r.TenantID, InstanceID: r.InstanceID, RunID: r.RunID, SecretName: name}
}

// SealPayload seals each value for the recipient, bound to the run and
// to the name it is filed under, each with its own ephemeral key.
func SealPayload(to Recipient, run Run, values map[string]Secret) (*Payload, error) {
	p := &Payload{Secrets: make(map[string]Envelope, len(values))}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		env, err := Seal(to, run.Delivery(name), values[name].Reveal())
		if err != nil {
			return nil, fmt.Errorf("usercontext: seal %q: %w", name, err)
		}
		p.Secrets[name] = env
	}
	return p, nil
}

// Sealed is the payload of one request, opened one secret at a time: it
// holds envelopes and never plaintext, and caches nothing it opened. It
// is safe to log; it renders as its names.
type Sealed struct {
	entries map[string]any // Envelope or a decoded JSON value
}

// ParsePayload reads the value found at metadata[URI]. nil (activated,
// nothing sent) and a payload without "secrets" mean no secrets. A value
// that is not an object, or whose "secrets" is not an object, fails with
// ErrFormat: refusing it says what is wrong where silence would later
// look like a secret that was never delivered. Each envelope is checked
// only when it is opened, so one bad envelope spoils only itself.
func ParsePayload(v any) (*Sealed, error) {
	s := &Sealed{entries: map[string]any{}}
	switch x := v.(type) {
	case nil:
		return s, nil
	case Payload:
		for name, env := range x.Secrets {
			s.entries[name] = env
		}
		return s, nil
	case *Payload:
		if x != nil {
			for name, env := range x.Secrets {
				s.entries[name] = env
			}
		}
		return s, nil
	case json.RawMessage:
		return parsePayloadJSON(x)
	case []byte:
		return parsePayloadJSON(x)
	case map[string]any:
		switch secrets := x["secrets"].(type) {
		case nil:
		case map[string]any:
			maps.Copy(s.entries, secrets)
		default:
			return nil, fmt.Errorf("%w: %s payload: secrets is not an object", ErrFormat, URI)
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: %s payload is not an object", ErrFormat, URI)
}

func parsePayloadJSON(b []byte) (*Sealed, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%w: %s payload is not JSON", ErrFormat, URI)
	}
	if _, ok := v.(map[string]any); !ok && v != nil {
		return nil, fmt.Errorf("%w: %s payload is not an object", ErrFormat, URI)
	}
	return ParsePayload(v)
}

// Names returns every delivered secret name, sorted. Safe to log, and
// worth logging when a secret is missing: it tells "no such secret" from
// "delivery is not working".
func (s *Sealed) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(s.entries))
}

// String renders the names only, at most 20 of them, each cut short: they
// come off the wire.
func (s *Sealed) String() string { return "usercontext.Sealed[" + boundedNames(s.Names()) + "]" }

// boundedNames joins names for a message, bounded in count and length.
func boundedNames(names []string) string {
	const maxNames, maxLen = 20, 64
	out := make([]string, 0, min(len(names), maxNames)+1)
	for i, n := range names {
		if i == maxNames {
			out = append(out, fmt.Sprintf("… %d more", len(names)-maxNames))
			break
		}
		if len(n) > maxLen {
			n = n[:maxLen] + "…"
		}
		out = append(out, fmt.Sprintf("%q", n))
	}
	return strings.Join(out, " ")
}

// Open opens the secret delivered under name with ring, bound to run and
// name. The name is both the lookup key and part of the binding, so an
// envelope moved to another name does not open. It fails with
// ErrNotDelivered when nothing arrived under name, and otherwise as
// KeyRing.Open does.
func (s *Sealed) Open(ring *KeyRing, run Run, name string) (Secret, error) {
	var env any
	var ok bool
	if s != nil {
		env, ok = s.entries[name]
	}
	if !ok {
		return Secret{}, fmt.Errorf("%w: %q (delivered: %s)", ErrNotDelivered, name, boundedNames(s.Names()))
	}
	sec, err := ring.Open(env, run.Delivery(name))
	if err != nil {
		return Secret{}, fmt.Errorf("usercontext: open %q: %w", name, err)
	}
	return sec, nil
}
