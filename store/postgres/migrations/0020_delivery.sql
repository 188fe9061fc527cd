-- Pull delivery (package delivery's Store): each agent's event stream and
-- its head, consumers' cursors, the newest invocation token of each run,
-- the tokens used once, agents' API tokens, Idempotency-Keys and the
-- messages agents send.
--
-- Times are microseconds since the Unix epoch, as bigint like the other
-- tables' times (0: unset). What the store looks up, orders or updates by
-- has a column; the rest of an event or a message is its JSON encoding in
-- body, so that a field the wire model gains needs no migration. body and
-- every byte string that must read back exactly (payloads, components,
-- hashes, answers) are bytea stored as given, not jsonb. COLLATE "C"
-- keeps ids in byte order, as in the SQLite store.

-- An agent's newest sequence. An append moves it on with an upsert whose
-- row lock orders the agent's appends, on any replica, until each
-- commits: sequences are numbered from 1 without a gap.
CREATE TABLE delivery_heads (
    agent_id text COLLATE "C" NOT NULL PRIMARY KEY,
    head     bigint NOT NULL
);

-- An agent's dedupe key names one event: of appends racing with one key,
-- the index lets one in, and the others find its event when they try
-- again.
CREATE TABLE delivery_events (
    agent_id   text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    tenant     text COLLATE "C" NOT NULL,
    id         text COLLATE "C" NOT NULL,
    type       text   NOT NULL,
    run_id     text COLLATE "C" NOT NULL,
    dedupe_key text COLLATE "C" NOT NULL,
    created_us bigint NOT NULL,
    payload    bytea,
    body       bytea  NOT NULL,
    PRIMARY KEY (agent_id, seq)
);
CREATE UNIQUE INDEX delivery_events_dedupe ON delivery_events (agent_id, dedupe_key) WHERE dedupe_key <> '';

CREATE TABLE delivery_consumers (
    agent_id   text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    acked_seq  bigint NOT NULL,
    sent_seq   bigint NOT NULL,
    sent_us    bigint NOT NULL,
    session_id text   NOT NULL,
    version    bigint NOT NULL,
    created_us bigint NOT NULL,
    updated_us bigint NOT NULL,
    PRIMARY KEY (agent_id, name)
);

-- The newest invocation token delivered for each run: its id and times,
-- never the token.
CREATE TABLE delivery_run_tokens (
    run_id     text COLLATE "C" NOT NULL PRIMARY KEY,
    jti        text   NOT NULL,
    event_id   text   NOT NULL,
    consumer   text   NOT NULL,
    issued_us  bigint NOT NULL,
    expires_us bigint NOT NULL
);

-- Tokens used once (a resume), kept until until_us.
CREATE TABLE delivery_used_tokens (
    jti      text COLLATE "C" NOT NULL PRIMARY KEY,
    until_us bigint NOT NULL
);

-- Agents' API tokens, found by the SHA-256 hash of the token.
CREATE TABLE delivery_api_tokens (
    id         text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant     text COLLATE "C" NOT NULL,
    agent_id   text COLLATE "C" NOT NULL,
    hash       bytea  NOT NULL UNIQUE,
    dpop_jkt   text   NOT NULL,
    name       text   NOT NULL,
    created_us bigint NOT NULL,
    revoked_us bigint NOT NULL
);

-- Idempotency-Keys by scope (an agent) and key, pruned by age.
CREATE TABLE delivery_requests (
    scope        text COLLATE "C" NOT NULL,
    idem_key     text COLLATE "C" NOT NULL,
    request_hash bytea,
    done         boolean NOT NULL,
    status       integer NOT NULL,
    body         bytea,
    created_us   bigint  NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX delivery_requests_created ON delivery_requests (created_us);

-- Messages agents sent, once per client message id of an agent. seq is
-- the order they were stored in, which a thread is read in.
CREATE TABLE delivery_messages (
    seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            text COLLATE "C" NOT NULL UNIQUE,
    tenant        text COLLATE "C" NOT NULL,
    agent_id      text COLLATE "C" NOT NULL,
    thread_id     text COLLATE "C" NOT NULL,
    client_msg_id text COLLATE "C" NOT NULL,
    created_us    bigint NOT NULL,
    components    bytea,
    body          bytea  NOT NULL,
    UNIQUE (agent_id, client_msg_id)
);
CREATE INDEX delivery_messages_thread ON delivery_messages (tenant, thread_id, seq);
