package execgw

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/internal/instrument"
)

// target is the agent a delivery calls.
type target struct {
	inst   gateway.Instance
	client *a2aclient.Client
	// recipient is the key an instance's secrets are sealed to; the zero
	// value when the agent publishes none.
	recipient usercontext.Recipient
}

// hostedBase is the URL hosted agents are called at in process: it never
// leaves the process, so it names no real host.
const (
	hostedPath = "/agents/"
	hostedBase = "http://novaos.invalid" + hostedPath
)

// target resolves the agent the run's instance points at.
func (s *Service) target(ctx context.Context, run gateway.Run) (*target, error) {
	inst, err := s.store.GetInstance(ctx, run.TenantID, run.InstanceID)
	if isNotFound(err) {
		return nil, permanentf("the instance %s was removed", run.InstanceID)
	}
	if err != nil {
		return nil, err
	}
	t := &target{inst: inst}
	opts := &a2aclient.Options{Logger: s.log, Timeout: time.Minute, Interceptors: s.tel.a2a}
	switch {
	case inst.Hosted != "":
		if s.deps.Hosted == nil {
			return nil, permanentf("the hosted agent %q is not served here", inst.Hosted)
		}
		h, ok := s.deps.Hosted.AgentHandler(inst.Hosted)
		if !ok {
			return nil, permanentf("the hosted agent %q is not served here", inst.Hosted)
		}
		opts.HTTPClient = hostedClient(inst.Hosted, h)
		if t.client, err = a2aclient.NewForURL(hostedBase+inst.Hosted, opts); err != nil {
			return nil, permanentf("the hosted agent %q: %v", inst.Hosted, err)
		}
	default:
		opts.HTTPClient = s.outbound
		opts.Resolver = s.resolver
		if t.client, err = a2aclient.NewFromURL(ctx, inst.URL, opts); err != nil {
			if errors.Is(err, a2aclient.ErrNoInterface) {
				return nil, permanentf("the agent at %s offers no interface this gateway speaks", inst.URL)
			}
			return nil, err
		}
		if inst.AgentID != "" && s.registry != nil {
			if rec, err := s.registry.Get(ctx, inst.AgentID); err == nil {
				if to, err := rec.Recipient(""); err == nil {
					t.recipient = to
				}
			}
		}
	}
	return t, nil
}

// outboundClient is the HTTP client agents are called with: every
// address is checked when it is dialled, so a card cannot send the
// gateway to a host the policy refuses (a DNS rebinding included).
func outboundClient(dialer *net.Dialer) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	tr.Proxy = nil
	tr.MaxIdleConnsPerHost = 64
	// Card and key fetches carry the trace context too.
	return &http.Client{Transport: instrument.Transport(tr)}
}

func isNotFound(err error) bool { return errors.Is(err, gateway.ErrNotFound) }

var errNoSealer = errors.New("execgw: this server keeps no sealing key")

// hostedClient calls the hosted agent name, served by h at its root,
// without a socket.
func hostedClient(name string, h http.Handler) *http.Client {
	return &http.Client{Transport: httpapi.HandlerTransport(http.StripPrefix(hostedPath+name, h))}
}
