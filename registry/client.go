package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"weak"

	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
)

// APIPath is where a NovaOS server serves the registry.
const APIPath = "/api/v1/agents"

// maxResponseBytes bounds what the Client reads of one response.
const maxResponseBytes = 16 << 20

// ClientOptions tune NewClient. Nil means the defaults.
type ClientOptions struct {
	// HTTPClient sends the requests (default http.DefaultClient).
	HTTPClient *http.Client
	// Header is added to every request.
	Header http.Header
	// AdminToken, when set, is the server's admin token, sent as
	// "Authorization: Bearer <token>" with writes (Register, Update,
	// Delete) and never with reads: reads are open, and a token is not
	// handed to every server a listing is asked of. It never appears in an
	// error. It replaces an Authorization in Header for writes.
	AdminToken secret.Value
	// Policy is applied to the URL of every record the Client registers
	// or updates and of every record it connects to, and again to the
	// address each connection to an agent is dialled at (so a public name
	// that resolves to 127.0.0.1 is refused; see Connect). Nil means the
	// zero Policy: any public host, no loopback or private address.
	Policy *Policy
}

// Client talks to an agent registry over HTTP (the reference SDK's
// AgentDNSClient). It is safe for concurrent use.
type Client struct {
	base   string // server base URL + APIPath
	http   *http.Client
	header http.Header
	token  secret.Value
	policy *Policy

	// dialGuardOnce builds dialGuard, the default transport for agent
	// connections with the Policy checked at dial time, shared by every
	// Connect that brings no transport of its own.
	dialGuardOnce sync.Once
	dialGuard     *http.Transport

	// guardedMu guards guardedTr: the guarded clone of each caller's
	// *http.Transport, so the Connects that bring one share one pool of
	// connections instead of leaving a clone's idle ones behind each.
	guardedMu sync.Mutex
	guardedTr map[weak.Pointer[http.Transport]]*http.Transport
}

// NewClient returns a client for the registry of the NovaOS server at
// serverURL (for example "http://127.0.0.1:8080"); the API lives under
// APIPath there.
func NewClient(serverURL string, opts *ClientOptions) (*Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("registry: server URL %q: want an absolute http:// or https:// URL", serverURL)
	}
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	return &Client{
		base:   strings.TrimSuffix(serverURL, "/") + APIPath,
		http:   o.HTTPClient,
		header: o.Header.Clone(),
		token:  o.AdminToken,
		policy: o.Policy,
	}, nil
}

// Policy is the policy the client applies to agent URLs (nil: the zero
// Policy).
func (c *Client) Policy() *Policy { return c.policy }

// ListQuery filters and pages a listing or a search. Zero values mean no
// filter and the server's default page size (50, at most 200).
type ListQuery struct {
	PageSize  int
	PageToken string
	Status    string
	Tag       string
	Domain    string
	// Name keeps agents whose name contains it (case-insensitive).
	Name string
}

