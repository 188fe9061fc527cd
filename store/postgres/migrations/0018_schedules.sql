-- Heartbeat schedules (heartbeat.Store): each instance's cron config and
-- the ticks servers handled.
--
-- Times are microseconds since the Unix epoch, as bigint like the other
-- tables' times, 0 for none. A config's key, instance, status, times and
-- missed-tick counts are columns, the rest (cron expression, time zone,
-- task, image, budget, creator) its JSON encoding in body. UNIQUE (tenant,
-- instance_id) is the rule of one config per instance, so of racing
-- creates on any replica exactly one wins. COLLATE "C" keeps ids in byte
-- order, as in the SQLite store.
CREATE TABLE heartbeat_configs (
    id             text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant         text COLLATE "C" NOT NULL,
    instance_id    text COLLATE "C" NOT NULL,
    agent_id       text COLLATE "C" NOT NULL,
    status         text   NOT NULL,
    next_run_us    bigint NOT NULL,
    last_run_us    bigint NOT NULL,
    missed_total   bigint NOT NULL,
    missed_count   bigint NOT NULL,
    missed_from_us bigint NOT NULL,
    missed_to_us   bigint NOT NULL,
    missed_at_us   bigint NOT NULL,
    version        bigint NOT NULL,
    created_us     bigint NOT NULL,
    updated_us     bigint NOT NULL,
    body           bytea  NOT NULL,
    UNIQUE (tenant, instance_id)
);

CREATE INDEX heartbeat_configs_due ON heartbeat_configs (next_run_us) WHERE status = 'active';

-- A fire is one tick a server handled, keyed by the config and the tick:
-- the key is what makes a tick fire once across replicas.
CREATE TABLE heartbeat_fires (
    config_id      text COLLATE "C" NOT NULL REFERENCES heartbeat_configs (id) ON DELETE CASCADE,
    tick_us        bigint NOT NULL,
    tenant         text COLLATE "C" NOT NULL,
    outcome        text   NOT NULL,
    run_id         text   NOT NULL,
    reason         text   NOT NULL,
    owner          text   NOT NULL,
    lease_until_us bigint NOT NULL,
    attempts       integer NOT NULL,
    created_us     bigint NOT NULL,
    updated_us     bigint NOT NULL,
    PRIMARY KEY (config_id, tick_us)
);

CREATE INDEX heartbeat_fires_stale ON heartbeat_fires (lease_until_us) WHERE outcome = 'claimed';
