package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/problem"
)

// Statuses an agent record may carry. Any other short lower-case token is
// accepted too (see ValidStatus); only StatusActive counts as available.
const (
	StatusActive      = "active"
	StatusInactive    = "inactive"
	StatusMaintenance = "maintenance"
)

// Size limits a record must respect. The registry refuses a record over
// any of them, and so does the Client before sending one.
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 4096
	MaxURLLen           = 2048
	MaxListItems        = 64 // capabilities, tags and domains each
	MaxCapabilityLen    = 128
	MaxTagLen           = 64
	MaxDomainLen        = 253
	MaxMetadataBytes    = 16 << 10 // the metadata object, JSON-encoded
	MaxStatusLen        = 32
	MaxRecipientKeys    = 8    // public JWKs in RecipientKeys
	MaxRecipientKeyLen  = 1024 // bytes of one JWK
	DefaultThreshold    = 0.8  // fuzzy capability matching
	containmentMinScore = 0.6
)

// Agent is one registry record: where an agent is called and what it
// offers. It is the AgentDNSRecord of the reference SDK.
type Agent struct {
	// ID is assigned by the registry at registration and never changes.
	ID string `json:"id,omitempty"`
	// Name is unique in the registry: 1 to 64 characters, lower-case
	// letters, digits, '-', '_' and '.', starting with a letter or digit.
	Name string `json:"name"`
	// URL is the agent's A2A endpoint: an absolute http or https URL.
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	// Capabilities are matched by FindByCapability (normalized, optionally
	// fuzzy); Metadata may add more under "capabilities".
	Capabilities []string `json:"capabilities,omitempty"`
	Domains      []string `json:"domains,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	// Status is StatusActive unless set; only an active agent is
	// available.
	Status string `json:"status,omitempty"`
	// Metadata is free-form JSON (at most 16 KiB encoded). The reference
	// SDK reads "capabilities" (names or {name, description, metadata}
	// objects), "domains" and "tags" from it; so do the methods below.
	Metadata map[string]any `json:"metadata,omitempty"`
	// RecipientKeys are the agent's public X25519 recipient keys for
	// sealed secrets (ext/usercontext), each a public JWK with kty "OKP",
	// crv "X25519", x and a kid equal to its RFC 7638 thumbprint; never a
	// private member ("d"). At most MaxRecipientKeys, with distinct kids.
	// The registry is where a caller finds the key to seal to (see
	// Agent.Recipient); the private halves stay in the agent's key
	// directory. A key from usercontext: key.PublicJWK().
	RecipientKeys []json.RawMessage `json:"recipientKeys,omitempty"`
	CreatedAt     time.Time         `json:"createdAt,omitzero"`
	UpdatedAt     time.Time         `json:"updatedAt,omitzero"`
}

// Capability is a capability described in an agent's metadata.
type Capability struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Available reports whether the agent's status is active.
func (a *Agent) Available() bool { return a.Status == "" || a.Status == StatusActive }

// Clone returns a deep copy of a.
func (a *Agent) Clone() *Agent {
	c := *a
	c.Capabilities = slices.Clone(a.Capabilities)
	c.Domains = slices.Clone(a.Domains)
	c.Tags = slices.Clone(a.Tags)
	if a.RecipientKeys != nil {
		c.RecipientKeys = make([]json.RawMessage, len(a.RecipientKeys))
		for i, k := range a.RecipientKeys {
			c.RecipientKeys[i] = slices.Clone(k)
		}
	}
	if a.Metadata != nil {
		// Metadata is plain JSON; a round trip is the simplest deep copy.
		b, err := json.Marshal(a.Metadata)
		if err == nil {
			var m map[string]any
			if json.Unmarshal(b, &m) == nil {
				c.Metadata = m
			}
		}
	}
	return &c
}

// MetadataCapabilities parses metadata["capabilities"]: each entry is a
// name or an object with a name. Entries of any other shape are skipped.
func (a *Agent) MetadataCapabilities() []Capability {
	list, _ := a.Metadata["capabilities"].([]any)
	var out []Capability
	for _, e := range list {
		switch v := e.(type) {
		case string:
			if v != "" {
				out = append(out, Capability{Name: v})
			}
		case map[string]any:
			name, _ := v["name"].(string)
			if name == "" {
				continue
			}
			c := Capability{Name: name}
			c.Description, _ = v["description"].(string)
			c.Metadata, _ = v["metadata"].(map[string]any)
			out = append(out, c)
		}
	}
	return out
}

// AllCapabilities is the Capabilities field followed by the names from
// metadata, without duplicates (compared after NormalizeCapability).
func (a *Agent) AllCapabilities() []string {
	names := slices.Clone(a.Capabilities)
	for _, c := range a.MetadataCapabilities() {
		names = append(names, c.Name)
	}
	return dedupe(names, NormalizeCapability)
}

// AllDomains merges the Domains field with metadata["domains"].
func (a *Agent) AllDomains() []string { return mergeStrings(a.Domains, a.Metadata["domains"]) }

// AllTags merges the Tags field with metadata["tags"].
func (a *Agent) AllTags() []string { return mergeStrings(a.Tags, a.Metadata["tags"]) }

func mergeStrings(field []string, meta any) []string {
	out := slices.Clone(field)
	list, _ := meta.([]any)
	for _, e := range list {
		if s, ok := e.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return dedupe(out, func(s string) string { return s })
}

func dedupe(in []string, key func(string) string) []string {
	if len(in) < 2 {
		return in
	}
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		k := key(s)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, s)
	}
	return out
}

// HasCapability reports whether the agent offers capability: an equal
// name after NormalizeCapability, or with fuzzy a name whose Similarity
// reaches DefaultThreshold.
func (a *Agent) HasCapability(capability string, fuzzy bool) bool {
	if !fuzzy {
		n := NormalizeCapability(capability)
		return slices.ContainsFunc(a.AllCapabilities(), func(c string) bool { return NormalizeCapability(c) == n })
	}
	_, _, ok := MatchCapability(capability, a.AllCapabilities(), DefaultThreshold)
	return ok
}

// Errors. Every error the registry and the Client return for these cases
// wraps one of them.
var (
	// ErrNotFound: no agent has that id or name.
	ErrNotFound = errors.New("registry: agent not found")
	// ErrExists: another agent already has that name (or id).
	ErrExists = errors.New("registry: agent already exists")
	// ErrInvalid: the record breaks a rule of Validate. A *ValidationError
	// carries the details.
	ErrInvalid = errors.New("registry: invalid agent")
	// ErrURLNotAllowed: the URL is well formed but a Policy refuses its
	// host. It also wraps ErrInvalid.
	ErrURLNotAllowed = errors.New("registry: agent URL not allowed")
	// ErrBadPageToken: a page token this registry did not issue.
	ErrBadPageToken = errors.New("registry: invalid page token")
	// ErrReadOnly: the record belongs to the platform (an agent the
	// server hosts) and cannot be changed or deleted through the API.
	ErrReadOnly = errors.New("registry: agent is read-only")
	// ErrUnauthorized: the server needs its admin token for writes and
	// the request did not present it (or presented another one).
	ErrUnauthorized = errors.New("registry: admin token required")
	// ErrForbidden: the server has no admin token and accepts writes from
	// its own machine only.
	ErrForbidden = errors.New("registry: write forbidden")
)

// FieldError is one broken rule.
type FieldError = problem.FieldError

// ValidationError lists every rule a record breaks. It wraps ErrInvalid,
// and also ErrURLNotAllowed when a Policy refused the URL.
type ValidationError struct {
	Fields     []FieldError
	urlRefused bool
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "registry: invalid agent: " + strings.Join(parts, "; ")
}

// Unwrap returns ErrInvalid, and ErrURLNotAllowed when the URL's host was
// refused.
func (e *ValidationError) Unwrap() []error {
	if e.urlRefused {
		return []error{ErrInvalid, ErrURLNotAllowed}
	}
	return []error{ErrInvalid}
}

func (e *ValidationError) add(field, format string, args ...any) {
	e.Fields = append(e.Fields, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	statusRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// ReservedNames cannot be registered: they are paths of the HTTP API.
var ReservedNames = []string{"search", "find"}

// ValidName reports whether name may name an agent: 1 to 64 characters,
// lower-case letters, digits, '-', '_' and '.', starting with a letter or
// digit; not a UUID (the API tells ids and names apart by shape) and not
// one of ReservedNames.
func ValidName(name string) bool {
	return len(name) <= MaxNameLen && nameRE.MatchString(name) && !uuidRE.MatchString(name) &&
		!slices.Contains(ReservedNames, name)
}

// IsID reports whether ref has the shape of a registry-assigned id.
func IsID(ref string) bool { return uuidRE.MatchString(ref) }

// ValidStatus reports whether s may be an agent's status: empty (meaning
// active) or a lower-case token of at most 32 characters.
func ValidStatus(s string) bool {
	return s == "" || (len(s) <= MaxStatusLen && statusRE.MatchString(s))
}

// Validate checks a record against the rules on its fields and the size
// limits, and its URL against policy (nil: no host restriction, but
// loopback and private addresses refused). Recipient keys must be public
// X25519 JWKs whose kid is their RFC 7638 thumbprint; a private key is
// refused without repeating it. It returns a *ValidationError or nil. The ID and timestamps are not checked: the registry sets them.
func Validate(a *Agent, policy *Policy) error {
	var v ValidationError
	switch {
	case a.Name == "":
		v.add("name", "is required")
	case !ValidName(a.Name):
		v.add("name", "must be 1-%d characters of a-z, 0-9, '-', '_', '.', start with a letter or digit, and not be a UUID or one of %v", MaxNameLen, ReservedNames)
	}
	if a.URL == "" {
		v.add("url", "is required")
	} else if err := policy.Check(a.URL); err != nil {
		v.add("url", "%s", strings.TrimPrefix(err.Error(), "registry: "))
		v.urlRefused = errors.Is(err, ErrURLNotAllowed)
	}
	if len(a.Description) > MaxDescriptionLen {
		v.add("description", "is longer than %d bytes", MaxDescriptionLen)
	}
	if !utf8.ValidString(a.Description) {
		v.add("description", "is not valid UTF-8")
	}
	checkList(&v, "capabilities", a.Capabilities, MaxCapabilityLen, func(s string) bool { return NormalizeCapability(s) != "" })
	checkList(&v, "tags", a.Tags, MaxTagLen, nil)
	checkList(&v, "domains", a.Domains, MaxDomainLen, nil)
	if !ValidStatus(a.Status) {
		v.add("status", "must be a lower-case token of at most %d characters (active, inactive, maintenance, …)", MaxStatusLen)
	}
	if a.Metadata != nil {
		b, err := json.Marshal(a.Metadata)
		if err != nil {
			v.add("metadata", "is not JSON-encodable")
		} else if len(b) > MaxMetadataBytes {
			v.add("metadata", "is larger than %d bytes encoded", MaxMetadataBytes)
		}
	}
	checkRecipientKeys(&v, a.RecipientKeys)
	if len(v.Fields) > 0 {
		return &v
	}
	return nil
}

func checkList(v *ValidationError, field string, list []string, maxLen int, ok func(string) bool) {
	if len(list) > MaxListItems {
		v.add(field, "has more than %d entries", MaxListItems)
		return
	}
	for i, s := range list {
		name := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case strings.TrimSpace(s) == "":
			v.add(name, "is empty")
		case len(s) > maxLen:
			v.add(name, "is longer than %d bytes", maxLen)
		case !utf8.ValidString(s):
			v.add(name, "is not valid UTF-8")
		case ok != nil && !ok(s):
			v.add(name, "has no letter or digit")
		}
	}
}
