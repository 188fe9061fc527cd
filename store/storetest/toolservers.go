package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/tools"
)

// TestToolServerStore runs the tools.ServerStore contract. newStore must
// return a new, empty store each time it is called.
func TestToolServerStore(t *testing.T, newStore func(t *testing.T) tools.ServerStore) {
	t.Run("PutGet", func(t *testing.T) { testTSPutGet(t, newStore(t)) })
	t.Run("CreateTaken", func(t *testing.T) { testTSCreateTaken(t, newStore(t)) })
	t.Run("Replace", func(t *testing.T) { testTSReplace(t, newStore(t)) })
	t.Run("ReplaceRefused", func(t *testing.T) { testTSReplaceRefused(t, newStore(t)) })
	t.Run("ReplaceOnce", func(t *testing.T) { testTSReplaceOnce(t, newStore(t)) })
	t.Run("Invalid", func(t *testing.T) { testTSInvalid(t, newStore(t)) })
	t.Run("Tenants", func(t *testing.T) { testTSTenants(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testTSList(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testTSDelete(t, newStore(t)) })
}

// TestToolServerReopen checks durability across restarts: a server
// written through one handle reads back unchanged through a new handle on
// the same database. open must return a fresh handle on the same database
// at every call, and the function that closes it.
func TestToolServerReopen(t *testing.T, open func(t *testing.T) (tools.ServerStore, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	want, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0)
	if err != nil {
		t.Fatal(err)
	}
	closeDB()
	s, closeDB = open(t)
	defer closeDB()
	got, err := s.GetServer(ctx, "acme", "search")
	if err != nil {
		t.Fatalf("after reopening: GetServer: %v", err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("after reopening (-want +got):\n%s", d)
	}
}

// tsT0 is the suite's clock: nanoseconds, which stores drop, in a zone
// other than UTC, which reads back as UTC.
var tsT0 = time.Date(2026, 7, 1, 8, 0, 0, 987654321, time.UTC).In(gateZone)

// tsHTTP is an http server with every field an http server has set.
func tsHTTP(tenant, name string) tools.UpstreamServer {
	return tools.UpstreamServer{
		TenantID: tenant, Name: name, Transport: tools.TransportHTTP, URL: "https://mcp.example.com/" + name + "/mcp?x=1",
		Headers:           []string{"Authorization", "X-Api-Key"},
		SealedCredentials: []byte{0, 1, '"', '\\', 0xfe, 0xff},
		Timeout:           45*time.Second + 3*time.Millisecond,
		Disabled:          true,
		Version:           9, CreatedAt: tsT0.Add(-time.Hour), // the store's to set
		UpdatedAt: tsT0,
	}
}

// tsStdio is a stdio server with every field a stdio server has set.
func tsStdio(tenant, name string) tools.UpstreamServer {
	return tools.UpstreamServer{
		TenantID: tenant, Name: name, Transport: tools.TransportStdio, Command: "/usr/bin/mcp-files",
		Args:              []string{"--root", "/srv/data dir", "", "ü ✓"},
		Env:               []string{"API_TOKEN", "region"},
		SealedCredentials: []byte("novaos-sealed:v1:0011223344556677:abc"),
		UpdatedAt:         tsT0,
	}
}

// tsStored is s as a store returns it after a write at tsT0.
func tsStored(s tools.UpstreamServer, version int64, created time.Time) tools.UpstreamServer {
	s.Version = version
	s.UpdatedAt = time.UnixMicro(s.UpdatedAt.UnixMicro()).UTC()
	s.CreatedAt = time.UnixMicro(created.UnixMicro()).UTC()
	return s
}

func testTSPutGet(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	for _, in := range []tools.UpstreamServer{tsHTTP("acme", "search"), tsStdio("acme", "docs")} {
		want := tsStored(in, 1, in.UpdatedAt)
		put, err := s.PutServer(ctx, in, 0)
		if err != nil {
			t.Fatalf("PutServer %s: %v", in.Name, err)
		}
		if d := gocmp.Diff(want, put); d != "" {
			t.Errorf("PutServer %s returned (-want +got):\n%s", in.Name, d)
		}
		got, err := s.GetServer(ctx, "acme", in.Name)
		if err != nil {
			t.Fatalf("GetServer %s: %v", in.Name, err)
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("GetServer %s (-want +got):\n%s", in.Name, d)
		}
		// What a store returns is the caller's to change.
		got.Headers = append(got.Headers[:0], "X-Changed")
		got.SealedCredentials = append(got.SealedCredentials[:0], 'x')
		again, _ := s.GetServer(ctx, "acme", in.Name)
		if d := gocmp.Diff(want, again); d != "" {
			t.Errorf("GetServer %s after changing a returned copy (-want +got):\n%s", in.Name, d)
		}
	}

	// The least a server has: no lists, no credentials, no timeout; a zero
	// UpdatedAt is the write's own time.
	before := time.Now().Add(-time.Second)
	min, err := s.PutServer(ctx, tools.UpstreamServer{TenantID: "acme", Name: "min", Transport: tools.TransportHTTP,
		URL: "https://x.example/mcp", Args: []string{}, Headers: []string{}, SealedCredentials: []byte{}}, 0)
	if err != nil {
		t.Fatalf("PutServer min: %v", err)
	}
	if min.UpdatedAt.Before(before) || !min.CreatedAt.Equal(min.UpdatedAt) || min.UpdatedAt.Location() != time.UTC {
		t.Errorf("PutServer with no time: created %v, updated %v; want now, in UTC", min.CreatedAt, min.UpdatedAt)
	}
	got, err := s.GetServer(ctx, "acme", "min")
	if err != nil {
		t.Fatal(err)
	}
	if got.Args != nil || got.Headers != nil || got.Env != nil || got.SealedCredentials != nil || got.Timeout != 0 || got.Disabled {
		t.Errorf("GetServer min = %+v; want empty lists and credentials as nil, no timeout", got)
	}
	if d := gocmp.Diff(min, got); d != "" {
		t.Errorf("GetServer min (-want +got):\n%s", d)
	}

	if _, err := s.GetServer(ctx, "acme", "absent"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("GetServer absent: %v; want ErrNotFound", err)
	}
}

func testTSCreateTaken(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	first, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0)
	if err != nil {
		t.Fatal(err)
	}
	other := tsStdio("acme", "search")
	if _, err := s.PutServer(ctx, other, 0); !errors.Is(err, tools.ErrConflict) {
		t.Errorf("creating a taken name: %v; want ErrConflict", err)
	}
	got, _ := s.GetServer(ctx, "acme", "search")
	if d := gocmp.Diff(first, got); d != "" {
		t.Errorf("after a refused create (-want +got):\n%s", d)
	}
}

func testTSReplace(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	first, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// A replace may change everything but the key, the transport included.
	next := tsStdio("acme", "search")
	next.UpdatedAt = tsT0.Add(time.Minute)
	next.CreatedAt = tsT0.Add(time.Hour) // the store keeps the stored one
	put, err := s.PutServer(ctx, next, first.Version)
	if err != nil {
		t.Fatalf("PutServer replace: %v", err)
	}
	want := tsStored(next, 2, first.CreatedAt)
	if d := gocmp.Diff(want, put); d != "" {
		t.Errorf("replace returned (-want +got):\n%s", d)
	}
	got, err := s.GetServer(ctx, "acme", "search")
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("GetServer after replace (-want +got):\n%s", d)
	}
}

func testTSReplaceRefused(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	first, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		server tools.UpstreamServer
		expect int64
	}{
		{"an old version", tsHTTP("acme", "search"), first.Version + 1},
		{"a version of nothing stored", tsHTTP("acme", "other"), 1},
		{"another tenant's", tsHTTP("globex", "search"), first.Version},
	} {
		if _, err := s.PutServer(ctx, c.server, c.expect); !errors.Is(err, tools.ErrConflict) {
			t.Errorf("%s: %v; want ErrConflict", c.name, err)
		}
	}
	got, _ := s.GetServer(ctx, "acme", "search")
	if d := gocmp.Diff(first, got); d != "" {
		t.Errorf("after refused replaces (-want +got):\n%s", d)
	}
	if _, err := s.GetServer(ctx, "globex", "search"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("a refused replace in another tenant stored something: %v", err)
	}
}

