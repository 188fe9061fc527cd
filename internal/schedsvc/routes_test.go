package schedsvc

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/problem"
	"novaos.dev/novaos/store"
)

// planCreate names every field it refuses with the reason, at the edges
// of the length limits too, and takes a body that repeats the path's ids.
func TestPlanCreate(t *testing.T) {
	path := configPath{agentID: "echo", instanceID: "inst-1"}
	// A bad minute padded to exactly the longest expression taken.
	longBad := "61 * * * *" + strings.Repeat(" ", heartbeat.MaxCronBytes-len("61 * * * *"))
	tests := []struct {
		name   string
		edit   func(r *heartbeat.CreateRequest)
		errs   []problem.FieldError
		next   time.Time // the first run of one accepted
		reason string    // in the one refusal's message
	}{
		{name: "the path's agent and instance in the body", edit: func(r *heartbeat.CreateRequest) { r.AgentID, r.InstanceID = "echo", "inst-1" },
			next: time.Date(2026, 7, 1, 10, 1, 0, 0, time.UTC)},
		{name: "another agent in the body", edit: func(r *heartbeat.CreateRequest) { r.AgentID = "agent-joke" },
			errs: []problem.FieldError{{Field: "agent_id", Message: "differs from the path's"}}},
		{name: "a zone of upper and lower case and an underscore", edit: func(r *heartbeat.CreateRequest) {
			r.Timezone, r.CronExpression = "America/Port_of_Spain", "0 9 * * *"
		}, next: time.Date(2026, 7, 1, 13, 0, 0, 0, time.UTC)},
		{name: "a zone name of the longest length that is no zone", edit: func(r *heartbeat.CreateRequest) {
			r.Timezone = strings.Repeat("A", heartbeat.MaxTimezoneLen)
		}, errs: []problem.FieldError{{Field: "timezone"}}, reason: "unknown time zone"},
		{name: "a zone of a host's posix/ copy of the database", edit: func(r *heartbeat.CreateRequest) {
			r.Timezone = "posix/Europe/Berlin"
		}, errs: []problem.FieldError{{Field: "timezone"}}, reason: `the posix/ copies of the zone database are not taken`},
		{name: "a zone name a byte too long", edit: func(r *heartbeat.CreateRequest) {
			r.Timezone = strings.Repeat("A", heartbeat.MaxTimezoneLen+1)
		}, errs: []problem.FieldError{{Field: "timezone"}}, reason: "at most 64 printable characters"},
		{name: "a bad field in an expression of the longest length", edit: func(r *heartbeat.CreateRequest) { r.CronExpression = longBad },
			errs: []problem.FieldError{{Field: "cron_expression", Message: `minute: "61" is out of range 0-59`}}},
		{name: "an expression a byte too long", edit: func(r *heartbeat.CreateRequest) { r.CronExpression = longBad + " " },
			errs: []problem.FieldError{{Field: "cron_expression", Message: "longer than 256 bytes"}}},
		{name: "an expression wrong as a whole", edit: func(r *heartbeat.CreateRequest) { r.CronExpression = "* * * *" },
			errs: []problem.FieldError{{Field: "cron_expression", Message: "want 5 fields (minute hour day-of-month month day-of-week), got 4"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := createReq()
			tc.edit(&r)
			pl, errs := planCreate(&r, &path, t0)
			// A reason is checked in part where the message is long.
			if tc.reason != "" && len(errs) == 1 {
				if !strings.Contains(errs[0].Message, tc.reason) {
					t.Errorf("message %q, want it to say %q", errs[0].Message, tc.reason)
				}
				errs[0].Message = ""
			}
			if d := cmp.Diff(tc.errs, errs); d != "" {
				t.Fatalf("refusals (-want +got):\n%s", d)
			}
			if len(errs) == 0 && !pl.next.Equal(tc.next) {
				t.Errorf("first run %v, want %v", pl.next, tc.next)
			}
		})
	}
}

// quote shows an id whole up to 80 bytes and cut past them.
func TestQuote(t *testing.T) {
	at, over := strings.Repeat("x", 80), strings.Repeat("x", 81)
	for in, want := range map[string]string{
		"":   `""`,
		at:   `"` + at + `"`,
		over: `"` + at + `…"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%d bytes) = %s, want %s", len(in), got, want)
		}
	}
}

// A create that finds a config of the instance, which is deleted before
// the 409 names it, still answers 409.
func TestCreateExistsGoneMeanwhile(t *testing.T) {
	st := newFaultyStore(heartbeat.NewMemoryStore())
	st.fail("Create", fmt.Errorf("create: %w", heartbeat.ErrExists))
	h := newHarness(t, harnessOpts{store: st, noStart: true})
	code, body := h.call(http.MethodPost, configsPath, h.aliceToken(), createReq(), nil)
	var p problem.Problem
	_ = json.Unmarshal(body, &p)
	if code != http.StatusConflict || p.Type != heartbeat.ProblemConfigExists ||
		p.Detail != `instance "inst-1" has a heartbeat config already; pause, resume or delete it` {
		t.Errorf("%d %s", code, body)
	}
}

// Zero and negative options are the defaults; others are kept.
func TestOptionsDefaults(t *testing.T) {
	defaults := Options{MaxBodyBytes: DefaultMaxBodyBytes, PollEvery: DefaultPollEvery, Grace: DefaultGrace, Lease: DefaultLease,
		MaxAttempts: DefaultMaxAttempts, MaxConcurrentFires: DefaultMaxConcurrentFires, Batch: DefaultBatch, MaxMissedScan: DefaultMaxMissedScan}
	set := Options{MaxBodyBytes: 1, PollEvery: 1, Grace: 1, Lease: 1, MaxAttempts: 1, MaxConcurrentFires: 1, Batch: 1, MaxMissedScan: 1}
	tests := []struct {
		name string
		in   *Options
		want Options
	}{
		{"nil", nil, defaults},
		{"zero", &Options{}, defaults},
		{"negative", &Options{MaxBodyBytes: -1, PollEvery: -1, Grace: -1, Lease: -1, MaxAttempts: -1, MaxConcurrentFires: -1, Batch: -1, MaxMissedScan: -1}, defaults},
		{"set", &set, set},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.withDefaults()
			if got.Logger == nil || got.Clock == nil {
				t.Errorf("logger %v, clock %v", got.Logger, got.Clock)
			}
			if d := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(Options{}, "Logger", "Clock")); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	log := slog.New(slog.DiscardHandler)
	clock := NewManualClock(t0)
	if got := (&Options{Logger: log, Clock: clock}).withDefaults(); got.Logger != log || got.Clock != clock {
		t.Errorf("the logger and clock given were replaced")
	}
}

// Mount builds no service without schedules to keep or runs to start.
func TestMountNeedsStoreAndRuns(t *testing.T) {
	deps := Deps{Tokens: newIssuer(t), Runs: newFakeRuns()}
	if s := Mount(&store.Stores{}, deps, nil); s != nil {
		t.Errorf("a service without a schedule store")
	}
	if s := Mount(&store.Stores{Schedules: heartbeat.NewMemoryStore()}, Deps{Tokens: deps.Tokens}, nil); s != nil {
		t.Errorf("a service without an execution gateway")
	}
	if s := Mount(&store.Stores{Schedules: heartbeat.NewMemoryStore()}, deps, nil); s == nil {
		t.Errorf("no service with both")
	}
}
