package identity_test

import (
	"testing"

	"novaos.dev/novaos/identity"
)

func TestScopeMatches(t *testing.T) {
	tests := []struct {
		granted, required string
		want              bool
	}{
		{"memory:read:tenant", "memory:read:tenant", true},
		{"memory:read:*", "memory:read:tenant", true},
		{"memory:read:*", "memory:read:agent", true},
		{"memory:read:*", "memory:write:agent", false},
		{"memory:read:*", "memory:read", false},
		{"memory:*", "memory:read:tenant", true},
		{"memory:*", "memory:write:agent", true},
		{"memory:*", "mcp:tools:memory", false},
		{"mcp:tools:*", "mcp:tools:memory", true},
		{"memory:*:agent", "memory:write:agent", true},
		{"memory:*:agent", "memory:write:user", false},
		{"memory:*:agent", "memory:write:agent:x", false},
		{"memory:write:agent", "memory:write:agent:x", false},
		{"memory:write:agent", "memory:write", false},
		{"Memory:read:tenant", "memory:read:tenant", false},
		{"memory:read:tenant", "memory:read:*", false},
		{"memory:read:*", "memory:read:*", true},
		{"*", "memory:read:tenant", false},
		{"", "", false},
		{"memory::read", "memory::read", false},
		{"memory:read:*", "memory:read:ten ant", false},
	}
	for _, tc := range tests {
		if got := identity.ScopeMatches(tc.granted, tc.required); got != tc.want {
			t.Errorf("ScopeMatches(%q, %q) = %v, want %v", tc.granted, tc.required, got, tc.want)
		}
	}
}

func TestValidScope(t *testing.T) {
	for s, want := range map[string]bool{
		"memory:read:*": true, "mcp:tools:memory": true, "a": true, "a.b-c_d:*:e": true,
		"": false, "*": false, ":a": false, "a:": false, "a b": false, "a:\"b": false, "ä": false,
	} {
		if got := identity.ValidScope(s); got != want {
			t.Errorf("ValidScope(%q) = %v, want %v", s, got, want)
		}
	}
}
