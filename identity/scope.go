package identity

import "strings"

// Scope grammar. A scope is one or more segments joined by ":", each
// segment either "*" or one or more of a-z, A-Z, 0-9, "-", "_" and ".":
//
//	scope   = segment *( ":" segment )
//	segment = "*" / 1*( ALPHA / DIGIT / "-" / "_" / "." )
//
// A scope a token grants matches a scope a service requires when every
// segment matches in order: a literal matches itself (case-sensitive) and
// "*" matches any one segment, except that a "*" in last place matches
// one or more segments. So memory:read:* grants memory:read:tenant and
// memory:read:agent; memory:* grants every memory scope; mcp:tools:*
// grants mcp:tools:memory. A required scope is a literal: a "*" in it is
// matched only by a "*" (or a trailing "*") in the grant. The bare scope
// "*" is not valid: a grant names at least the service it is for.
const maxScopeLen = 256

// ValidScope reports whether s follows the scope grammar.
func ValidScope(s string) bool {
	if s == "" || len(s) > maxScopeLen || s == "*" {
		return false
	}
	for seg := range strings.SplitSeq(s, ":") {
		if seg == "*" {
			continue
		}
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
				c == '-', c == '_', c == '.':
			default:
				return false
			}
		}
	}
	return true
}

// ScopeMatches reports whether the granted scope grants the required one,
// by the rules of the scope grammar above. An invalid scope on either side
// matches nothing.
func ScopeMatches(granted, required string) bool {
	if !ValidScope(granted) || !ValidScope(required) {
		return false
	}
	for {
		g, grest, gmore := strings.Cut(granted, ":")
		r, rrest, rmore := strings.Cut(required, ":")
		if g == "*" && !gmore {
			return true // a trailing * takes this segment and all after it
		}
		if g != "*" && g != r {
			return false
		}
		if gmore != rmore {
			return false
		}
		if !gmore {
			return true
		}
		granted, required = grest, rrest
	}
}

// AnyScopeMatches reports whether any of the granted scopes grants
// required.
func AnyScopeMatches(granted []string, required string) bool {
	for _, g := range granted {
		if ScopeMatches(g, required) {
			return true
		}
	}
	return false
}
