package llmgw

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A configuration entry is answered fresh for its TTL; then, for one TTL
// more, it is answered stale while one reload runs behind, so that no
// call waits for the store; past that, or cleared, it is read on the
// call's path. A reload begun before a clear does not bring the old
// value back.
func TestConfigCache(t *testing.T) {
	clk := &clock{now: testNow}
	c := newConfigCache(t.Context(), time.Second, clk.Now)
	var loads atomic.Int64
	release := make(chan struct{})
	reloaded := make(chan struct{}, 4)
	value := atomic.Value{}
	value.Store("v1")
	blocking := atomic.Bool{}
	c.reloaded = func() { reloaded <- struct{}{} }
	load := func(ctx context.Context) (any, error) {
		loads.Add(1)
		// What the store holds when the read begins.
		v := value.Load()
		if blocking.Load() {
			<-release
		}
		return v, nil
	}
	get := func() any {
		t.Helper()
		v, err := c.get(t.Context(), "k", load)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := get(); v != "v1" || loads.Load() != 1 {
		t.Fatalf("first read: %v after %d loads", v, loads.Load())
	}
	value.Store("v2")
	clk.add(500 * time.Millisecond)
	if v := get(); v != "v1" || loads.Load() != 1 {
		t.Errorf("fresh: %v after %d loads, want v1 from the cache", v, loads.Load())
	}
	// Stale: answered at once, one reload behind however many calls.
	blocking.Store(true)
	clk.add(time.Second)
	for range 3 {
		if v := get(); v != "v1" {
			t.Errorf("stale: %v, want v1 while it reloads", v)
		}
	}
	close(release)
	<-reloaded
	blocking.Store(false)
	if v := get(); v != "v2" || loads.Load() != 2 {
		t.Errorf("after the reload: %v after %d loads, want v2 after 2", v, loads.Load())
	}
	// Too old: read on the path.
	value.Store("v3")
	clk.add(3 * time.Second)
	if v := get(); v != "v3" || loads.Load() != 3 {
		t.Errorf("too old: %v after %d loads, want v3 read at once", v, loads.Load())
	}
	// A reload overtaken by a clear is dropped.
	blocking.Store(true)
	release = make(chan struct{})
	value.Store("old")
	clk.add(1500 * time.Millisecond)
	get() // starts the reload, which reads "old"
	c.clear()
	value.Store("new")
	close(release)
	<-reloaded
	blocking.Store(false)
	if v := get(); v != "new" {
		t.Errorf("after a clear: %v, want what the store holds now", v)
	}
	// Errors other than not-found are not kept.
	var fail atomic.Bool
	fail.Store(true)
	errLoad := func(context.Context) (any, error) {
		if fail.Load() {
			return nil, errors.New("store down")
		}
		return "up", nil
	}
	if _, err := c.get(t.Context(), "e", errLoad); err == nil {
		t.Fatal("a failed read was answered")
	}
	fail.Store(false)
	if v, err := c.get(t.Context(), "e", errLoad); err != nil || v != "up" {
		t.Errorf("after a failure: %v, %v; want it read again", v, err)
	}
}
