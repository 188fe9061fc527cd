package archtest

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// storeBuilds are the durable stores: they implement the SDKs' store
// contracts (a2asrv, memory, gate, registry) and are used outside the
// platform, so what they link is what every user of a store links.
var storeBuilds = []string{module + "/store/sqlite", module + "/store/postgres"}

// linkedByStores reports why a store must not link dep, "" when it may.
// The SDKs a store implements contracts of take what they need from an
// agent's execution through interfaces of their own, so a store links no
// agent SDK, no human-in-the-loop parts, no token verifier or card
// signer, and of the A2A extensions only ext/usercontext, which the
// registry's records name (registry.Agent.Recipient).
func linkedByStores(dep string) string {
	switch {
	case underAny(dep, "agent"):
		return "the agent SDK"
	case dep == module+"/a2a/hitl":
		return "the agent SDK's human-in-the-loop parts"
	case underAny(dep, "identity"):
		return "the token verifier"
	case dep == module+"/a2a/cardsig":
		return "the agent card signer"
	case underAny(dep, "ext") && dep != module+"/ext/usercontext":
		return "an A2A extension"
	}
	return ""
}

// goListDeps runs `go list -deps pkg` from the module root.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH, and the store's imports are read with go list")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v: %s", pkg, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// TestStoresLinkNoAgentSDK reads what each store links, as `go list -deps`
// gives it, and refuses the packages linkedByStores names.
func TestStoresLinkNoAgentSDK(t *testing.T) {
	for _, store := range storeBuilds {
		t.Run(strings.TrimPrefix(store, module+"/"), func(t *testing.T) {
			deps := goListDeps(t, store)
			if !slices.Contains(deps, store) || !slices.Contains(deps, module+"/a2a") {
				t.Fatalf("go list -deps %s lists %d packages without the store or the wire model: %v", store, len(deps), deps)
			}
			for _, dep := range deps {
				if why := linkedByStores(dep); why != "" {
					t.Errorf("%s links %s, %s", store, dep, why)
				}
			}
		})
	}
}

// The store rule must be able to fail: check it against package paths.
func TestLinkedByStoresCatches(t *testing.T) {
	tests := []struct {
		dep  string
		want bool
	}{
		{module + "/agent", true},
		{module + "/agent/internal/x", true},
		{module + "/a2a/hitl", true},
		{module + "/identity", true},
		{module + "/a2a/cardsig", true},
		{module + "/ext/toolcall", true},
		{module + "/ext/cost", true},
		{module + "/ext/usercontext", false},
		{module + "/a2a", false},
		{module + "/a2a/a2asrv", false},
		{module + "/memory", false},
		{module + "/gate", false},
		{module + "/jwk", false},
		{module + "/agents", false},
		{"database/sql", false},
	}
	for _, tc := range tests {
		if got := linkedByStores(tc.dep) != ""; got != tc.want {
			t.Errorf("linkedByStores(%s) refuses = %v, want %v", tc.dep, got, tc.want)
		}
	}
}
