package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/internal/app"
	deliverysvc "novaos.dev/novaos/internal/delivery"
)

// deliveryFlagSet holds serve's flags for pull delivery.
type deliveryFlagSet struct {
	maxBody                                         byteSize
	tokenTTL, ackTimeout, heartbeatEvery, maxPollWt *time.Duration
	resumeWindow, clockLeeway, runStaleAfter        *time.Duration
	keyFile                                         *string
}

func deliveryFlags(fs *flag.FlagSet) *deliveryFlagSet {
	d := &deliveryFlagSet{maxBody: byteSize{n: deliverysvc.DefaultMaxBodyBytes}}
	fs.Var(&d.maxBody, "delivery-max-body-bytes", "delivery: largest request body `size` of an agent (a run patch, a message); 413 beyond")
	d.keyFile = fs.String("delivery-key-file", "", "delivery: `file` of the invocation-token key ring (Ed25519, owner-only, created when missing; default <--data>/"+deliverysvc.KeyFile+"); replicas on one database share one")
	d.tokenTTL = fs.Duration("delivery-token-ttl", deliverysvc.DefaultTokenTTL, "delivery: lifetime of an invocation token; an agent that starts a run later renews it")
	d.clockLeeway = fs.Duration("delivery-clock-leeway", deliverysvc.DefaultClockLeeway, "delivery: clock skew allowed on invocation token times: a token is expired at its exp plus this")
	d.ackTimeout = fs.Duration("delivery-ack-timeout", deliverysvc.DefaultAckTimeout, "delivery: how long an event sent to an agent's consumer may go unacknowledged before it is sent again, with a fresh token")
	d.heartbeatEvery = fs.Duration("delivery-heartbeat-interval", deliverysvc.DefaultHeartbeatInterval, "delivery: interval agents are told to send heartbeats at")
	d.runStaleAfter = fs.Duration("delivery-run-stale-after", deliverysvc.DefaultRunStaleAfter, "delivery: how long a run an agent started may go without a sign of life of it (a heartbeat listing it, a patch) before it fails, reason stale; more than two heartbeat intervals")
	d.maxPollWt = fs.Duration("delivery-max-poll-wait", deliverysvc.DefaultMaxPollWait, "delivery: longest wait of an agent's long poll for its next event")
	d.resumeWindow = fs.Duration("delivery-resume-window", deliverysvc.DefaultResumeWindow, "delivery: how long a dropped gateway session may be resumed on this replica; later the agent identifies again")
	return d
}

func (d *deliveryFlagSet) check() string {
	if d.maxBody.n <= 0 || *d.tokenTTL <= 0 || *d.ackTimeout <= 0 || *d.heartbeatEvery <= 0 || *d.maxPollWt <= 0 || *d.resumeWindow <= 0 || *d.clockLeeway <= 0 {
		return "--delivery-max-body-bytes, --delivery-token-ttl, --delivery-clock-leeway, --delivery-ack-timeout, --delivery-heartbeat-interval, --delivery-max-poll-wait and --delivery-resume-window must be positive"
	}
	if *d.runStaleAfter <= 2**d.heartbeatEvery {
		return "--delivery-run-stale-after must be more than twice --delivery-heartbeat-interval: one lost heartbeat must not end a run"
	}
	return ""
}

func (d *deliveryFlagSet) options() app.DeliveryOptions {
	return app.DeliveryOptions{MaxBodyBytes: d.maxBody.n, TokenTTL: *d.tokenTTL, ClockLeeway: *d.clockLeeway, AckTimeout: *d.ackTimeout,
		HeartbeatInterval: *d.heartbeatEvery, RunStaleAfter: *d.runStaleAfter, MaxPollWait: *d.maxPollWt, ResumeWindow: *d.resumeWindow}
}
