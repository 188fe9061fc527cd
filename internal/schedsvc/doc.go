// Package schedsvc serves heartbeat schedules and starts their runs on time.
//
// It serves package heartbeat's API under /api/v1/agent-ops (create,
// list, read, pause, resume and delete an instance's heartbeat config)
// and, in Run, fires the schedules: at each tick of a config's cron
// expression, read in its time zone (see heartbeat/cron for the
// daylight-saving rules), it starts a run of the instance through the
// execution gateway with the config's task content as input.
//
// # Callers
//
// Every route takes a bearer token: the admin token (or, without one, a
// caller on the server's machine), acting for the tenant X-Tenant-ID
// names, or a platform token of the instance's tenant, which names its
// tenant itself. Reads need schedules:read, writes schedules:write. The
// tenant always comes from the token or the operator's header, never from
// a body. A config's runs are started as its creator (their user id, or
// as a service) with the subject "schedule:<config id>".
//
// # Choices
//
//   - One config per instance, enforced by the store's unique key: a
//     second create, also a racing one, is 409.
//   - agent_image and agent_image_tag are required, kept and shown; the
//     platform runs the instance as it is installed, not an image.
//   - A tick fires once across servers: the server that claims it in the
//     store (the config's next run moves on in the same write) starts its
//     run, whose id and idempotency key are drawn from the config and the
//     tick, so a retried start, on any server, finds the run the first
//     one started. A server that dies after its claim leaves the tick to
//     be taken over when the claim's Lease lapses; a start that keeps
//     failing fails the tick after MaxAttempts.
//   - Ticks that passed while no server ran are reported, not run late:
//     the latest due tick still starts its run when it is at most Grace
//     (1 minute) late; every earlier one, and that one when it is later,
//     is counted in the schedule's "missed" (total, the latest gap's
//     count, first and last tick) and in a warning log line, and the next
//     run is the next tick in the future.
//   - Budget: max_daily_runs (required, 1 to 1440) is checked in the
//     claim's own write, counting the day's claimed and fired ticks in
//     the config's time zone; a tick over it is recorded skipped_budget
//     with the reason. max_daily_tokens and max_daily_cost_usd (0: no cap
//     of their own) are checked with Deps.Spend, the model meter (the LLM
//     gateway's ledger), over the runs of the config's ticks that day; a
//     cap that is spent, or a meter that cannot answer, skips the tick.
//     What is left of them is passed with the run as its Limits, which
//     the platform makes the run's own LLM limit: the LLM gateway refuses
//     the run's model calls past it (429 budget_exceeded, naming the
//     schedule's limit), so a run stops at the day's cap, not after it.
//     Without a meter those two caps go unchecked, which the log says
//     once per config.
//   - Time zones: a config takes a name of the IANA database the binary
//     embeds (time/tzdata; the names are in zones_table.go, written by go
//     generate from the Go toolchain's copy), byte for byte, and no other,
//     so that every replica takes the same names whatever its host holds.
//     time.LoadLocation alone would also take the host's posix/ and right/
//     copies (right/ zones count leap seconds), names of an older or newer
//     database, Local and localtime, and, on a case-insensitive file
//     system, any spelling. A name refused is a 400 naming the timezone
//     field and what to give instead. A zone's rules still come from the
//     host's database when it has the name, else the binary's.
//   - Pausing or resuming a config that is so already answers 200 and
//     changes nothing; a resumed config fires from its next future tick,
//     and the ticks of the pause are not missed ones.
//   - The scheduler sleeps until the earliest next run, wakes at once for
//     a change made through this server, and reads the store every
//     PollEvery (5 s) for what other servers changed.
//
// # Telemetry
//
// Each handled tick is a span "heartbeat.fire" with the tenant, config,
// instance, tick, attempt, outcome and run id as attributes. The metrics
// are novaos_schedule_fires_total{outcome} (fired, skipped_budget, missed,
// failed) and the gauge novaos_schedules{status} (active, paused; every
// tenant's, as this server last counted them).
package schedsvc
