package schedsvc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/heartbeat/cron"
	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/resilience"
)

// Run fires the schedules until ctx ends. It wakes at the earliest next
// run of any config, at once when a config changes through this server,
// and every PollEvery to see what other servers changed; each wake is a
// pass over the due configs and the ticks whose server died.
func (s *Service) Run(ctx context.Context) {
	for ctx.Err() == nil {
		passed, more := s.pass(ctx)
		if more {
			continue // a full batch: more may be due
		}
		now := s.clock.Now()
		wake := now.Add(s.o.PollEvery)
		next, ok, err := s.store.NextRun(ctx)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.log.Warn("schedules: read the next run", "err", err)
			}
		case ok && !next.After(now) && next.After(passed):
			continue // it came due during the pass
		case ok && next.After(now) && next.Before(wake):
			wake = next
		}
		// A config still due that the pass saw could not be claimed (the
		// store failed): it is tried again at the next poll.
		if s.idle != nil {
			s.idle(now)
		}
		at, stop := s.clock.At(wake)
		select {
		case <-ctx.Done():
		case <-s.kick:
		case <-at:
		}
		stop()
	}
}

// pass handles the fires whose server died and the configs due at now,
// its time, and returns once the runs it started are settled; more says
// a batch was full and handled, so more may be due.
func (s *Service) pass(ctx context.Context) (now time.Time, more bool) {
	now = s.clock.Now()
	var starts []*pending
	stale, err := s.store.Stale(ctx, now, s.o.Batch)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("schedules: read the ticks left claimed", "err", err)
	}
	for i := range stale {
		if p := s.takeOver(ctx, &stale[i], now); p != nil {
			starts = append(starts, p)
		}
	}
	due, err := s.store.Due(ctx, now, s.o.Batch)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("schedules: read the due configs", "err", err)
	}
	moved := 0
	for i := range due {
		p, ok := s.claim(ctx, &due[i], now)
		if ok {
			moved++
		}
		if p != nil {
			starts = append(starts, p)
		}
	}
	s.startAll(ctx, starts)
	if counts, err := s.store.Count(ctx); err == nil {
		s.tel.setCounts(counts)
	}
	return now, len(due) == s.o.Batch && moved > 0
}

// pending is a claimed tick whose run is to start.
type pending struct {
	rec    heartbeat.Record
	fire   heartbeat.Fire
	limits Limits
	span   trace.Span
	ctx    context.Context
}

// startAll starts the runs of ps, at most MaxConcurrentFires at once.
func (s *Service) startAll(ctx context.Context, ps []*pending) {
	sem := make(chan struct{}, s.o.MaxConcurrentFires)
	var wg sync.WaitGroup
	for _, p := range ps {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.start(p)
		})
	}
	wg.Wait()
}

// ticks are the due ticks of a config, from its NextRunAt to now.
type ticks struct {
	first, last time.Time // the first and the latest due tick
	prev        time.Time // the one before last (zero when count is 1)
	count       int64
	next        time.Time // the first tick after now; zero when none within cron.MaxYears
}

// nexter is the one question the tick walks ask of a schedule. It is an
// interface so a test can count the questions: the walks' bounded cost
// shows in nothing else.
type nexter interface {
	Next(after time.Time, loc *time.Location) (time.Time, bool)
}

// dueTicks walks the ticks from first (due) to now. It counts at most
// scan one by one; past that the count is extrapolated from the rate of
// those it walked, so a schedule left for years costs no more than scan
// steps.
func dueTicks(sched nexter, loc *time.Location, first, now time.Time, scan int) ticks {
	tk := ticks{first: first, last: first, count: 1}
	for range scan {
		n, ok := sched.Next(tk.last, loc)
		if !ok {
			return tk
		}
		if n.After(now) {
			tk.next = n
			return tk
		}
		tk.prev, tk.last = tk.last, n
		tk.count++
	}
	// Too many to walk: find the latest due tick and the one before it by
	// looking back from now, and extrapolate the count between from the
	// rate of the ticks walked.
	walked, span := tk.count, tk.last.Sub(tk.first)
	last, ok := latestIn(sched, loc, tk.last, now)
	if !ok {
		tk.next, _ = sched.Next(tk.last, loc)
		return tk
	}
	prev, ok := latestIn(sched, loc, tk.last, last.Add(-time.Nanosecond))
	if !ok {
		prev = tk.last
	}
	if span > 0 {
		tk.count += int64(math.Round(float64(walked-1) * float64(last.Sub(tk.last)) / float64(span)))
	}
	tk.prev, tk.last = prev, last
	tk.next, _ = sched.Next(last, loc)
	return tk
}

