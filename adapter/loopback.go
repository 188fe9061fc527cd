package adapter

import "strings"

// IsLoopbackHost reports whether host (without a port) names this
// machine's loopback: 127.0.0.1, ::1 or localhost, the only hosts an
// adapter speaks clear text to.
func IsLoopbackHost(host string) bool {
	switch strings.ToLower(host) {
	case "127.0.0.1", "::1", "localhost":
		return true
	}
	return false
}
