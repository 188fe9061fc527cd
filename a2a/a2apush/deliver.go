package a2apush

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/netguard"
)

// Defaults of Options.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultConnectTimeout   = 5 * time.Second
	DefaultMaxResponseBytes = 64 << 10
	DefaultMaxAttempts      = 10
	DefaultMaxAge           = 24 * time.Hour
	DefaultBackoffBase      = time.Second
	DefaultBackoffMax       = 5 * time.Minute
	DefaultConcurrency      = 16
	DefaultPollInterval     = time.Second
	DefaultTokenTTL         = 5 * time.Minute
)

// Signer signs the JWT sent with every notification. *auth.Issuer, the
// platform's key ring, is one.
type Signer interface {
	// SignJWT returns a compact JWS of claims (a JSON object) whose header
	// carries typ and the signing key's kid.
	SignJWT(ctx context.Context, typ string, claims []byte) (string, error)
}

// Resolver finds the addresses of a webhook's host name. *net.Resolver is
// one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options tune a Deliverer. Nil or zero fields mean the defaults.
type Options struct {
	// Policy says which destinations webhooks may reach: checked against
	// the URL's host, and against every address its name resolves to
	// before each connection. Nil means public addresses only.
	Policy *netguard.Policy
	// Resolver resolves webhook host names (net.DefaultResolver).
	Resolver Resolver
	// Signer and Issuer sign a JWT for every notification
	// (a2a.PushClaims, iss Issuer); nil sends none.
	Signer Signer
	Issuer string
	// Open returns the config to deliver to, given the config as the
	// store holds it: where a caller keeps secrets sealed, it opens them.
	// Nil uses the stored config as it is. An error fails the attempt,
	// which is retried like a connection error (another replica, with
	// the right key, may succeed).
	Open func(ctx context.Context, scope a2asrv.Scope, cfg *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, error)
	// Timeout bounds one attempt, from connecting to the end of the
	// response (DefaultTimeout; the spec recommends 10-30s);
	// ConnectTimeout bounds connecting (DefaultConnectTimeout).
	Timeout        time.Duration
	ConnectTimeout time.Duration
	// MaxResponseBytes is how much of a response body is read, then
	// dropped (DefaultMaxResponseBytes); the rest is not read.
	MaxResponseBytes int64
	// MaxAttempts and MaxAge bound the tries at one notification: after
	// MaxAttempts failures (DefaultMaxAttempts), or once it is older than
	// MaxAge (DefaultMaxAge), counted from when it was queued, the stream
	// is dead-lettered. A notification older than MaxAge is never sent,
	// and a failure whose retry would come after MaxAge dead-letters the
	// stream at once instead of scheduling it.
	MaxAttempts int
	MaxAge      time.Duration
	// BackoffBase and BackoffMax time the retries: the n-th failure waits
	// BackoffBase·2^(n-1), at most BackoffMax, less up to half of it at
	// random (DefaultBackoffBase, DefaultBackoffMax). A Retry-After the
	// receiver sends (seconds or an HTTP date) is honoured when it is
	// longer, up to BackoffMax: a receiver cannot park a stream for
	// longer than that.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// Concurrency bounds the deliveries in flight (DefaultConcurrency);
	// one stream has at most one.
	Concurrency int
	// PollInterval is how often the outbox is checked when nothing woke
	// the deliverer (DefaultPollInterval): writes by another process
	// sharing the database are found this way. Wake finds this process's.
	PollInterval time.Duration
	// Lease is how long a claimed notification is the deliverer's before
	// another may take it (default Timeout + ConnectTimeout + 30s).
	Lease time.Duration
	// TokenTTL is the JWT's lifetime (DefaultTokenTTL).
	TokenTTL time.Duration
	// Logger receives deliveries and failures (never a URL, token or
	// credentials); nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// TracerProvider traces each attempt as a client span whose trace
	// context the POST carries (W3C traceparent); nil means
	// otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// Deliverer sends the notifications a PushOutbox holds. Run it once per
// process; several processes may share one outbox.
type Deliverer struct {
	outbox  a2asrv.PushOutbox
	opts    Options
	client  *http.Client
	dialer  *net.Dialer
	wake    chan struct{}
	tracer  trace.Tracer
	metrics *metrics
}

// New returns a Deliverer for outbox; opts may be nil.
func New(outbox a2asrv.PushOutbox, opts *Options) (*Deliverer, error) {
	if outbox == nil {
		return nil, errors.New("a2apush: no outbox")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if (o.Signer == nil) != (o.Issuer == "") {
		return nil, errors.New("a2apush: Options.Signer and Options.Issuer go together")
	}
	if o.Policy == nil {
		o.Policy = &netguard.Policy{}
	}
	if o.Resolver == nil {
		o.Resolver = net.DefaultResolver
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Timeout, DefaultTimeout)
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.MaxAge, DefaultMaxAge)
	def(&o.BackoffBase, DefaultBackoffBase)
	def(&o.BackoffMax, DefaultBackoffMax)
	def(&o.PollInterval, DefaultPollInterval)
	def(&o.Lease, o.Timeout+o.ConnectTimeout+30*time.Second)
	def(&o.TokenTTL, DefaultTokenTTL)
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Lease < o.Timeout+o.ConnectTimeout {
		return nil, fmt.Errorf("a2apush: the lease (%s) must outlast an attempt (%s)", o.Lease, o.Timeout+o.ConnectTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	d := &Deliverer{outbox: outbox, opts: o, wake: make(chan struct{}, 1), tracer: tp.Tracer(ScopeName), metrics: newMetrics()}
	d.dialer = o.Policy.Dialer(&net.Dialer{Timeout: o.ConnectTimeout})
	tr := &http.Transport{
		// No proxy: the guard must see the address a connection reaches.
		Proxy:                 nil,
		DialContext:           d.dial,
		TLSHandshakeTimeout:   o.ConnectTimeout,
		ResponseHeaderTimeout: o.Timeout,
		MaxIdleConns:          o.Concurrency,
		MaxIdleConnsPerHost:   o.Concurrency,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	d.client = &http.Client{
		Transport: tr,
		// A redirect is not followed: the receiver gives its final URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d, nil
}

// Wake makes the deliverer look at the outbox now: call it after a write
// that may have queued a notification. It never blocks.
func (d *Deliverer) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the deliveries in flight,
// which are cut short and released to be tried again at once. It returns
// ctx's error.
func (d *Deliverer) Run(ctx context.Context) error {
	tick := time.NewTicker(d.opts.PollInterval)
	defer tick.Stop()
	done := make(chan struct{}, d.opts.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	inflight := 0
	for {
		for inflight < d.opts.Concurrency && ctx.Err() == nil {
			free := d.opts.Concurrency - inflight
			// A claim is not cut short by shutdown: the store may commit
			// it after the caller gave up, and the streams it leased would
			// then wait a whole lease for another deliverer. A claim that
			// returns after ctx ended is delivered under the ended ctx,
			// which releases each stream to be tried again at once.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			ds, err := d.outbox.ClaimPush(cctx, d.opts.Now(), free, d.opts.Lease)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					d.opts.Logger.Error("a2apush: claim notifications", "err", err)
				}
				break
			}
			for _, del := range ds {
				inflight++
				wg.Go(func() {
					d.deliver(ctx, del)
					done <- struct{}{}
				})
			}
			if len(ds) < free {
				break
			}
		}
		select {
		case <-ctx.Done():
			for ; inflight > 0; inflight-- {
				<-done
			}
			return ctx.Err()
		case <-done:
			inflight--
		case <-d.wake:
		case <-tick.C:
		}
	}
}

// maxRun bounds the notifications of one stream delivered under one
// claim, so streams with much pending take turns with the others.
const maxRun = 32

// deliver makes one attempt at del and records its outcome, then goes on
// with the stream's next notification while there is one (at most maxRun).
func (d *Deliverer) deliver(ctx context.Context, del *a2asrv.PushDelivery) {
	for run := 1; del != nil; run++ {
		st := d.attempt(ctx, del)
		log := d.opts.Logger.With("task_id", del.Config.TaskID, "config_id", del.Config.ID, "seq", del.Seq, "attempt", del.Attempts+1)
		if ctx.Err() != nil {
			// Shutting down: whatever happened, let the next process
			// (or this one, started again) try at once.
			st = a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: d.opts.Now(), Next: d.opts.Now(), Error: "interrupted by shutdown"}
		}
		switch st.Outcome {
		case a2asrv.PushDelivered:
			log.Debug("a2apush: delivered")
			if run < maxRun {
				st.Continue = d.opts.Lease
			}
		case a2asrv.PushRetry:
			log.Info("a2apush: delivery failed; will retry", "err", st.Error, "next", st.Next)
		case a2asrv.PushDead:
			log.Warn("a2apush: delivery given up; the config is dead-lettered", "err", st.Error)
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		next, err := d.outbox.SettlePush(sctx, del, st)
		cancel()
		switch {
		case errors.Is(err, a2asrv.ErrPushLeaseLost):
			log.Info("a2apush: the notification was claimed again meanwhile; the outcome is not recorded", "err", err)
		case err != nil:
			log.Error("a2apush: record delivery outcome", "err", err)
		}
		if st.Outcome == a2asrv.PushDelivered && next == nil {
			d.Wake() // the stream's next notification may be due
		}
		del = next
	}
}

// attempt sends del once and says what became of it, in a span.
func (d *Deliverer) attempt(ctx context.Context, del *a2asrv.PushDelivery) a2asrv.PushSettlement {
	ctx, span := d.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindClient))
	st := d.try(ctx, del)
	if ctx.Err() == nil {
		// An attempt cut short by shutdown is tried again at once, and
		// counted then.
		d.metrics.settled(st.Outcome)
	}
	if span.IsRecording() {
		span.SetAttributes(attrTaskID.String(del.Config.TaskID), attrConfigID.String(del.Config.ID),
			attrAttempt.Int(del.Attempts+1), attrOutcome.String(outcomeName(st.Outcome)))
		if st.Outcome != a2asrv.PushDelivered {
			span.SetStatus(codes.Error, st.Error)
		}
	}
	span.End()
	return st
}

// try sends del once and says what became of it.
func (d *Deliverer) try(ctx context.Context, del *a2asrv.PushDelivery) a2asrv.PushSettlement {
	start := d.opts.Now()
	dead := func(format string, args ...any) a2asrv.PushSettlement {
		return a2asrv.PushSettlement{Outcome: a2asrv.PushDead, At: d.opts.Now(), Error: fmt.Sprintf(format, args...)}
	}
	if age := start.Sub(del.Queued); age > d.opts.MaxAge {
		return dead("gave up: the notification waited %s, more than %s", age.Round(time.Second), d.opts.MaxAge)
	}
	cfg := del.Config
	var (
		status     int
		retryAfter time.Duration
		err        error
	)
	if d.opts.Open != nil {
		// Retried, not dead-lettered: a replica given the wrong key file
		// must not give up streams another replica can deliver.
		if cfg, err = d.opts.Open(ctx, del.Scope, del.Config); err != nil {
			err = fmt.Errorf("the config's credentials cannot be read: %w", err)
		}
	}
	if err == nil {
		status, retryAfter, err = d.post(ctx, del, cfg)
	}
	if err == nil && status >= 200 && status < 300 {
		return a2asrv.PushSettlement{Outcome: a2asrv.PushDelivered, At: d.opts.Now()}
	}
	var msg string
	retry := true
	switch {
	case errors.Is(err, netguard.ErrRefused), errors.Is(err, netguard.ErrMalformed):
		return dead("%v", err)
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		msg = fmt.Sprintf("no answer within %s", d.opts.Timeout)
	case err != nil:
		msg = err.Error()
	default:
		msg = "HTTP " + strconv.Itoa(status)
		// The receiver may take it later: busy, throttled, timed out,
		// failed. Anything else (3xx, other 4xx) it has refused, and
		// will refuse again.
		retry = status == http.StatusRequestTimeout || status == http.StatusTooEarly ||
			status == http.StatusTooManyRequests || status >= 500
	}
	if !retry {
		return dead("%s (not retried)", msg)
	}
	attempts := del.Attempts + 1
	if attempts >= d.opts.MaxAttempts {
		return dead("gave up after %d attempts: %s", attempts, msg)
	}
	wait := d.backoff(attempts)
	if retryAfter > wait {
		wait = min(retryAfter, d.opts.BackoffMax)
	}
	now := d.opts.Now()
	next := now.Add(wait)
	if next.Sub(del.Queued) > d.opts.MaxAge {
		// The retry would find the notification past MaxAge and give up
		// then: give up now, so the dead letter shows at once and the
		// stream is not held for an attempt that will never be made.
		return dead("gave up: a retry in %s would come after the notification's maximum age (%s): %s", wait.Round(time.Second), d.opts.MaxAge, msg)
	}
	return a2asrv.PushSettlement{Outcome: a2asrv.PushRetry, At: now, Next: next, Error: msg}
}

// backoff is the wait after the n-th failure: exponential, capped, with
// jitter so streams that failed together do not retry together.
func (d *Deliverer) backoff(n int) time.Duration {
	w := d.opts.BackoffMax
	if n-1 < 32 {
		if b := d.opts.BackoffBase << (n - 1); b > 0 && b < w {
			w = b
		}
	}
	return w - rand.N(w/2+1)
}

// post sends the notification; err is nil when an HTTP status came back.
// No error carries the URL, which may hold a secret.
func (d *Deliverer) post(ctx context.Context, del *a2asrv.PushDelivery, cfg *a2a.TaskPushNotificationConfig) (status int, retryAfter time.Duration, err error) {
	u, host, err := netguard.ParseURL(cfg.URL)
	if err != nil {
		return 0, 0, err
	}
	if err := d.opts.Policy.CheckHost(host); err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(del.Body))
	if err != nil {
		return 0, 0, errors.New("cannot make the request")
	}
	req.Header.Set("Content-Type", "application/a2a+json")
	req.Header.Set("User-Agent", "novaos-push/1")
	if cfg.Token != "" {
		req.Header.Set(a2a.HeaderPushToken, cfg.Token)
		req.Header.Set(a2a.HeaderPushTokenAlt, cfg.Token)
	}
	auth := cfg.Authentication
	if auth != nil && auth.Scheme != "" {
		req.Header.Set("Authorization", auth.Scheme+" "+auth.Credentials)
	}
	if d.opts.Signer != nil {
		jwt, err := d.sign(ctx, del, cfg)
		if err != nil {
			return 0, 0, err
		}
		req.Header.Set(a2a.HeaderPushSignature, jwt)
		if auth == nil || auth.Scheme == "" {
			req.Header.Set("Authorization", "Bearer "+jwt)
		}
	}
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error's text repeats the URL
		}
		return 0, 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, d.opts.MaxResponseBytes))
	return resp.StatusCode, d.retryAfter(resp.Header.Get("Retry-After")), nil
}

