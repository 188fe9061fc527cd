package archtest

import (
	"slices"
	"strings"
	"testing"
)

// services are the platform services internal/app mounts. Each is built
// from the stores, its Deps and its Options, and reaches another service
// only through an interface it declares (see internal/app's doc).
var services = []string{
	module + "/internal/auth",
	module + "/internal/memorysvc",
	module + "/internal/gatesvc",
	module + "/internal/registrysvc",
	module + "/internal/agenthost",
	module + "/internal/execgw",
	module + "/internal/toolgw",
	module + "/internal/llmgw",
	module + "/internal/schedsvc",
	module + "/internal/delivery",
}

// mounters are the packages that know every service; platformtest
// mounts the delivery service on the execution gateway in memory, as the
// fake platform users test their adapters against.
var mounters = []string{module + "/internal/app", module + "/internal/cli", module + "/cmd/novaos", module + "/platformtest"}

// serviceOf is the service path belongs to (a service or one of its
// subpackages), or "".
func serviceOf(path string) string {
	for _, s := range services {
		if path == s || strings.HasPrefix(path, s+"/") {
			return s
		}
	}
	return ""
}

// A service never imports another, directly or through a third package:
// a new service moves in without touching five other rooms.
func TestServicesStandAlone(t *testing.T) {
	g := loadGraph(t)
	for path, p := range g {
		own := serviceOf(path)
		if own == "" || p.DepOnly {
			continue
		}
		for _, dep := range p.Deps {
			if other := serviceOf(dep); other != "" && other != own {
				t.Errorf("%s imports %s (via %s): a service reaches another through an interface of its own", path, other, dep)
			}
		}
	}
	for _, s := range services {
		if _, ok := g[s]; !ok {
			t.Errorf("service %s is not in the module: update this list", s)
		}
	}
}

// Only the packages that mount the services import them: the SDKs, the
// protocol packages and the stores stay usable without the platform.
func TestOnlyAppMountsServices(t *testing.T) {
	g := loadGraph(t)
	for path, p := range g {
		if p.DepOnly || !strings.HasPrefix(path, module) || serviceOf(path) != "" || slices.Contains(mounters, path) {
			continue
		}
		for _, imp := range p.Imports {
			if s := serviceOf(imp); s != "" {
				t.Errorf("%s imports the service %s: only %v mount services", path, s, mounters)
			}
		}
	}
}

// The Stores value names public store contracts only, so any store, ours
// or a user's, can fill it.
func TestStoresArePublicContracts(t *testing.T) {
	g := loadGraph(t)
	p, ok := g[module+"/store"]
	if !ok {
		t.Fatal("package store is not in the module")
	}
	for _, dep := range p.Deps {
		if platformInternal(dep) || isDatabaseDriver(g[dep]) || underAny(dep, "store/sqlite", "store/postgres") {
			t.Errorf("package store depends on %s", dep)
		}
	}
}