// latestIn is the latest tick in (lo, hi]. It looks back from hi over
// doubling windows, so it walks only the ticks of the first window that
// holds any, which are at most those of the twice as long quiet time
// before hi.
func latestIn(sched nexter, loc *time.Location, lo, hi time.Time) (time.Time, bool) {
	for w := time.Minute; ; w *= 2 {
		from := hi.Add(-w)
		if !from.After(lo) {
			from = lo
		}
		if t, ok := sched.Next(from, loc); ok && !t.After(hi) {
			for {
				n, ok := sched.Next(t, loc)
				if !ok || n.After(hi) {
					return t, true
				}
				t = n
			}
		}
		if from.Equal(lo) {
			return time.Time{}, false
		}
	}
}

// claim works out what becomes of a due config's ticks and claims that:
// the latest due tick starts a run unless it is later than Grace or the
// budget is spent, the ones before it were missed. ok says the config
// moved on (by this server or another); the pending run, if any, is
// this server's to start.
func (s *Service) claim(ctx context.Context, rec *heartbeat.Record, now time.Time) (*pending, bool) {
	log := s.log.With("tenant_id", rec.TenantID, "config_id", rec.ID, "instance_id", rec.InstanceID)
	sched, loc, err := parseRecord(rec)
	if err != nil {
		// Only a zone the binary no longer takes gets here (a newer
		// database dropped it, or an older release took it from the
		// host); pausing stops the config from being due at every pass.
		log.Error("schedules: a stored schedule no longer parses; the config is paused", "err", err)
		_, _, err := s.store.SetStatus(ctx, rec.TenantID, rec.ID, heartbeat.StatusPaused, time.Time{}, now)
		return nil, err == nil
	}
	tk := dueTicks(sched, loc, rec.NextRunAt, now, s.o.MaxMissedScan)
	if tk.next.IsZero() {
		log.Warn("schedules: the schedule does not fire again within the years looked at; the config is paused",
			"years", cron.MaxYears, "cron", rec.CronExpression)
		_, _, err := s.store.SetStatus(ctx, rec.TenantID, rec.ID, heartbeat.StatusPaused, time.Time{}, now)
		return nil, err == nil
	}
	c := heartbeat.Claim{TenantID: rec.TenantID, ConfigID: rec.ID, Expect: rec.NextRunAt, Next: tk.next,
		Owner: s.owner, LeaseUntil: now.Add(s.o.Lease), Now: now}
	switch {
	case now.Sub(tk.last) > s.o.Grace:
		c.Missed = heartbeat.Missed{Count: tk.count, From: tk.first, To: tk.last, DetectedAt: now}
	case tk.count > 1:
		c.Missed = heartbeat.Missed{Count: tk.count - 1, From: tk.first, To: tk.prev, DetectedAt: now}
		fallthrough
	default:
		c.Tick = tk.last
	}
	var limits Limits
	if !c.Tick.IsZero() {
		c.MaxRuns, c.Since = rec.Budget.MaxDailyRuns, startOfDay(c.Tick, loc)
		c.Skip, limits = s.spend(ctx, rec, c.Since)
	}
	fire, err := s.store.Claim(ctx, c)
	switch {
	case errors.Is(err, heartbeat.ErrConflict), errors.Is(err, heartbeat.ErrNotFound):
		// Another server took the tick, or the config was paused or
		// deleted meanwhile.
		log.Debug("schedules: the config moved on elsewhere", "err", err)
		return nil, true
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("schedules: claim a tick", "err", err)
		}
		return nil, false
	}
	if m := c.Missed; m.Count > 0 {
		log.Warn("schedules: ticks passed while no server ran the schedule; they are reported, not run late",
			"missed", m.Count, "from", m.From, "to", m.To)
		s.tel.fired(outcomeMissed, m.Count)
	}
	if fire.ConfigID == "" {
		return nil, true
	}
	sctx, span := s.tel.tracer.Start(ctx, spanFire, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		instrument.AttrTenant.String(rec.TenantID),
		attribute.String("novaos.heartbeat.config_id", rec.ID),
		instrument.AttrInstance.String(rec.InstanceID),
		attribute.String("novaos.heartbeat.tick", fire.Tick.Format(time.RFC3339)),
		attribute.Int("novaos.heartbeat.attempt", fire.Attempts),
	))
	if fire.Outcome == heartbeat.OutcomeSkippedBudget {
		log.Info("schedules: a tick skipped: the day's budget is spent", "tick", fire.Tick, "reason", fire.Reason)
		s.tel.fired(outcomeSkippedBudget, 1)
		span.SetAttributes(attribute.String("novaos.heartbeat.outcome", outcomeSkippedBudget))
		span.End()
		return nil, true
	}
	return &pending{rec: *rec, fire: fire, limits: limits, span: span, ctx: sctx}, true
}

