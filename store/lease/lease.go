package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Defaults for the zero Options.
const (
	DefaultHeartbeat = 5 * time.Second
	DefaultExpiry    = 30 * time.Second
)

// Options time a lease. The zero value (or nil) means the defaults.
type Options struct {
	// Heartbeat is how often the lease is renewed (default 5s).
	Heartbeat time.Duration
	// Expiry is how long after its last renewal a lease lapses and its
	// process is presumed dead (default 30s, and at least twice Heartbeat,
	// so one late renewal never lets a live process's lease lapse).
	Expiry time.Duration
}

// Resolve returns o with defaults filled in, or an error when Expiry is
// shorter than twice Heartbeat.
func (o *Options) Resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Heartbeat <= 0 {
		r.Heartbeat = DefaultHeartbeat
	}
	if r.Expiry <= 0 {
		r.Expiry = max(DefaultExpiry, 2*r.Heartbeat)
	}
	if r.Expiry < 2*r.Heartbeat {
		return Options{}, fmt.Errorf("lease: expiry %v is shorter than twice the heartbeat %v", r.Expiry, r.Heartbeat)
	}
	return r, nil
}

// NewID returns a random instance id (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b[:])
}

// Keeper renews one lease in the background until Stop.
type Keeper struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// Start calls renew every o.Heartbeat, each call bounded by one heartbeat,
// and passes its errors to failed (which may be nil). The first renewal is
// the caller's to make before Start, so that the lease exists before the
// first task is written.
func Start(o Options, renew func(ctx context.Context) error, failed func(error)) *Keeper {
	k := &Keeper{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(k.done)
		t := time.NewTicker(o.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-k.quit:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), o.Heartbeat)
			err := renew(ctx)
			cancel()
			if err != nil && failed != nil {
				failed(err)
			}
		}
	}()
	return k
}

// Stop ends the renewals and returns once none is running. The lease itself
// is left as it is: the caller releases it, or lets it lapse.
func (k *Keeper) Stop() {
	k.once.Do(func() { close(k.quit) })
	<-k.done
}

// maxNoted bounds the ids a Noted remembers.
const maxNoted = 10_000

// Noted remembers which task rows a process has already reported as
// unreadable, so a row that no sweep can ever settle is logged once, not
// at every sweep. It remembers at most 10,000 ids; rows beyond those are
// still passed over, but no longer logged one by one. The zero value is
// ready to use.
type Noted struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// First reports whether id is noted for the first time.
func (n *Noted) First(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.seen[id]; ok || len(n.seen) >= maxNoted {
		return false
	}
	if n.seen == nil {
		n.seen = make(map[string]struct{})
	}
	n.seen[id] = struct{}{}
	return true
}
