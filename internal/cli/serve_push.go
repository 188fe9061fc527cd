package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/a2a/a2apush"
)

// pushFlagSet holds serve's flags for push-notification delivery (README:
// Push notifications).
type pushFlagSet struct {
	timeout, connectTimeout, maxAge, backoffBase, backoffMax *time.Duration
	pollInterval, lease, tokenTTL                            *time.Duration
	maxAttempts, concurrency                                 *int
	maxResponse                                              byteSize
}

func pushFlags(fs *flag.FlagSet) *pushFlagSet {
	p := &pushFlagSet{maxResponse: byteSize{n: a2apush.DefaultMaxResponseBytes}}
	p.timeout = fs.Duration("push-timeout", a2apush.DefaultTimeout, "push: time one delivery attempt may take, connecting to the end of the answer; past it the attempt failed and is retried")
	p.connectTimeout = fs.Duration("push-connect-timeout", a2apush.DefaultConnectTimeout, "push: time connecting to a webhook (and its TLS handshake) may take")
	fs.Var(&p.maxResponse, "push-max-response-bytes", "push: `size` of a webhook's answer read; the rest is not")
	p.maxAttempts = fs.Int("push-max-attempts", a2apush.DefaultMaxAttempts, "push: failed attempts at one notification after which the config is dead-lettered")
	p.maxAge = fs.Duration("push-max-age", a2apush.DefaultMaxAge, "push: how long one notification may wait to be delivered before the config is dead-lettered")
	p.backoffBase = fs.Duration("push-backoff-base", a2apush.DefaultBackoffBase, "push: wait after a first failed attempt; it doubles with each failure, less up to half at random")
	p.backoffMax = fs.Duration("push-backoff-max", a2apush.DefaultBackoffMax, "push: longest wait between two attempts, a webhook's Retry-After included")
	p.concurrency = fs.Int("push-concurrency", a2apush.DefaultConcurrency, "push: deliveries in flight at once (one per config at most)")
	p.pollInterval = fs.Duration("push-poll-interval", a2apush.DefaultPollInterval, "push: how often the outbox is checked for notifications another replica queued (this server's own are sent at once)")
	p.lease = fs.Duration("push-lease", 0, "push: how long a notification claimed by a server is its own before another replica may take it (0: --push-timeout + --push-connect-timeout + 30s)")
	p.tokenTTL = fs.Duration("push-token-ttl", a2apush.DefaultTokenTTL, "push: lifetime of the JWT signed for each attempt")
	return p
}

// check reports a flag combination that cannot work.
func (p *pushFlagSet) check() string {
	switch {
	case *p.timeout <= 0 || *p.connectTimeout <= 0 || *p.maxAge <= 0 || *p.backoffBase <= 0 || *p.backoffMax <= 0 ||
		*p.pollInterval <= 0 || *p.tokenTTL <= 0:
		return "--push-timeout, --push-connect-timeout, --push-max-age, --push-backoff-base, --push-backoff-max, --push-poll-interval and --push-token-ttl must be positive"
	case *p.maxAttempts <= 0 || *p.concurrency <= 0 || p.maxResponse.n <= 0:
		return "--push-max-attempts, --push-concurrency and --push-max-response-bytes must be positive"
	case *p.backoffBase > *p.backoffMax:
		return "--push-backoff-base must not exceed --push-backoff-max"
	case *p.lease < 0 || *p.lease > 0 && *p.lease < *p.timeout+*p.connectTimeout:
		return "--push-lease must outlast an attempt (--push-timeout + --push-connect-timeout)"
	}
	return ""
}

// options are the flags as the deliverer's options; the server fills in
// its policy, signer and logger.
func (p *pushFlagSet) options() a2apush.Options {
	return a2apush.Options{
		Timeout: *p.timeout, ConnectTimeout: *p.connectTimeout, MaxResponseBytes: p.maxResponse.n,
		MaxAttempts: *p.maxAttempts, MaxAge: *p.maxAge, BackoffBase: *p.backoffBase, BackoffMax: *p.backoffMax,
		Concurrency: *p.concurrency, PollInterval: *p.pollInterval, Lease: *p.lease, TokenTTL: *p.tokenTTL,
	}
}