// takeOver claims a tick whose server died before it settled it.
func (s *Service) takeOver(ctx context.Context, f *heartbeat.Fire, now time.Time) *pending {
	fire, err := s.store.Reclaim(ctx, f.TenantID, f.ConfigID, f.Tick, s.owner, now, now.Add(s.o.Lease))
	if err != nil {
		if !errors.Is(err, heartbeat.ErrConflict) && ctx.Err() == nil {
			s.log.Warn("schedules: take over a tick", "config_id", f.ConfigID, "tick", f.Tick, "err", err)
		}
		return nil
	}
	rec, err := s.store.Get(ctx, f.TenantID, f.ConfigID)
	if err != nil {
		return nil // deleted meanwhile, its fires with it
	}
	sctx, span := s.tel.tracer.Start(ctx, spanFire, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		instrument.AttrTenant.String(rec.TenantID),
		attribute.String("novaos.heartbeat.config_id", rec.ID),
		instrument.AttrInstance.String(rec.InstanceID),
		attribute.String("novaos.heartbeat.tick", fire.Tick.Format(time.RFC3339)),
		attribute.Int("novaos.heartbeat.attempt", fire.Attempts),
	))
	p := &pending{rec: rec, fire: fire, span: span, ctx: sctx}
	if fire.Attempts > s.o.MaxAttempts {
		s.settle(p, heartbeat.OutcomeFailed, "", fmt.Sprintf("the run could not be started in %d attempts", s.o.MaxAttempts))
		return nil
	}
	if loc, err := loadZone(rec.Timezone); err == nil {
		_, p.limits = s.spend(ctx, &rec, startOfDay(fire.Tick, loc))
	}
	return p
}

// start starts a claimed tick's run through the gateway and settles the
// tick: fired (also when an earlier try started the run), failed when the
// gateway refuses it for good or the tries are spent; a passing failure
// leaves the tick claimed, for this or another server to try again once
// the lease lapses.
func (s *Service) start(p *pending) {
	rec, fire := &p.rec, &p.fire
	runID := RunIDFor(rec.ID, fire.Tick)
	_, err := s.deps.Runs.Start(p.ctx, RunStart{
		TenantID: rec.TenantID, InstanceID: rec.InstanceID, RunID: runID, IdempotencyKey: IdempotencyKeyFor(rec.ID, fire.Tick),
		Input:  rec.TaskContent,
		Caller: gateway.Caller{Subject: "schedule:" + rec.ID, UserID: rec.Creator.UserID, Service: rec.Creator.Service},
		Limits: p.limits,
	})
	switch {
	case err == nil, errors.Is(err, gateway.ErrExists):
		s.settle(p, heartbeat.OutcomeFired, runID, "")
	case permanent(err):
		s.settle(p, heartbeat.OutcomeFailed, "", "the gateway refused the run: "+err.Error())
	case fire.Attempts >= s.o.MaxAttempts:
		s.settle(p, heartbeat.OutcomeFailed, "", fmt.Sprintf("the run could not be started in %d attempts: %v", fire.Attempts, err))
	default:
		s.log.Warn("schedules: start a tick's run; it is tried again once the claim lapses", "tenant_id", rec.TenantID,
			"config_id", rec.ID, "tick", fire.Tick, "attempt", fire.Attempts, "err", err)
		p.span.RecordError(err)
		p.span.End()
	}
}

// settle records a started tick's outcome and ends its span.
func (s *Service) settle(p *pending, outcome heartbeat.Outcome, runID, reason string) {
	defer p.span.End()
	reason = heartbeat.ClipReason(reason)
	err := s.store.Settle(p.ctx, heartbeat.Settlement{TenantID: p.rec.TenantID, ConfigID: p.rec.ID, Tick: p.fire.Tick,
		Owner: s.owner, Outcome: outcome, RunID: runID, Reason: reason, Now: s.clock.Now()})
	log := s.log.With("tenant_id", p.rec.TenantID, "config_id", p.rec.ID, "instance_id", p.rec.InstanceID, "tick", p.fire.Tick)
	if err != nil {
		// Lost the claim (its lease lapsed and another server took the
		// tick) or the config is gone: the record is the other's.
		log.Warn("schedules: record a tick's outcome", "outcome", outcome, "err", err)
	}
	p.span.SetAttributes(attribute.String("novaos.heartbeat.outcome", string(outcome)))
	if outcome == heartbeat.OutcomeFired {
		p.span.SetAttributes(instrument.AttrRun.String(runID))
		log.Info("schedules: a tick started its run", "run_id", runID)
		s.tel.fired(outcomeFired, 1)
		return
	}
	p.span.SetStatus(codes.Error, reason)
	log.Warn("schedules: a tick failed to start its run", "reason", reason)
	s.tel.fired(outcomeFailed, 1)
}

