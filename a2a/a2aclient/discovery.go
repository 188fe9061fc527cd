package a2aclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
	"novaos.dev/novaos/netguard"
)

// DefaultMaxCardBytes bounds a fetched agent card.
const DefaultMaxCardBytes = 1 << 20

// ResolverOptions configure a Resolver. The zero value (or nil) is usable.
type ResolverOptions struct {
	HTTPClient *http.Client
	// MaxCardBytes bounds a card (default DefaultMaxCardBytes).
	MaxCardBytes int64
	// Header is sent with every card request (e.g. Authorization).
	Header http.Header
	// Timeout bounds one fetch (default 30s; negative means none).
	Timeout time.Duration
	// Now is the clock of the cache (default time.Now).
	Now func() time.Time
	// ConnectGuard, when set, checks where card fetches (and JWKS
	// fetches) connect, as Options.ConnectGuard does for calls: the
	// card URL, each redirect and the address dialled. Nil (the
	// default) checks nothing, so a card on localhost can be read.
	ConnectGuard *netguard.Policy
	// Verify, when set, checks every card fetched (not one served from
	// the cache or revalidated with a 304, which was checked when
	// fetched) before it is cached or returned; its error fails Resolve.
	// cardsig.Verifier verifies the card's signatures against keys the
	// caller names. Nil (the default) checks nothing.
	Verify CardVerifier
}

// CardVerifier checks a card the Resolver fetched. hc is the Resolver's
// HTTP client (with its ConnectGuard), for fetching keys.
type CardVerifier interface {
	VerifyCard(ctx context.Context, card *a2a.AgentCard, hc *http.Client) error
}

// Resolver fetches agent cards from `<base>/.well-known/agent-card.json`
// and caches them by URL as HTTP says: a card is reused while its
// Cache-Control max-age runs; after that (or with no-cache) it is
// revalidated with If-None-Match when it had an ETag, and a 304 keeps it;
// no-store (or neither max-age nor ETag) is never cached. Cards are shared
// between callers: treat them as read-only. Safe for concurrent use.
type Resolver struct {
	opts  ResolverOptions
	mu    sync.Mutex
	cache map[string]*cardEntry
}

type cardEntry struct {
	card    *a2a.AgentCard
	etag    string
	expires time.Time
}

// NewResolver returns a Resolver with an empty cache.
func NewResolver(opts *ResolverOptions) *Resolver {
	r := &Resolver{cache: make(map[string]*cardEntry)}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.HTTPClient == nil {
		r.opts.HTTPClient = &http.Client{}
	}
	if r.opts.MaxCardBytes <= 0 {
		r.opts.MaxCardBytes = DefaultMaxCardBytes
	}
	if r.opts.Timeout == 0 {
		r.opts.Timeout = 30 * time.Second
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	if r.opts.ConnectGuard != nil {
		r.opts.HTTPClient = r.opts.ConnectGuard.GuardClient(r.opts.HTTPClient, nil)
	}
	return r
}

// CardURL is where the card of the agent at baseURL is published. A
// baseURL that already ends in the well-known path is returned as is.
func CardURL(baseURL string) string {
	if strings.HasSuffix(baseURL, a2a.WellKnownCardPath) {
		return baseURL
	}
	return strings.TrimSuffix(baseURL, "/") + a2a.WellKnownCardPath
}

// Resolve returns the card of the agent at baseURL, from the cache when it
// is fresh.
func (r *Resolver) Resolve(ctx context.Context, baseURL string) (*a2a.AgentCard, error) {
	url := CardURL(baseURL)
	if r.opts.ConnectGuard != nil {
		if err := r.opts.ConnectGuard.CheckURL(url); err != nil {
			return nil, fmt.Errorf("a2aclient: card: %w", err)
		}
	}
	now := r.opts.Now()
	r.mu.Lock()
	e := r.cache[url]
	r.mu.Unlock()
	if e != nil && now.Before(e.expires) {
		return e.card, nil
	}
	if r.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("a2aclient: card: %w", err)
	}
	for k, v := range r.opts.Header {
		req.Header[k] = append([]string(nil), v...)
	}
	req.Header.Set("Accept", "application/json")
	// Every request carries the version (spec §3.2.6), the card's too: a
	// server that serves 0.3 clients answers a request without one with
	// the 0.3 form of its card.
	if req.Header.Get(a2a.HeaderVersion) == "" {
		req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	}
	if e != nil && e.etag != "" {
		req.Header.Set("If-None-Match", e.etag)
	}
	resp, err := r.opts.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("a2aclient: card %s: %w", url, context.Cause(ctx))
		}
		return nil, &transportError{method: "card " + url, err: err}
	}
	defer resp.Body.Close()
	body, err := readBody(resp.Body, r.opts.MaxCardBytes)
	if err != nil {
		if errors.Is(err, ErrResponseTooLarge) {
			return nil, fmt.Errorf("a2aclient: card %s: %w", url, err)
		}
		return nil, &transportError{method: "card " + url, err: err}
	}
	maxAge, store := cacheControl(resp.Header.Get("Cache-Control"))
	if resp.StatusCode == http.StatusNotModified && e != nil {
		r.remember(url, e.card, e.etag, resp.Header, now, maxAge, store)
		return e.card, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &HTTPError{Method: "card " + url, StatusCode: resp.StatusCode, Body: snippet(body)}
	}
	card, err := ParseCard(body)
	if err != nil {
		return nil, fmt.Errorf("a2aclient: card %s: %w", url, err)
	}
	if r.opts.Verify != nil {
		if err := r.opts.Verify.VerifyCard(ctx, card, r.opts.HTTPClient); err != nil {
			return nil, fmt.Errorf("a2aclient: card %s: %w", url, err)
		}
	}
	r.remember(url, card, "", resp.Header, now, maxAge, store)
	return card, nil
}

