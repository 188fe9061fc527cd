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
// comma-separated list) into a list of distinct URIs, in order.
func ParseExtensions(values []string) []string {
	var out []string
	for _, line := range values {
		for uri := range strings.SplitSeq(line, ",") {
			uri = strings.TrimSpace(uri)
			if uri != "" && !slices.Contains(out, uri) {
				out = append(out, uri)
			}
		}
	}
	return out
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