// permanent reports whether the gateway refused a run for good: the
// instance is gone, or the request breaks a rule.
func permanent(err error) bool {
	if errors.Is(err, gateway.ErrNotFound) {
		return true
	}
	var sc resilience.StatusCoder
	return errors.As(err, &sc) && sc.HTTPStatus() >= http.StatusBadRequest && sc.HTTPStatus() < http.StatusInternalServerError &&
		sc.HTTPStatus() != http.StatusTooManyRequests
}

// spend checks the day's token and cost caps of a config with the meter:
// skip says why the tick must not run (a cap is spent, or the meter
// cannot tell, and a budget that cannot be checked is not spent blind);
// limits are what is left for the run.
func (s *Service) spend(ctx context.Context, rec *heartbeat.Record, since time.Time) (skip string, limits Limits) {
	b := rec.Budget
	if b.MaxDailyTokens == 0 && b.MaxDailyCostUSD == 0 {
		return "", Limits{}
	}
	if s.deps.Spend == nil {
		s.warnUnchecked(rec)
		return "", Limits{}
	}
	fires, err := s.store.Fires(ctx, rec.TenantID, rec.ID, heartbeat.FireFilter{Since: since, Limit: heartbeat.MaxFirePage})
	if err != nil {
		return "the day's runs could not be read to check the budget: " + err.Error(), Limits{}
	}
	var runs []string
	for _, f := range fires {
		if f.Outcome == heartbeat.OutcomeFired || f.Outcome == heartbeat.OutcomeClaimed {
			runs = append(runs, RunIDFor(rec.ID, f.Tick))
		}
	}
	var used Usage
	if len(runs) > 0 {
		if used, err = s.deps.Spend.Spent(ctx, rec.TenantID, runs); err != nil {
			return "the day's model use could not be read to check the budget: " + err.Error(), Limits{}
		}
	}
	switch {
	case b.MaxDailyTokens > 0 && used.Tokens >= b.MaxDailyTokens:
		return fmt.Sprintf("the day's budget of %d tokens is spent (%d used)", b.MaxDailyTokens, used.Tokens), Limits{}
	case b.MaxDailyCostUSD > 0 && used.CostUSD >= b.MaxDailyCostUSD:
		return fmt.Sprintf("the day's budget of %.4g USD is spent (%.4g used)", b.MaxDailyCostUSD, used.CostUSD), Limits{}
	}
	if b.MaxDailyTokens > 0 {
		limits.MaxTokens = b.MaxDailyTokens - used.Tokens
	}
	if b.MaxDailyCostUSD > 0 {
		limits.MaxCostUSD = b.MaxDailyCostUSD - used.CostUSD
	}
	return "", limits
}

// warnUnchecked says once per config and process that its token and cost
// caps go unchecked.
func (s *Service) warnUnchecked(rec *heartbeat.Record) {
	s.warnedMu.Lock()
	first := !s.warned[rec.ID]
	s.warned[rec.ID] = true
	s.warnedMu.Unlock()
	if first {
		s.log.Warn("schedules: no model meter is configured: the config's daily token and cost caps are not checked, only its run cap",
			"tenant_id", rec.TenantID, "config_id", rec.ID)
	}
}

// startOfDay is the midnight (or the first instant, where a change of
// clocks skips midnight) of t's day in loc.
func startOfDay(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, loc)
}

// RunIDFor is the id of the run of a config's tick: a UUID (version 8)
// drawn from both, so every try of the tick, on any server, names one
// run, and the gateway starts it once.
func RunIDFor(configID string, tick time.Time) string {
	sum := sha256.Sum256([]byte("novaos heartbeat run\x00" + configID + "\x00" + tick.UTC().Format(time.RFC3339Nano)))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// IdempotencyKeyFor is the idempotency key of the run of a config's tick,
// the one the agent sees on every delivery of it.
func IdempotencyKeyFor(configID string, tick time.Time) string {
	sum := sha256.Sum256([]byte("novaos heartbeat key\x00" + configID + "\x00" + tick.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(sum[:16])
}