func (r *Resolver) remember(url string, card *a2a.AgentCard, oldETag string, h http.Header, now time.Time, maxAge time.Duration, store bool) {
	etag := h.Get("ETag")
	if etag == "" {
		etag = oldETag
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !store || (maxAge <= 0 && etag == "") {
		delete(r.cache, url)
		return
	}
	r.cache[url] = &cardEntry{card: card, etag: etag, expires: now.Add(maxAge)}
}

// Forget drops the cached card of baseURL.
func (r *Resolver) Forget(baseURL string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.cache, CardURL(baseURL))
}

// cacheControl reads max-age (0 for no-cache or absent) and whether the
// response may be stored at all.
func cacheControl(v string) (maxAge time.Duration, store bool) {
	store = true
	noCache := false
	for d := range strings.SplitSeq(v, ",") {
		d = strings.ToLower(strings.TrimSpace(d))
		switch {
		case d == "no-store":
			store = false
		case d == "no-cache":
			noCache = true
		case strings.HasPrefix(d, "max-age="):
			if n, err := strconv.ParseInt(strings.Trim(d[len("max-age="):], `"`), 10, 64); err == nil && n > 0 {
				maxAge = time.Duration(min(n, int64(365*24*3600))) * time.Second
			}
		}
	}
	if noCache {
		maxAge = 0
	}
	return maxAge, store
}

// ParseCard reads an agent card (tolerantly, as a2a.Unmarshal does) and
// checks what a client needs: a name and at least one interface with a URL.
// An A2A 0.3 card (url, preferredTransport, additionalInterfaces, no
// supportedInterfaces) is converted by a2av03.ParseCard: its interfaces
// come first the url, then the additional ones, each stating the card's
// protocolVersion (0.3.x), so New calls the agent in 0.3's dialect.
func ParseCard(data []byte) (*a2a.AgentCard, error) {
	var card a2a.AgentCard
	if err := a2a.Unmarshal(data, &card); err != nil {
		return nil, fmt.Errorf("%w: card: %v", ErrInvalidResponse, err)
	}
	if len(card.SupportedInterfaces) == 0 {
		// Read as v1 first: a2a.Unmarshal also takes the snake_case names
		// a2av03.ParseCard does not look for.
		c03, err := a2av03.ParseCard(data)
		if err != nil {
			return nil, fmt.Errorf("%w: card has no supportedInterfaces and is no A2A 0.3 card: %v", ErrInvalidResponse, err)
		}
		card = *c03
	}
	if card.Name == "" {
		return nil, fmt.Errorf("%w: card has no name", ErrInvalidResponse)
	}
	if len(card.SupportedInterfaces) == 0 {
		return nil, fmt.Errorf("%w: card has no supportedInterfaces (nor a 0.3 url)", ErrInvalidResponse)
	}
	for i, in := range card.SupportedInterfaces {
		if in.URL == "" {
			return nil, fmt.Errorf("%w: card interface %d has no url", ErrInvalidResponse, i)
		}
	}
	return &card, nil
}

// SelectInterface returns the interface of the card a client calls, given
// bindings in the caller's order of preference (default JSONRPC): for the
// first binding the card offers, the card's first interface with it (the
// card lists its interfaces in the agent's order of preference). An
// interface whose protocol version is 1.x or unstated comes first; a
// JSON-RPC interface of A2A 0.3 is taken only when the card offers no 1.x
// interface with any of the bindings, so a card that offers both versions
// is called in v1. Any other version is skipped. With no match the error matches ErrNoInterface and
// names what the card offers.
func SelectInterface(card *a2a.AgentCard, bindings ...string) (*a2a.AgentInterface, error) {
	if len(bindings) == 0 {
		bindings = []string{a2a.BindingJSONRPC}
	}
	for _, speaks := range versions {
		for _, b := range bindings {
			for i := range card.SupportedInterfaces {
				if in := &card.SupportedInterfaces[i]; strings.EqualFold(b, in.ProtocolBinding) && speaks(in) {
					return in, nil
				}
			}
		}
	}
	return nil, noInterface(card, bindings)
}

