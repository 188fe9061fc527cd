-- The execution gateway (package gateway): installed agents (instances),
-- their runs, and the runs' events.
--
-- Times are microseconds since the Unix epoch (0: unset), as bigint like
-- the other tables' times. What the store filters, orders or claims by has
-- a column; the rest of an instance or a run is its JSON encoding in body,
-- so that a field the wire model gains needs no migration. body and every
-- byte string that must read back exactly (sealed secrets and headers, a
-- run's pause and pending input, event payloads) are bytea stored as
-- given, not jsonb: jsonb would reformat them, and refuses the \u0000 that
-- JSON text may hold. COLLATE "C" keeps names and ids in byte order, as in
-- the SQLite store, whatever the database's collation.

CREATE TABLE gateway_instances (
    id             text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant         text COLLATE "C" NOT NULL,
    name           text COLLATE "C" NOT NULL,
    version        bigint NOT NULL,
    created_us     bigint NOT NULL,
    updated_us     bigint NOT NULL,
    sealed_secrets bytea,
    body           bytea  NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE gateway_runs (
    id             text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant         text COLLATE "C" NOT NULL,
    instance_id    text COLLATE "C" NOT NULL,
    user_id        text COLLATE "C" NOT NULL,
    thread_id      text COLLATE "C" NOT NULL,
    status         text   NOT NULL,
    lease_owner    text   NOT NULL,
    lease_until_us bigint NOT NULL,
    not_before_us  bigint NOT NULL,
    last_seq       bigint NOT NULL,
    version        bigint NOT NULL,
    created_us     bigint NOT NULL,
    updated_us     bigint NOT NULL,
    started_us     bigint NOT NULL,
    ended_us       bigint NOT NULL,
    pause          bytea,
    pending_input  bytea,
    custom_headers bytea,
    body           bytea  NOT NULL
);
-- Listings, newest first: a tenant's, a thread's (the history a thread
-- run carries), and every tenant's.
CREATE INDEX gateway_runs_tenant ON gateway_runs (tenant, created_us DESC, id DESC);
CREATE INDEX gateway_runs_thread ON gateway_runs (tenant, thread_id, created_us DESC, id DESC) WHERE thread_id <> '';
CREATE INDEX gateway_runs_created ON gateway_runs (created_us DESC, id DESC);
-- Claims (SELECT … FOR UPDATE SKIP LOCKED) look only at the runs a
-- dispatcher delivers, however many runs ended, oldest first as they are
-- claimed: the predicate names sqlstore.ClaimableStatuses. The lease and
-- backoff are checked on these few rows. An index led by them would need
-- a sort, and the planner, which cannot know that the runs still live are
-- the newest, then prefers to walk every run in creation order.
CREATE INDEX gateway_runs_claim ON gateway_runs (created_us, id)
    WHERE status IN ('QUEUED', 'RUNNING');

CREATE TABLE gateway_run_events (
    run_id  text COLLATE "C" NOT NULL,
    seq     bigint NOT NULL,
    type    text   NOT NULL,
    payload bytea,
    at_us   bigint NOT NULL,
    PRIMARY KEY (run_id, seq)
);
