-- Heartbeat schedules (heartbeat.Store): each instance's cron config and
-- the ticks servers handled.
--
-- Times are microseconds since the Unix epoch, 0 for none. A config's
-- key, instance, status, times and missed-tick counts are columns, the
-- rest (cron expression, time zone, task, image, budget, creator) its JSON
-- encoding in body. UNIQUE (tenant, instance_id) is the rule of one
-- config per instance, so of racing creates exactly one wins.
CREATE TABLE heartbeat_configs (
    id             TEXT    NOT NULL PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    instance_id    TEXT    NOT NULL,
    agent_id       TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    next_run_us    INTEGER NOT NULL,
    last_run_us    INTEGER NOT NULL,
    missed_total   INTEGER NOT NULL,
    missed_count   INTEGER NOT NULL,
    missed_from_us INTEGER NOT NULL,
    missed_to_us   INTEGER NOT NULL,
    missed_at_us   INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    body           BLOB    NOT NULL,
    UNIQUE (tenant, instance_id)
);

CREATE INDEX heartbeat_configs_due ON heartbeat_configs (next_run_us) WHERE status = 'active';

-- A fire is one tick a server handled, keyed by the config and the tick:
-- the key is what makes a tick fire once across servers.
CREATE TABLE heartbeat_fires (
    config_id      TEXT    NOT NULL REFERENCES heartbeat_configs (id) ON DELETE CASCADE,
    tick_us        INTEGER NOT NULL,
    tenant         TEXT    NOT NULL,
    outcome        TEXT    NOT NULL,
    run_id         TEXT    NOT NULL,
    reason         TEXT    NOT NULL,
    owner          TEXT    NOT NULL,
    lease_until_us INTEGER NOT NULL,
    attempts       INTEGER NOT NULL,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    PRIMARY KEY (config_id, tick_us)
) WITHOUT ROWID;

CREATE INDEX heartbeat_fires_stale ON heartbeat_fires (lease_until_us) WHERE outcome = 'claimed';
