package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/secret"
)

// traceMeta is the trace context of ctx's span as a call's _meta, as
// MCP's conventions carry it (a stdio server sees no headers); nil when
// ctx has none.
func traceMeta(ctx context.Context) mcp.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	meta := make(mcp.Meta, len(carrier))
	for k, v := range carrier {
		meta[k] = v
	}
	return meta
}

// headerTransport sends an http server's requests with its registration's
// headers, to its own host only, and bounds its answers.
type headerTransport struct {
	base    http.RoundTripper
	host    string // the registered URL's host[:port]
	headers map[string]secret.Value
	most    int64
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != t.host {
		// Never: the client only posts to the endpoint, and redirects are
		// refused. A credential goes to its own server or nowhere.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("upstream: a request to another host than the registered one: %w", errRedirect)
	}
	r := req.Clone(req.Context())
	for name, v := range t.headers {
		r.Header.Set(name, v.Reveal())
	}
	// The call's trace context (the gateway's span) goes with it.
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: t.most}
	return resp, nil
}

// limitedBody fails a body read past its bound.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body that ends exactly at the bound from
		// one that goes on.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