// Page is one page of agents, ordered by name.
type Page struct {
	Agents []*Agent `json:"agents"`
	// NextPageToken fetches the next page; empty on the last one.
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// FindQuery asks for agents by capability.
type FindQuery struct {
	Capabilities []string
	// Mode is MatchAll (the default) or MatchAny.
	Mode MatchMode
	// Fuzzy matches by Similarity with Threshold (default 0.8) instead of
	// equal normalized names.
	Fuzzy     bool
	Threshold float64
	// Status, Tag, Domain and Name filter as in ListQuery.
	Status string
	Tag    string
	Domain string
	Name   string
}

func (q *ListQuery) values(v url.Values) url.Values {
	if q == nil {
		return v
	}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.PageSize > 0 {
		v.Set("pageSize", strconv.Itoa(q.PageSize))
	}
	set("pageToken", q.PageToken)
	set("status", q.Status)
	set("tag", q.Tag)
	set("domain", q.Domain)
	set("name", q.Name)
	return v
}

// List returns one page of agents.
func (c *Client) List(ctx context.Context, q *ListQuery) (*Page, error) {
	var p Page
	if err := c.do(ctx, http.MethodGet, c.base+query(q.values(url.Values{})), nil, &p); err != nil {
		return nil, fmt.Errorf("registry: list: %w", err)
	}
	return &p, nil
}

// Search returns one page of the agents whose name, description,
// capabilities, tags or domains contain text (case-insensitive; every
// white-space separated word must occur).
func (c *Client) Search(ctx context.Context, text string, q *ListQuery) (*Page, error) {
	v := q.values(url.Values{})
	v.Set("q", text)
	var p Page
	if err := c.do(ctx, http.MethodGet, c.base+"/search"+query(v), nil, &p); err != nil {
		return nil, fmt.Errorf("registry: search: %w", err)
	}
	return &p, nil
}

// All iterates over every agent of a listing (search with a non-empty
// text), fetching pages as it goes. q.PageToken is ignored.
func (c *Client) All(ctx context.Context, text string, q *ListQuery) iter.Seq2[*Agent, error] {
	return func(yield func(*Agent, error) bool) {
		var cur ListQuery
		if q != nil {
			cur = *q
		}
		cur.PageToken = ""
		for {
			var (
				p   *Page
				err error
			)
			if text != "" {
				p, err = c.Search(ctx, text, &cur)
			} else {
				p, err = c.List(ctx, &cur)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			for _, a := range p.Agents {
				if !yield(a, nil) {
					return
				}
			}
			if p.NextPageToken == "" {
				return
			}
			cur.PageToken = p.NextPageToken
		}
	}
}

// Find returns the agents matching q, best score first.
func (c *Client) Find(ctx context.Context, q FindQuery) ([]MatchResult, error) {
	v := url.Values{}
	for _, cp := range q.Capabilities {
		v.Add("capability", cp)
	}
	if q.Mode != "" {
		v.Set("mode", string(q.Mode))
	}
	if q.Fuzzy {
		v.Set("fuzzy", "true")
	}
	if q.Threshold > 0 {
		v.Set("threshold", strconv.FormatFloat(q.Threshold, 'g', -1, 64))
	}
	for k, s := range map[string]string{"status": q.Status, "tag": q.Tag, "domain": q.Domain, "name": q.Name} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var out struct {
		Matches []MatchResult `json:"matches"`
	}
	if err := c.do(ctx, http.MethodGet, c.base+"/find"+query(v), nil, &out); err != nil {
		return nil, fmt.Errorf("registry: find: %w", err)
	}
	return out.Matches, nil
}

// Get returns the agent with this id or name; the error wraps ErrNotFound
// when there is none.
func (c *Client) Get(ctx context.Context, ref string) (*Agent, error) {
	var a Agent
	if err := c.do(ctx, http.MethodGet, c.refURL(ref), nil, &a); err != nil {
		return nil, fmt.Errorf("registry: get %s: %w", ref, err)
	}
	return &a, nil
}

// Register adds an agent and returns the stored record (with its id and
// timestamps). The Client validates a first, with its Policy, and sends
// nothing if that fails.
func (c *Client) Register(ctx context.Context, a *Agent) (*Agent, error) {
	if err := Validate(a, c.policy); err != nil {
		return nil, fmt.Errorf("registry: register: %w", err)
	}
	var out Agent
	if err := c.do(ctx, http.MethodPost, c.base, a, &out); err != nil {
		return nil, fmt.Errorf("registry: register %s: %w", a.Name, err)
	}
	return &out, nil
}

// Update replaces the record with this id or name by a (its Name may
// rename the agent; an empty Name keeps it) and returns the stored record.
func (c *Client) Update(ctx context.Context, ref string, a *Agent) (*Agent, error) {
	check := a
	if a.Name == "" {
		cp := *a
		cp.Name = "placeholder" // only the other fields are checked
		check = &cp
	}
	if err := Validate(check, c.policy); err != nil {
		return nil, fmt.Errorf("registry: update %s: %w", ref, err)
	}
	var out Agent
	if err := c.do(ctx, http.MethodPut, c.refURL(ref), a, &out); err != nil {
		return nil, fmt.Errorf("registry: update %s: %w", ref, err)
	}
	return &out, nil
}

// Delete removes the agent with this id or name.
func (c *Client) Delete(ctx context.Context, ref string) error {
	if err := c.do(ctx, http.MethodDelete, c.refURL(ref), nil, nil); err != nil {
		return fmt.Errorf("registry: delete %s: %w", ref, err)
	}
	return nil
}

// Resolve looks up the agent with this id or name and checks its URL
// against the client's Policy: what a caller does before dialling it.
func (c *Client) Resolve(ctx context.Context, ref string) (*Agent, error) {
	a, err := c.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := c.policy.Check(a.URL); err != nil {
		return nil, fmt.Errorf("registry: agent %s: %w", ref, err)
	}
	return a, nil
}

func (c *Client) refURL(ref string) string { return c.base + "/" + url.PathEscape(ref) }

func query(v url.Values) string {
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

func (c *Client) do(ctx context.Context, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json, "+ProblemContentTypeHeader)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !c.token.IsZero() && method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Authorization", "Bearer "+c.token.Reveal())
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return err
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("response larger than %d bytes", maxResponseBytes)
	}
	if resp.StatusCode >= 300 {
		return problemFrom(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// problemFrom turns an error response into a *Problem; a body that is not
// problem+json still gives one with the status.
func problemFrom(resp *http.Response, data []byte) error {
	p := &Problem{}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == ProblemContentTypeHeader || mt == "application/json" {
		if err := json.Unmarshal(data, p); err != nil {
			p = &Problem{}
		}
	}
	p.Status = resp.StatusCode
	if p.Title == "" {
		p.Title = http.StatusText(resp.StatusCode)
	}
	if p.Type == "" {
		p.Type = "about:blank"
	}
	return p
}

var _ error = (*Problem)(nil)

// guardTransport returns rt (nil: http.DefaultTransport) with the Policy's
// address classes checked when a connection to an agent is dialled, where
// the URL check cannot see: what a name resolves to, now. The default
// transport is cloned with its dial function replaced by a net.Dialer
// with the same timeouts that refuses the address before connecting (its
// own dial function would connect first: a TCP handshake with
// 169.254.169.254 is already a request). A caller's *http.Transport is
// cloned once per Client: its own DialContext or DialTLSContext, if set,
// dials and the connection's remote address is checked before anything is
// sent on it; otherwise the refusing net.Dialer dials. Connections to the
// transport's proxy are exempt (the operator chose it; the proxy resolves
// the target, and only the URL check applies). Any other RoundTripper is
// returned as it is: it dials its own way, and only the URL and redirect
// checks apply.
func (c *Client) guardTransport(rt http.RoundTripper) http.RoundTripper {
	if rt == nil || rt == http.DefaultTransport {
		c.dialGuardOnce.Do(func() {
			if t, ok := http.DefaultTransport.(*http.Transport); ok {
				t = t.Clone()
				t.DialContext = nil // guardedTransport's refusing dialer
				c.dialGuard = guardedTransport(t, c.policy.Guard())
			}
		})
		if c.dialGuard == nil {
			return rt
		}
		return c.dialGuard
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return rt
	}
	key := weak.Make(t)
	c.guardedMu.Lock()
	defer c.guardedMu.Unlock()
	if g, ok := c.guardedTr[key]; ok {
		return g
	}
	g := guardedTransport(t, c.policy.Guard())
	if c.guardedTr == nil {
		c.guardedTr = make(map[weak.Pointer[http.Transport]]*http.Transport)
	}
	c.guardedTr[key] = g
	// Keyed weakly, so a caller's transport dropped after use takes its
	// clone (and the clone's idle connections) with it.
	runtime.AddCleanup(t, c.dropGuarded, key)
	return g
}

// dropGuarded forgets the guarded clone of a transport that is gone.
func (c *Client) dropGuarded(key weak.Pointer[http.Transport]) {
	c.guardedMu.Lock()
	g := c.guardedTr[key]
	delete(c.guardedTr, key)
	c.guardedMu.Unlock()
	if g != nil {
		g.CloseIdleConnections()
	}
}

func guardedTransport(t *http.Transport, g *netguard.Policy) *http.Transport {
	return g.GuardTransport(t, &netguard.TransportOptions{WrapRefusal: func(err error) error {
		return fmt.Errorf("registry: %w: %w", ErrURLNotAllowed, err)
	}})
}
