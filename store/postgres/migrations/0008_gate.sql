-- The governance gate (package gate): sessions, gated actions, the
-- trajectory ledger, versioned rule sets, the hash-chained audit log and
-- the service's heartbeat.
--
-- Times are microseconds since the Unix epoch (0: unset), the precision
-- both stores keep, as bigint like the other tables' times; durations are
-- nanoseconds. JSON the gate keeps opaque (actions, decisions, rule sets,
-- audit bodies) is bytea stored as given, not jsonb: the audit chain
-- hashes the exact bytes, and jsonb would reformat them.

CREATE TABLE gate_sessions (
    tenant          text    NOT NULL,
    id              text    NOT NULL,
    team_id         text    NOT NULL,
    agent_id        text    NOT NULL,
    resumable       boolean NOT NULL,
    hold_window_ns  bigint  NOT NULL,
    hold_indefinite boolean NOT NULL,
    state           text    NOT NULL,
    version         bigint  NOT NULL,
    created_us      bigint  NOT NULL,
    updated_us      bigint  NOT NULL,
    PRIMARY KEY (tenant, id)
);

CREATE TABLE gate_actions (
    tenant             text    NOT NULL,
    session_id         text    NOT NULL,
    action_id          text    NOT NULL,
    action_type        text    NOT NULL,
    team_id            text    NOT NULL,
    agent_id           text    NOT NULL,
    action             bytea,
    fingerprint        text    NOT NULL,
    fingerprint_scheme text    NOT NULL,
    commitment_version text    NOT NULL,
    state              text    NOT NULL,
    verdict            text    NOT NULL,
    rule_id_cited      text    NOT NULL,
    rationale          text    NOT NULL,
    reason             text    NOT NULL,
    decision           bytea,
    hold_window_ns     bigint  NOT NULL,
    hold_indefinite    boolean NOT NULL,
    hold_expires_us    bigint  NOT NULL,
    decided_by         text    NOT NULL,
    decided_us         bigint  NOT NULL,
    fencing_token      bigint  NOT NULL, -- the uint64's bits
    claimed_us         bigint  NOT NULL,
    acknowledged_us    bigint  NOT NULL,
    version            bigint  NOT NULL,
    created_us         bigint  NOT NULL,
    updated_us         bigint  NOT NULL,
    PRIMARY KEY (tenant, session_id, action_id)
);
-- The operator's listings: one tenant's, or every tenant's by state.
-- COLLATE "C" keeps the order byte-wise, as in the SQLite store, whatever
-- the database's collation.
CREATE INDEX gate_actions_list ON gate_actions (tenant, created_us, session_id COLLATE "C", action_id COLLATE "C");
CREATE INDEX gate_actions_state ON gate_actions (state, created_us, session_id COLLATE "C", action_id COLLATE "C", tenant COLLATE "C");
-- The expiry sweep reads only the holds that can expire.
CREATE INDEX gate_actions_expiring ON gate_actions (hold_expires_us)
    WHERE state = 'held' AND hold_expires_us <> 0;

-- Rule aggregates range over one subject, or over every subject of the
-- action type, from a time on; each index covers its query (amount
-- included), so a total reads only the entries it counts.
CREATE TABLE gate_ledger (
    seq         bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant      text             NOT NULL,
    action_type text             NOT NULL,
    subject     text             NOT NULL,
    amount      double precision NOT NULL,
    at_us       bigint           NOT NULL,
    session_id  text             NOT NULL,
    action_id   text             NOT NULL
);
CREATE INDEX gate_ledger_subject ON gate_ledger (tenant, action_type, subject, at_us) INCLUDE (amount);
CREATE INDEX gate_ledger_type ON gate_ledger (tenant, action_type, at_us) INCLUDE (amount);

CREATE TABLE gate_rule_sets (
    tenant     text   NOT NULL,
    version    bigint NOT NULL,
    body       bytea  NOT NULL,
    hash       text   NOT NULL,
    created_by text   NOT NULL,
    created_us bigint NOT NULL,
    PRIMARY KEY (tenant, version)
);
-- Each tenant's current version, taken under the row's lock by the next
-- PutRuleSet, so concurrent puts get successive versions.
CREATE TABLE gate_rule_set_heads (
    tenant  text   NOT NULL PRIMARY KEY,
    version bigint NOT NULL
);

CREATE TABLE gate_audit (
    seq        bigint NOT NULL PRIMARY KEY,
    at_us      bigint NOT NULL,
    kind       text   NOT NULL,
    tenant     text   NOT NULL,
    session_id text   NOT NULL,
    action_id  text   NOT NULL,
    actor      text   NOT NULL,
    body       bytea,
    prev_hash  text   NOT NULL,
    hash       text   NOT NULL
);
CREATE FUNCTION gate_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'gate_audit is append-only';
END $$;
CREATE TRIGGER gate_audit_append_only BEFORE UPDATE OR DELETE ON gate_audit
    FOR EACH ROW EXECUTE FUNCTION gate_audit_append_only();

-- The chain's head. Every append locks it (SELECT … FOR UPDATE) and moves
-- it in its transaction, so appends from any number of replicas take
-- their seqs one after another, and entries cut from the end of
-- gate_audit no longer match it.
CREATE TABLE gate_audit_head (
    id   integer NOT NULL PRIMARY KEY CHECK (id = 1),
    seq  bigint  NOT NULL,
    hash text    NOT NULL
);
INSERT INTO gate_audit_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TABLE gate_heartbeat (
    id    integer NOT NULL PRIMARY KEY CHECK (id = 1),
    at_us bigint  NOT NULL
);
INSERT INTO gate_heartbeat (id, at_us) VALUES (1, 0);
