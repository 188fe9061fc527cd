package usercontext

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"novaos.dev/novaos/a2a"
)

// PlatformContextKey is the request metadata key of the platform's
// execution context, a JSON object whose tenant_id, instance_id and run_id
// the agent binds delivered secrets to. It is agent.ContextMetadataKey;
// this package cannot import package agent, which imports it.
const PlatformContextKey = "novaos.dev/context"

// Activation is what the call sending a request Attach prepared must
// carry: the extensions it activates. Without it the agent ignores the
// payload. With a2aclient, send
// a2aclient.WithExtensions(act.Extensions...); over plain HTTP, add
// Header() to the request's headers.
type Activation struct {
	// Extensions are the URIs the call activates (A2A's A2A-Extensions
	// service parameter): URI.
	Extensions []string
}

// Header returns the activation as the A2A-Extensions HTTP header.
func (a Activation) Header() http.Header {
	h := http.Header{}
	if len(a.Extensions) > 0 {
		h.Set(a2a.HeaderExtensions, strings.Join(a.Extensions, ", "))
	}
	return h
}

// SealRequest seals values for the recipient, bound to run and to the
// names they are filed under, and attaches them to req (see Attach). It is
// the sealing side's one step:
//
//	req := a2aclient.TextRequest("send the report", "", "")
//	act, err := usercontext.SealRequest(req, recipient, run, secrets)
//	if err != nil { … }
//	res, err := client.SendMessage(ctx, req, a2aclient.WithExtensions(act.Extensions...))
//
// Errors name a secret, never its value.
func SealRequest(req *a2a.SendMessageRequest, to Recipient, run Run, values map[string]Secret) (Activation, error) {
	if err := checkAttach(req, run); err != nil {
		return Activation{}, err
	}
	p, err := SealPayload(to, run, values)
	if err != nil {
		return Activation{}, err
	}
	return Attach(req, run, p)
}

// Attach puts p, sealed for run, into req and returns the Activation the
// call sending req must carry (the A2A-Extensions header naming URI);
// without it the agent ignores the payload. It writes request metadata,
// which the agent reads before message metadata:
//
//   - metadata[URI] = p (nil p: an empty payload, the extension active
//     with no secrets);
//   - metadata[PlatformContextKey]: run's tenant_id, instance_id and
//     run_id, set on the platform context already there (its other
//     members are kept, the map itself is copied) or on a new one.
//
// The agent opens with the tenant the server verified for the caller
// when there is one, else the request's tenant (a2aclient sends the agent
// interface's tenant when req names none), else the platform context's:
// run.TenantID must be that tenant. A req naming another tenant than run
// is refused with ErrDelivery, as is an incomplete run.
func Attach(req *a2a.SendMessageRequest, run Run, p *Payload) (Activation, error) {
	if err := checkAttach(req, run); err != nil {
		return Activation{}, err
	}
	pc, err := platformContext(req.Metadata[PlatformContextKey])
	if err != nil {
		return Activation{}, err
	}
	pc["tenant_id"], pc["instance_id"], pc["run_id"] = run.TenantID, run.InstanceID, run.RunID
	if p == nil {
		p = &Payload{Secrets: map[string]Envelope{}}
	}
	if req.Metadata == nil {
		req.Metadata = map[string]any{}
	}
	req.Metadata[PlatformContextKey] = pc
	req.Metadata[URI] = p
	return Activation{Extensions: []string{URI}}, nil
}

func checkAttach(req *a2a.SendMessageRequest, run Run) error {
	if req == nil {
		return errors.New("usercontext: attach: no request")
	}
	// The name is a placeholder: only the run's fields are in question.
	if err := run.Delivery("-").check(); err != nil {
		return fmt.Errorf("usercontext: attach: %w", err)
	}
	if req.Tenant != "" && req.Tenant != run.TenantID {
		return fmt.Errorf("%w: the request names tenant %q, the run tenant %q", ErrDelivery, req.Tenant, run.TenantID)
	}
	return nil
}

// platformContext returns a copy of the platform context found in request
// metadata as a JSON object, or a new one when there is none.
func platformContext(v any) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		if x == nil {
			return map[string]any{}, nil
		}
		return maps.Clone(x), nil
	case string:
		v = json.RawMessage(x)
	}
	b, err := json.Marshal(v)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || m == nil {
		return nil, fmt.Errorf("usercontext: attach: metadata[%s] is not a JSON object", PlatformContextKey)
	}
	return m, nil
}
