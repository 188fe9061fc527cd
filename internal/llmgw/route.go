package llmgw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/secret"
)

// sealPurpose is what a provider's sealed key is, bound to its tenant and
// name: a key copied to another provider fails to open.
const sealPurpose = "novaos llm-provider-key v1"

var errNoSealer = errors.New("llmgw: this server keeps no key to seal API keys with")

// target is one provider a call may go to, ready to call.
type target struct {
	provider llm.Provider
	key      secret.Value
	model    string // at the provider
}

// resolved is a model's route with the targets that can be called.
type resolved struct {
	route   llm.Route
	targets []target
}

// resolve finds the route of model for tenant (its own, else the
// platform's) and its enabled providers, their keys opened.
func (s *Service) resolve(ctx context.Context, tenant, model string) (*resolved, *llm.APIError, error) {
	r, err := s.route(ctx, tenant, model)
	if errors.Is(err, llm.ErrNotFound) {
		return nil, modelNotFound(model), nil
	}
	if err != nil {
		return nil, nil, err
	}
	out := &resolved{route: r}
	for _, t := range r.Targets {
		p, err := s.provider(ctx, r.TenantID, t.Provider)
		if errors.Is(err, llm.ErrNotFound) {
			s.log.WarnContext(ctx, "llmgw: a route names a provider that does not exist", "tenant_id", r.TenantID, "model", r.Name, "provider", t.Provider)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if p.Disabled {
			continue
		}
		key, err := s.openKey(&p)
		if err != nil {
			s.log.ErrorContext(ctx, "llmgw: a provider's key cannot be opened", "tenant_id", p.TenantID, "provider", p.Name, "err", err)
			continue
		}
		out.targets = append(out.targets, target{provider: p, key: key, model: t.Model})
	}
	if len(out.targets) == 0 {
		return nil, &llm.APIError{Status: http.StatusServiceUnavailable, Type: llm.TypeServer, Code: llm.CodeProviderUnavailable,
			Message: "No provider of the model " + quoteModel(model) + " is configured and enabled."}, nil
	}
	return out, nil, nil
}

// budgets reads the budgets of tenant and instance: the tenant's, and
// the instance's when instance is not "" (nil where there is none).
func (s *Service) budgets(ctx context.Context, tenant, instance string) ([2]*llm.Budget, error) {
	var out [2]*llm.Budget
	for i, inst := range []string{"", instance} {
		if i == 1 && instance == "" {
			break
		}
		v, err := s.cache.get(ctx, "b\x00"+tenant+"\x00"+inst, func(ctx context.Context) (any, error) {
			return s.deps.Store.GetBudget(ctx, tenant, inst)
		})
		if errors.Is(err, llm.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		b := v.(llm.Budget)
		out[i] = &b
	}
	return out, nil
}

// route reads the tenant's route of model, else the platform's.
func (s *Service) route(ctx context.Context, tenant, model string) (llm.Route, error) {
	v, err := s.cache.get(ctx, "r\x00"+tenant+"\x00"+model, func(ctx context.Context) (any, error) {
		r, err := s.deps.Store.GetRoute(ctx, tenant, model)
		if errors.Is(err, llm.ErrNotFound) && tenant != "" {
			r, err = s.deps.Store.GetRoute(ctx, "", model)
		}
		return r, err
	})
	if err != nil {
		return llm.Route{}, err
	}
	return v.(llm.Route), nil
}

func (s *Service) provider(ctx context.Context, tenant, name string) (llm.Provider, error) {
	v, err := s.cache.get(ctx, "p\x00"+tenant+"\x00"+name, func(ctx context.Context) (any, error) {
		return s.deps.Store.GetProvider(ctx, tenant, name)
	})
	if err != nil {
		return llm.Provider{}, err
	}
	return v.(llm.Provider), nil
}

// openKey opens p's sealed key, once per version.
func (s *Service) openKey(p *llm.Provider) (secret.Value, error) {
	if len(p.SealedKey) == 0 {
		return secret.Value{}, nil
	}
	v, err := s.cache.get(context.Background(), "k\x00"+p.TenantID+"\x00"+p.Name+"\x00"+strconv.FormatInt(p.Version, 10), func(context.Context) (any, error) {
		if s.deps.Sealer == nil {
			return nil, errNoSealer
		}
		b, err := s.deps.Sealer.Unseal(string(p.SealedKey), sealPurpose, p.TenantID, p.Name)
		if err != nil {
			return nil, fmt.Errorf("llmgw: open the key of provider %s: %w", p.Name, err)
		}
		return secret.New(string(b)), nil
	})
	if err != nil {
		return secret.Value{}, err
	}
	return v.(secret.Value), nil
}

// sealKey seals key for p.
func (s *Service) sealKey(p *llm.Provider, key string) error {
	if key == "" {
		p.SealedKey = nil
		return nil
	}
	if s.deps.Sealer == nil {
		return errNoSealer
	}
	sealed, err := s.deps.Sealer.Seal([]byte(key), sealPurpose, p.TenantID, p.Name)
	if err != nil {
		return fmt.Errorf("llmgw: seal the key of provider %s: %w", p.Name, err)
	}
	p.SealedKey = []byte(sealed)
	return nil
}

// endpoint is the URL of path (such as "/chat/completions") at p.
func endpoint(p *llm.Provider, path string) string {
	return strings.TrimRight(p.BaseURL, "/") + path
}

// configCache keeps what the gateway read of its configuration, so that
// calls do not read the store: an entry is fresh for ttl; one older is
// still answered, for up to ttl more, while one reload of it runs in the
// background, so that a call waits for the store only for an entry it
// has never read or not read for twice ttl. A lookup that failed with
// ErrNotFound is kept too; other errors are not.
type configCache struct {
	ttl time.Duration
	now func() time.Time
	// base bounds the background reloads: they end with it.
	base context.Context

	mu      sync.Mutex
	entries map[string]*cached
	gen     uint64 // clear's count: a reload begun before one is dropped

	// reloaded, when set, is called as a background reload ends.
	reloaded func()
}

type cached struct {
	v         any
	err       error
	at        time.Time
	reloading bool
}

// maxCached bounds the entries; past it the cache starts afresh.
const maxCached = 8192

// reloadTimeout bounds a background reload.
const reloadTimeout = 10 * time.Second

func newConfigCache(base context.Context, ttl time.Duration, now func() time.Time) *configCache {
	return &configCache{ttl: ttl, now: now, base: base, entries: map[string]*cached{}}
}

func (c *configCache) get(ctx context.Context, key string, load func(context.Context) (any, error)) (any, error) {
	now := c.now()
	c.mu.Lock()
	gen := c.gen
	e, ok := c.entries[key]
	if ok {
		age := now.Sub(e.at)
		switch {
		case age >= 0 && age < c.ttl:
			c.mu.Unlock()
			return e.v, e.err
		case age >= 0 && age < 2*c.ttl:
			if !e.reloading {
				e.reloading = true
				go c.reload(key, c.gen, load)
			}
			c.mu.Unlock()
			return e.v, e.err
		}
	}
	c.mu.Unlock()
	v, err := load(ctx)
	if err != nil && !errors.Is(err, llm.ErrNotFound) {
		return nil, err
	}
	c.put(key, gen, &cached{v: v, err: err, at: now})
	return v, err
}

// reload reads key again for the entry that went stale in generation
// gen.
func (c *configCache) reload(key string, gen uint64, load func(context.Context) (any, error)) {
	ctx, cancel := context.WithTimeout(c.base, reloadTimeout)
	defer cancel()
	if c.reloaded != nil {
		defer c.reloaded()
	}
	at := c.now()
	v, err := load(ctx)
	if err != nil && !errors.Is(err, llm.ErrNotFound) {
		// Kept stale until it is too old, then read on a call's path,
		// where the error is the call's.
		c.mu.Lock()
		if e := c.entries[key]; e != nil && c.gen == gen {
			e.reloading = false
		}
		c.mu.Unlock()
		return
	}
	c.put(key, gen, &cached{v: v, err: err, at: at})
}

// put keeps e for key unless the cache was cleared since generation
// gen.
func (c *configCache) put(key string, gen uint64, e *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if len(c.entries) >= maxCached {
		c.entries = map[string]*cached{}
	}
	c.entries[key] = e
}

// clear forgets everything: this process changed the configuration.
func (c *configCache) clear() {
	c.mu.Lock()
	c.entries = map[string]*cached{}
	c.gen++
	c.mu.Unlock()
}