// maxRetryAfter bounds the Retry-After read, so that the duration cannot
// overflow; attempt caps it at BackoffMax in any case.
const maxRetryAfter = (1 << 20) * time.Second

// retryAfter reads a Retry-After value (RFC 9110 §10.2.3): delay seconds,
// or an HTTP date, taken against Options.Now. Anything else, or a time
// not in the future, is 0.
func (d *Deliverer) retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, min(t.Sub(d.opts.Now()), maxRetryAfter))
	}
	return 0
}

// sign makes the notification's JWT.
func (d *Deliverer) sign(ctx context.Context, del *a2asrv.PushDelivery, cfg *a2a.TaskPushNotificationConfig) (string, error) {
	now := d.opts.Now()
	sum := sha256.Sum256(del.Body)
	jti := make([]byte, 16)
	crand.Read(jti)
	claims, err := json.Marshal(a2a.PushClaims{
		Issuer: d.opts.Issuer, Audience: cfg.URL,
		IssuedAt: now.Unix(), Expiry: now.Add(d.opts.TokenTTL).Unix(),
		ID:     base64.RawURLEncoding.EncodeToString(jti),
		TaskID: cfg.TaskID, ConfigID: cfg.ID,
		NotificationID: strconv.FormatInt(del.Seq, 10),
		BodySHA256:     base64.RawURLEncoding.EncodeToString(sum[:]),
	})
	if err != nil {
		return "", err
	}
	jwt, err := d.opts.Signer.SignJWT(ctx, a2a.PushTokenType, claims)
	if err != nil {
		return "", fmt.Errorf("sign the notification: %w", err)
	}
	return jwt, nil
}

// dial connects to a webhook: the name resolved here, and every address
// checked against the policy before it is dialled (the dialer checks it
// once more), so a name that resolves to a refused address is refused
// however it got there.
func (d *Deliverer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("a2apush: port %.8q: %w", portText, netguard.ErrMalformed)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = d.opts.Resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var firstErr error
	for _, a := range addrs {
		if err := d.opts.Policy.CheckAddr(a.Unmap()); err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("a2apush: %s resolves to %w", host, err))
			continue
		}
		c, err := d.dialer.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		firstErr = cmpErr(firstErr, err)
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("resolve %s: no addresses", host)
	}
	return nil, firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