// Replaces racing from one version: exactly one wins.
func testTSReplaceOnce(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	first, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			next := tsHTTP("acme", "search")
			next.URL = fmt.Sprintf("https://mcp.example.com/%d", i)
			_, errs[i] = s.PutServer(ctx, next, first.Version)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("replaces %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, tools.ErrConflict):
			t.Errorf("replace %d: %v; want ErrConflict for a loser", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no replace won")
	}
	got, _ := s.GetServer(ctx, "acme", "search")
	if want := fmt.Sprintf("https://mcp.example.com/%d", won); got.URL != want || got.Version != 2 {
		t.Errorf("stored %s version %d; want the winner's %s, version 2", got.URL, got.Version, want)
	}
}

func testTSInvalid(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	with := func(f func(*tools.UpstreamServer)) tools.UpstreamServer {
		v := tsHTTP("acme", "search")
		f(&v)
		return v
	}
	for _, c := range []struct {
		name   string
		server tools.UpstreamServer
	}{
		{"no tenant", with(func(v *tools.UpstreamServer) { v.TenantID = "" })},
		{"a built-in server's name", with(func(v *tools.UpstreamServer) { v.Name = tools.ServerMemory })},
		{"a name with a dot", with(func(v *tools.UpstreamServer) { v.Name = "a.b" })},
		{"a name starting with a digit", with(func(v *tools.UpstreamServer) { v.Name = "1a" })},
		{"an upper-case name", with(func(v *tools.UpstreamServer) { v.Name = "Search" })},
		{"a long name", with(func(v *tools.UpstreamServer) { v.Name = "a123456789012345678901234567890123" })},
		{"no transport", with(func(v *tools.UpstreamServer) { v.Transport = "" })},
		{"http without a url", with(func(v *tools.UpstreamServer) { v.URL = "" })},
		{"http with a command", with(func(v *tools.UpstreamServer) { v.Command = "/bin/sh" })},
		{"stdio without a command", with(func(v *tools.UpstreamServer) { v.Transport, v.URL, v.Headers = tools.TransportStdio, "", nil })},
		{"a timeout past the ceiling", with(func(v *tools.UpstreamServer) { v.Timeout = tools.MaxServerTimeout + 1 })},
		{"a negative timeout", with(func(v *tools.UpstreamServer) { v.Timeout = -1 })},
		{"a reserved header", with(func(v *tools.UpstreamServer) { v.Headers = []string{"Mcp-Session-Id"} })},
		{"a header not in canonical form", with(func(v *tools.UpstreamServer) { v.Headers = []string{"x-api-key"} })},
		{"a header named twice", with(func(v *tools.UpstreamServer) { v.Headers = []string{"X-Key", "X-Key"} })},
	} {
		_, err := s.PutServer(ctx, c.server, 0)
		if !errors.Is(err, tools.ErrInvalidServer) {
			t.Errorf("%s: %v; want ErrInvalidServer", c.name, err)
		}
	}
	if _, err := s.PutServer(ctx, tsHTTP("acme", "search"), -1); err == nil || errors.Is(err, tools.ErrConflict) {
		t.Errorf("a negative expected version: %v; want a refusal that is not a conflict", err)
	}
	if list, err := s.ListServers(ctx, "acme"); err != nil || len(list) != 0 {
		t.Errorf("after refused writes ListServers = %v, %v; want none", list, err)
	}
}

func testTSTenants(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	a, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.PutServer(ctx, tsStdio("globex", "search"), 0)
	if err != nil {
		t.Fatalf("the same name in another tenant: %v", err)
	}
	for tenant, want := range map[string]tools.UpstreamServer{"acme": a, "globex": g} {
		got, err := s.GetServer(ctx, tenant, "search")
		if err != nil {
			t.Fatal(err)
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("tenant %s (-want +got):\n%s", tenant, d)
		}
	}
	if err := s.DeleteServer(ctx, "globex", "search"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetServer(ctx, "acme", "search"); err != nil {
		t.Errorf("deleting another tenant's server removed this one's: %v", err)
	}
}

func testTSList(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	if list, err := s.ListServers(ctx, "acme"); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("ListServers of an empty store = %#v, %v; want an empty list", list, err)
	}
	var want []tools.UpstreamServer
	for _, name := range []string{"zeta", "alpha", "m-2", "m_1", "beta9"} {
		in := tsHTTP("acme", name)
		if name == "m_1" {
			in = tsStdio("acme", name)
		}
		put, err := s.PutServer(ctx, in, 0)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, put)
	}
	if _, err := s.PutServer(ctx, tsHTTP("globex", "other"), 0); err != nil {
		t.Fatal(err)
	}
	// By name, in byte order: '-' < '_' < letters.
	order := []int{1, 4, 2, 3, 0}
	var sorted []tools.UpstreamServer
	for _, i := range order {
		sorted = append(sorted, want[i])
	}
	got, err := s.ListServers(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(sorted, got); d != "" {
		t.Errorf("ListServers (-want +got):\n%s", d)
	}
}

func testTSDelete(t *testing.T, s tools.ServerStore) {
	ctx := ctxT(t)
	if _, err := s.PutServer(ctx, tsHTTP("acme", "search"), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteServer(ctx, "acme", "search"); err != nil {
		t.Fatalf("DeleteServer: %v", err)
	}
	if _, err := s.GetServer(ctx, "acme", "search"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("GetServer after delete: %v; want ErrNotFound", err)
	}
	if err := s.DeleteServer(ctx, "acme", "search"); !errors.Is(err, tools.ErrNotFound) {
		t.Errorf("deleting again: %v; want ErrNotFound", err)
	}
	// The name is free again, from version 1.
	again, err := s.PutServer(ctx, tsStdio("acme", "search"), 0)
	if err != nil || again.Version != 1 {
		t.Errorf("creating again after delete = version %d, %v; want version 1", again.Version, err)
	}
}
