package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"novaos.dev/novaos/a2a/a2aclient"
)

// Connect discovers an agent and returns an A2A client for it (the
// reference SDK's discover_and_connect): it looks ref (id or name) up,
// checks the record's URL against the client's Policy, fetches the agent
// card from under that URL, and checks the card's JSON-RPC interface URL
// against the Policy too, since that is where the returned client will
// send its requests and credentials. Redirects, for the card fetch and for
// every later call, must also pass the Policy.
//
// opts configure the A2A client (nil: a2aclient's defaults). A Resolver in
// opts is used as is; otherwise Connect makes one that shares the
// client's guarded HTTP client.
func (c *Client) Connect(ctx context.Context, ref string, opts *a2aclient.Options) (*a2aclient.Client, error) {
	a, err := c.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return c.ConnectAgent(ctx, a, opts)
}

// ConnectAgent is Connect for a record already in hand (from List, Search
// or Find): it checks the record's URL against the Policy and connects.
func (c *Client) ConnectAgent(ctx context.Context, a *Agent, opts *a2aclient.Options) (*a2aclient.Client, error) {
	ref := a.Name
	if err := c.policy.Check(a.URL); err != nil {
		return nil, fmt.Errorf("registry: agent %s: %w", ref, err)
	}
	var o a2aclient.Options
	if opts != nil {
		o = *opts
	}
	o.HTTPClient = c.guarded(o.HTTPClient)
	if o.Resolver == nil {
		o.Resolver = a2aclient.NewResolver(&a2aclient.ResolverOptions{HTTPClient: o.HTTPClient})
	}
	ac, err := a2aclient.NewFromURL(ctx, a.URL, &o)
	if err != nil {
		return nil, fmt.Errorf("registry: connect %s: %w", ref, err)
	}
	if err := c.policy.Check(ac.URL()); err != nil {
		return nil, fmt.Errorf("registry: connect %s: the card's interface URL: %w", ref, err)
	}
	return ac, nil
}

// guarded returns a copy of hc (nil: a default client) whose redirects must
// pass the client's Policy and whose transport checks it again at dial
// time (guardTransport).
func (c *Client) guarded(hc *http.Client) *http.Client {
	var g http.Client
	if hc != nil {
		g = *hc
	}
	g.Transport = c.guardTransport(g.Transport)
	next := g.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := c.policy.Check(req.URL.String()); err != nil {
			return fmt.Errorf("registry: redirect refused: %w", err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("registry: stopped after 10 redirects")
		}
		return nil
	}
	return &g
}
