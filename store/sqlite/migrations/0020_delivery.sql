-- Pull delivery (package delivery's Store): each agent's event stream and
-- its head, consumers' cursors, the newest invocation token of each run,
-- the tokens used once, agents' API tokens, Idempotency-Keys and the
-- messages agents send.
--
-- Times are microseconds since the Unix epoch (0: unset). What the store
-- looks up, orders or updates by has a column; the rest of an event or a
-- message is its JSON encoding in body, so that a field the wire model
-- gains needs no migration. Payloads, components, hashes and answers are
-- BLOBs stored as given.

-- An agent's newest sequence. An append reads and moves it in the
-- writer's transaction, which holds the file's write lock: sequences are
-- numbered from 1 without a gap, in this process or another.
CREATE TABLE delivery_heads (
    agent_id TEXT    NOT NULL PRIMARY KEY,
    head     INTEGER NOT NULL
) WITHOUT ROWID;

-- Events are clustered by agent and sequence, the order a consumer reads
-- them in. An agent's dedupe key names one event.
CREATE TABLE delivery_events (
    agent_id   TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    tenant     TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    run_id     TEXT    NOT NULL,
    dedupe_key TEXT    NOT NULL,
    created_us INTEGER NOT NULL,
    payload    BLOB,
    body       BLOB    NOT NULL,
    PRIMARY KEY (agent_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX delivery_events_dedupe ON delivery_events (agent_id, dedupe_key) WHERE dedupe_key <> '';

CREATE TABLE delivery_consumers (
    agent_id   TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    acked_seq  INTEGER NOT NULL,
    sent_seq   INTEGER NOT NULL,
    sent_us    INTEGER NOT NULL,
    session_id TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_us INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    PRIMARY KEY (agent_id, name)
) WITHOUT ROWID;

-- The newest invocation token delivered for each run: its id and times,
-- never the token.
CREATE TABLE delivery_run_tokens (
    run_id     TEXT    NOT NULL PRIMARY KEY,
    jti        TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    consumer   TEXT    NOT NULL,
    issued_us  INTEGER NOT NULL,
    expires_us INTEGER NOT NULL
) WITHOUT ROWID;

-- Tokens used once (a resume), kept until until_us.
CREATE TABLE delivery_used_tokens (
    jti      TEXT    NOT NULL PRIMARY KEY,
    until_us INTEGER NOT NULL
) WITHOUT ROWID;

-- Agents' API tokens, found by the SHA-256 hash of the token.
CREATE TABLE delivery_api_tokens (
    id         TEXT    NOT NULL PRIMARY KEY,
    tenant     TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    hash       BLOB    NOT NULL UNIQUE,
    dpop_jkt   TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    created_us INTEGER NOT NULL,
    revoked_us INTEGER NOT NULL
);

-- Idempotency-Keys by scope (an agent) and key, pruned by age.
CREATE TABLE delivery_requests (
    scope        TEXT    NOT NULL,
    idem_key     TEXT    NOT NULL,
    request_hash BLOB,
    done         INTEGER NOT NULL,
    status       INTEGER NOT NULL,
    body         BLOB,
    created_us   INTEGER NOT NULL,
    PRIMARY KEY (scope, idem_key)
) WITHOUT ROWID;
CREATE INDEX delivery_requests_created ON delivery_requests (created_us);

-- Messages agents sent, once per client message id of an agent. seq is
-- the order they were stored in, which a thread is read in.
CREATE TABLE delivery_messages (
    seq           INTEGER NOT NULL PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    tenant        TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    thread_id     TEXT    NOT NULL,
    client_msg_id TEXT    NOT NULL,
    created_us    INTEGER NOT NULL,
    components    BLOB,
    body          BLOB    NOT NULL,
    UNIQUE (agent_id, client_msg_id)
);
CREATE INDEX delivery_messages_thread ON delivery_messages (tenant, thread_id, seq);
