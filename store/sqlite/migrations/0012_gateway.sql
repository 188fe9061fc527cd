-- The execution gateway (package gateway): installed agents (instances),
-- their runs, and the runs' events.
--
-- Times are microseconds since the Unix epoch (0: unset). What the store
-- filters, orders or claims by has a column; the rest of an instance or a
-- run is its JSON encoding in body, so that a field the wire model gains
-- needs no migration. Bytes that must read back exactly (sealed secrets
-- and headers, a run's pause and pending input, event payloads) are BLOBs
-- of their own, stored as given. Events are clustered by run and
-- sequence, the order a stream reads them in.

CREATE TABLE gateway_instances (
    id             TEXT    NOT NULL PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    name           TEXT    NOT NULL,
    version        INTEGER NOT NULL,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    sealed_secrets BLOB,
    body           BLOB    NOT NULL,
    UNIQUE (tenant, name)
);

CREATE TABLE gateway_runs (
    id             TEXT    NOT NULL PRIMARY KEY,
    tenant         TEXT    NOT NULL,
    instance_id    TEXT    NOT NULL,
    user_id        TEXT    NOT NULL,
    thread_id      TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    lease_owner    TEXT    NOT NULL,
    lease_until_us INTEGER NOT NULL,
    not_before_us  INTEGER NOT NULL,
    last_seq       INTEGER NOT NULL,
    version        INTEGER NOT NULL,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    started_us     INTEGER NOT NULL,
    ended_us       INTEGER NOT NULL,
    pause          BLOB,
    pending_input  BLOB,
    custom_headers BLOB,
    body           BLOB    NOT NULL
);
-- Listings, newest first: a tenant's, a thread's (the history a thread
-- run carries), and every tenant's.
CREATE INDEX gateway_runs_tenant ON gateway_runs (tenant, created_us DESC, id DESC);
CREATE INDEX gateway_runs_thread ON gateway_runs (tenant, thread_id, created_us DESC, id DESC) WHERE thread_id <> '';
CREATE INDEX gateway_runs_created ON gateway_runs (created_us DESC, id DESC);
-- Claims look only at the runs a dispatcher delivers, however many runs
-- ended, oldest first as they are claimed: the predicate names
-- sqlstore.ClaimableStatuses. The lease and backoff are checked on these
-- few rows; an index on them would need a sort.
CREATE INDEX gateway_runs_claim ON gateway_runs (created_us, id)
    WHERE status IN ('QUEUED', 'RUNNING');

CREATE TABLE gateway_run_events (
    run_id  TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    type    TEXT    NOT NULL,
    payload BLOB,
    at_us   INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
