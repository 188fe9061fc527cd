package a2a

import (
	"slices"
	"strings"
)

// Header names of the A2A service parameters.
const (
	HeaderVersion    = "A2A-Version"
	HeaderExtensions = "A2A-Extensions"
)

// CheckVersion applies A2A-Version negotiation: an absent or empty value
// means "0.3"; a patch number is ignored; a version not in supported is
// answered with VersionNotSupported. supported defaults to [ProtocolVersion].
func CheckVersion(value string, supported ...string) *Error {
	if len(supported) == 0 {
		supported = []string{ProtocolVersion}
	}
	v := majorMinor(strings.TrimSpace(value))
	if v == "" {
		v = "0.3"
	}
	for _, s := range supported {
		if majorMinor(s) == v {
			return nil
		}
	}
	e := NewError(CodeVersionNotSupported, "A2A version %q is not supported; supported: %s", truncate(v, 32), strings.Join(supported, ", "))
	e.Metadata = map[string]string{"requestedVersion": truncate(v, 32), "supportedVersions": strings.Join(supported, ",")}
	return e
}

func majorMinor(v string) string {
	if i := strings.IndexByte(v, '.'); i >= 0 {
		if j := strings.IndexByte(v[i+1:], '.'); j >= 0 {
			return v[:i+1+j]
		}
	}
	return v
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// ParseExtensions reads every A2A-Extensions header line (each may hold a
// comma-separated list) into a list of distinct URIs, in order, in time
// linear in the size of values. A server reading a peer's header should
// bound it with [ParseExtensionsLimit].
func ParseExtensions(values []string) []string {
	out, _ := ParseExtensionsLimit(values, 0, 0)
	return out
}

// ParseExtensionsLimit is [ParseExtensions] with bounds on what a peer may
// ask for: more than maxURIs distinct URIs, or a URI longer than
// maxURIBytes, is answered with an InvalidRequest error (-32600) naming the
// bound; 0 means no bound. It stops reading at the first entry past a
// bound. ExtensionSupportRequired (-32008) would be wrong here: it says
// the agent requires an extension the client did not ask for.
func ParseExtensionsLimit(values []string, maxURIs, maxURIBytes int) ([]string, *Error) {
	return parseExtensions(values, maxURIs, maxURIBytes, nil)
}

// extensionsCost counts what parseExtensions did, so that tests bound its
// cost without a clock: the URIs it read, and the comparisons of one URI
// with another (a map lookup counting one).
type extensionsCost struct{ read, compared int }

func parseExtensions(values []string, maxURIs, maxURIBytes int, cost *extensionsCost) ([]string, *Error) {
	var out []string
	var seen map[string]struct{} // once out is too long to scan
	for _, line := range values {
		for uri := range strings.SplitSeq(line, ",") {
			uri = strings.TrimSpace(uri)
			if uri == "" {
				continue
			}
			if cost != nil {
				cost.read++
			}
			if maxURIBytes > 0 && len(uri) > maxURIBytes {
				return nil, NewError(CodeInvalidRequest, "%s: an extension URI is longer than %d bytes", HeaderExtensions, maxURIBytes)
			}
			if seen != nil {
				if cost != nil {
					cost.compared++
				}
				if _, dup := seen[uri]; dup {
					continue
				}
				seen[uri] = struct{}{}
			} else {
				if cost != nil {
					cost.compared += len(out)
				}
				if slices.Contains(out, uri) {
					continue
				}
			}
			if maxURIs > 0 && len(out) >= maxURIs {
				return nil, NewError(CodeInvalidRequest, "%s: more than %d extensions requested", HeaderExtensions, maxURIs)
			}
			out = append(out, uri)
			if seen == nil && len(out) > 8 {
				seen = make(map[string]struct{}, 2*len(out))
				for _, u := range out {
					seen[u] = struct{}{}
				}
			}
		}
	}
	return out, nil
}

// NegotiateExtensions returns the requested extensions the agent declares
// (the ones in force), in the order requested. Unknown requested extensions
// are ignored; a declared required extension that was not requested is
// answered with ExtensionSupportRequired.
func NegotiateExtensions(requested []string, declared []AgentExtension) ([]string, *Error) {
	for _, d := range declared {
		if d.Required && !slices.Contains(requested, d.URI) {
			e := NewError(CodeExtensionSupportRequired, "extension %s is required by this agent", d.URI)
			e.Metadata = map[string]string{"extension": d.URI}
			return nil, e
		}
	}
	var active []string
	for _, uri := range requested {
		if slices.ContainsFunc(declared, func(d AgentExtension) bool { return d.URI == uri }) {
			active = append(active, uri)
		}
	}
	return active, nil
}