// versions are the protocol versions the client speaks, preferred first.
var versions = []func(*a2a.AgentInterface) bool{speaksV1, speaksV03}

// speaksV1 reports whether the interface's protocol version is 1.x or
// unstated.
func speaksV1(in *a2a.AgentInterface) bool {
	v := in.ProtocolVersion
	return v == "" || v == "1" || strings.HasPrefix(v, "1.")
}

// speaksV03 reports whether the interface is A2A 0.3 over JSON-RPC, which
// the JSON-RPC transport speaks through package a2av03. 0.3's HTTP+JSON
// and gRPC bindings differ from v1's (paths, service), so those are not.
func speaksV03(in *a2a.AgentInterface) bool {
	return strings.EqualFold(in.ProtocolBinding, a2a.BindingJSONRPC) && isV03(in.ProtocolVersion)
}

// selectInterface picks the interface New calls: Options.Transports in the
// caller's order, or else the card's first interface with a binding the
// client has a transport for (a 1.x one before a 0.3 one, as in
// SelectInterface). Bindings without a transport are skipped.
func (o *Options) selectInterface(card *a2a.AgentCard) (*a2a.AgentInterface, error) {
	if len(o.Transports) > 0 {
		var usable []string
		for _, b := range o.Transports {
			if o.transportFor(b) != nil {
				usable = append(usable, b)
			}
		}
		if len(usable) == 0 {
			return nil, fmt.Errorf("%w: no transport for %s (add one in Options.TransportFactories)", ErrNoInterface, strings.Join(o.Transports, ", "))
		}
		in, err := SelectInterface(card, usable...)
		if err != nil && len(usable) < len(o.Transports) {
			return nil, fmt.Errorf("%w (no transport for the others of %s)", err, strings.Join(o.Transports, ", "))
		}
		return in, err
	}
	for _, speaks := range versions {
		for i := range card.SupportedInterfaces {
			if in := &card.SupportedInterfaces[i]; o.transportFor(in.ProtocolBinding) != nil && speaks(in) {
				return in, nil
			}
		}
	}
	var have []string
	for _, t := range builtinTransports {
		have = append(have, t.binding)
	}
	for b, f := range o.TransportFactories {
		if f != nil && !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, b) }) {
			have = append(have, b)
		}
	}
	slices.Sort(have[len(builtinTransports):])
	return nil, noInterface(card, have)
}

// noInterface says what the card offers and what the client wanted.
func noInterface(card *a2a.AgentCard, want []string) error {
	offers := make([]string, 0, len(card.SupportedInterfaces))
	for _, in := range card.SupportedInterfaces {
		s := in.ProtocolBinding
		if s == "" {
			s = "(no binding)"
		}
		if in.ProtocolVersion != "" {
			s += " " + in.ProtocolVersion
		}
		offers = append(offers, s)
	}
	if len(offers) == 0 {
		offers = append(offers, "nothing")
	}
	return fmt.Errorf("%w: the card offers %s; want %s (protocol version 1.x, or 0.3 over JSONRPC)", ErrNoInterface, strings.Join(offers, ", "), strings.Join(want, " or "))
}

// FindSkill returns the card's skill with id.
func FindSkill(card *a2a.AgentCard, id string) (*a2a.AgentSkill, bool) {
	for i := range card.Skills {
		if card.Skills[i].ID == id {
			return &card.Skills[i], true
		}
	}
	return nil, false
}

// SkillsWithTag returns the card's skills tagged tag (case-insensitive).
func SkillsWithTag(card *a2a.AgentCard, tag string) []*a2a.AgentSkill {
	var out []*a2a.AgentSkill
	for i := range card.Skills {
		if slices.ContainsFunc(card.Skills[i].Tags, func(t string) bool { return strings.EqualFold(t, tag) }) {
			out = append(out, &card.Skills[i])
		}
	}
	return out
}

// FindExtension returns the card's declaration of the extension uri.
func FindExtension(card *a2a.AgentCard, uri string) (*a2a.AgentExtension, bool) {
	for i := range card.Capabilities.Extensions {
		if card.Capabilities.Extensions[i].URI == uri {
			return &card.Capabilities.Extensions[i], true
		}
	}
	return nil, false
}

// RequiredExtensions lists the URIs of the extensions the card marks
// required: a client must activate them (WithExtensions or
// Options.Extensions) or the agent refuses its calls.
func RequiredExtensions(card *a2a.AgentCard) []string {
	var out []string
	for _, e := range card.Capabilities.Extensions {
		if e.Required {
			out = append(out, e.URI)
		}
	}
	return out
}
