package cli

import (
	"flag"
	"time"

	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/internal/schedsvc"
)

// schedulesFlagSet holds serve's flags for the heartbeat schedules.
type schedulesFlagSet struct {
	maxBody                 byteSize
	pollEvery, grace, lease *time.Duration
	maxAttempts, fires      *int
}

func schedulesFlags(fs *flag.FlagSet) *schedulesFlagSet {
	s := &schedulesFlagSet{maxBody: byteSize{n: schedsvc.DefaultMaxBodyBytes}}
	fs.Var(&s.maxBody, "schedules-max-body-bytes", "schedules: largest request body `size` (a heartbeat config); 413 beyond")
	s.pollEvery = fs.Duration("schedules-poll-every", schedsvc.DefaultPollEvery, "schedules: how often the scheduler reads the database for configs other replicas created or changed (a change on this replica wakes it at once)")
	s.grace = fs.Duration("schedules-grace", schedsvc.DefaultGrace, "schedules: how late a tick may be found and still start its run; a later one is reported missed, not run")
	s.lease = fs.Duration("schedules-lease", schedsvc.DefaultLease, "schedules: how long a replica holds a tick it claimed; a replica that dies has its ticks taken over after it")
	s.maxAttempts = fs.Int("schedules-max-attempts", schedsvc.DefaultMaxAttempts, "schedules: tries to start one tick's run before the tick fails")
	s.fires = fs.Int("schedules-max-concurrent-fires", schedsvc.DefaultMaxConcurrentFires, "schedules: runs one pass of the scheduler starts at once")
	return s
}

func (s *schedulesFlagSet) check() string {
	switch {
	case s.maxBody.n <= 0 || *s.pollEvery <= 0 || *s.grace <= 0 || *s.lease <= 0:
		return "--schedules-max-body-bytes, --schedules-poll-every, --schedules-grace and --schedules-lease must be positive"
	case *s.maxAttempts < 1 || *s.fires < 1:
		return "--schedules-max-attempts and --schedules-max-concurrent-fires must be at least 1"
	}
	return ""
}

func (s *schedulesFlagSet) options() app.SchedulesOptions {
	return app.SchedulesOptions{MaxBodyBytes: s.maxBody.n, PollEvery: *s.pollEvery, Grace: *s.grace, Lease: *s.lease,
		MaxAttempts: *s.maxAttempts, MaxConcurrentFires: *s.fires}
}
