package platformtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/dpop"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/auth"
	deliverysvc "novaos.dev/novaos/internal/delivery"
	"novaos.dev/novaos/secret"
)

// RemoteOptions say how to reach a running platform and what its times
// are.
type RemoteOptions struct {
	// URL is the platform's base URL.
	URL string
	// AdminToken and Tenant are an operator's: the server installs its
	// agents, issues their tokens, starts runs and rewinds consumers
	// with them.
	AdminToken secret.Value
	Tenant     string
	// KeyFile is the platform's invocation-token key ring (delivery.key
	// in its data directory), which ForgeToken signs forgeries with; a
	// platform on another machine has none to give, and ForgeToken then
	// fails.
	KeyFile string
	// Timing is what the platform was started with
	// (--delivery-token-ttl, --delivery-clock-leeway,
	// --delivery-ack-timeout, --delivery-run-stale-after); its zero
	// fields are the defaults.
	Timing Timing
}

// RemoteServer is a running NovaOS platform as a ScenarioServer: it
// installs two pull agents of its own in the tenant, and its time is the
// real time, so PassTime waits. A scenario against it takes as long as
// the times it lets pass: start the platform with short ones.
type RemoteServer struct {
	t       testing.TB
	o       RemoteOptions
	admin   *gateway.Client
	agentID string
	otherID string
	creds   adapter.Credentials
	agent   *adapter.Client
	keys    signer
	issuer  string
}

// NewRemoteServer installs the server's agents on the platform o names
// (removed again at the end of the test) and issues the first one's API
// token, bound to a new DPoP key.
func NewRemoteServer(t testing.TB, o RemoteOptions) *RemoteServer {
	t.Helper()
	o.Timing = Timing{TokenTTL: orDefault(o.Timing.TokenTTL, deliverysvc.DefaultTokenTTL),
		ClockLeeway:   orDefault(o.Timing.ClockLeeway, deliverysvc.DefaultClockLeeway),
		AckTimeout:    orDefault(o.Timing.AckTimeout, deliverysvc.DefaultAckTimeout),
		RunStaleAfter: orDefault(o.Timing.RunStaleAfter, deliverysvc.DefaultRunStaleAfter)}
	r := &RemoteServer{t: t, o: o}
	var err error
	if r.admin, err = gateway.NewClient(o.URL, &gateway.ClientOptions{Token: o.AdminToken, Tenant: o.Tenant}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	suffix := randomSuffix()
	r.agentID = r.install(ctx, AgentName+"-"+suffix)
	r.otherID = r.install(ctx, OtherAgent+"-"+suffix)

	key, err := dpop.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var grant delivery.TokenGrant
	if err := r.operator(ctx, http.MethodPost, delivery.TokensPath(r.agentID), delivery.TokenCreate{DPoPJKT: key.Thumbprint(),
		Name: "platformtest"}, &grant); err != nil {
		t.Fatal(err)
	}
	r.creds = adapter.Credentials{APIToken: secret.New(grant.Token), DPoP: key}
	if r.agent, err = adapter.NewClient(o.URL, r.creds, nil); err != nil {
		t.Fatal(err)
	}
	disc, err := r.agent.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.issuer = disc.Issuer
	if o.KeyFile != "" {
		ring, err := auth.Open(o.KeyFile, auth.Options{Issuer: disc.Issuer, Algorithm: auth.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		r.keys = ring
	}
	return r
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (r *RemoteServer) operator(ctx context.Context, method, path string, in, out any) error {
	return operatorCall(ctx, r.o.URL, r.o.AdminToken, r.o.Tenant, method, path, in, out)
}

// install adds a pull instance to the tenant, removed when the test ends.
func (r *RemoteServer) install(ctx context.Context, name string) string {
	inst, err := r.admin.Install(ctx, gateway.InstallRequest{Name: name, Delivery: gateway.DeliveryPull})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = r.admin.RemoveInstance(context.Background(), inst.ID) })
	return inst.ID
}

// URL is the platform's base URL.
func (r *RemoteServer) URL() string { return r.o.URL }

// AgentID is the agent whose API token Credentials holds; OtherAgentID
// is a second agent of the tenant.
func (r *RemoteServer) AgentID() string      { return r.agentID }
func (r *RemoteServer) OtherAgentID() string { return r.otherID }

// Credentials are the agent's API token and DPoP key.
func (r *RemoteServer) Credentials() adapter.Credentials { return r.creds }

// AdapterClock is the real clock.
func (r *RemoteServer) AdapterClock() adapter.Clock { return adapter.SystemClock{} }

// PassTime waits d.
func (r *RemoteServer) PassTime(ctx context.Context, d time.Duration) {
	_ = adapter.SystemClock{}.Sleep(ctx, d)
}

// Timing is the platform's times, as RemoteOptions gave them.
func (r *RemoteServer) Timing() Timing { return r.o.Timing }

// Trigger starts a run of the agent as the tenant's operator.
func (r *RemoteServer) Trigger(ctx context.Context, text string) (Triggered, error) {
	res, err := r.admin.Execute(ctx, gateway.ExecuteRequest{InstanceID: r.agentID, Input: text})
	if err != nil {
		return Triggered{}, err
	}
	return Triggered{RunID: res.RunID, ThreadID: res.ThreadID, MessageID: res.RunID + "/1"}, nil
}

// ForgeToken makes a forged invocation token for a run, signed (where
// the variant is signed) with the key ring RemoteOptions.KeyFile names.
func (r *RemoteServer) ForgeToken(ctx context.Context, runID string, v Variant) (string, error) {
	if r.keys == nil {
		return "", errors.New("platformtest: no RemoteOptions.KeyFile to forge tokens with")
	}
	run, err := r.admin.GetRun(ctx, runID)
	if err != nil {
		return "", err
	}
	return forge(ctx, r.keys, r.issuer, *run, v, time.Now(), r.o.Timing.TokenTTL)
}

// RunState is a run as its agent sees it, read by the operator.
func (r *RemoteServer) RunState(ctx context.Context, runID string) (delivery.Run, error) {
	run, err := r.admin.GetRun(ctx, runID)
	if err != nil {
		return delivery.Run{}, err
	}
	return deliverysvc.View(*run), nil
}

// WaitRun reads the run until cond holds of it, or ctx ends.
func (r *RemoteServer) WaitRun(ctx context.Context, runID string, cond func(delivery.Run) bool) (delivery.Run, error) {
	var last delivery.Run
	err := waitFor(ctx, func() bool {
		run, err := r.RunState(ctx, runID)
		if err != nil {
			return false
		}
		last = run
		return cond(run)
	})
	if err != nil {
		return last, fmt.Errorf("platformtest: run %s is %s (%s): %w", runID, last.State, last.StateReason, err)
	}
	return last, nil
}

// ConsumerState is a consumer of the agent, as the agent reads it.
func (r *RemoteServer) ConsumerState(ctx context.Context, consumer string) (delivery.ConsumerState, error) {
	return r.agent.ConsumerState(ctx, r.agentID, consumer)
}

// WaitConsumer waits until the agent's consumer exists.
func (r *RemoteServer) WaitConsumer(ctx context.Context, consumer string) error {
	return waitFor(ctx, func() bool {
		_, err := r.ConsumerState(ctx, consumer)
		return err == nil
	})
}

// Restart rewinds the consumer to ackedSeq (rewindConsumer), as a
// platform restored from a backup would stand.
func (r *RemoteServer) Restart(ctx context.Context, consumer string, ackedSeq int64) error {
	return r.operator(ctx, http.MethodPost, delivery.ConsumerRewindPath(r.agentID, consumer), delivery.ConsumerRewind{AckedSeq: ackedSeq}, nil)
}

var _ ScenarioServer = (*RemoteServer)(nil)
