-- The governance gate (package gate): sessions, gated actions, the
-- trajectory ledger, versioned rule sets, the hash-chained audit log and
-- the service's heartbeat.
--
-- Times are microseconds since the Unix epoch (0: unset), the precision
-- both stores keep; durations are nanoseconds. JSON the gate keeps opaque
-- (actions, decisions, rule sets, audit bodies) is a BLOB stored as given:
-- the audit chain hashes the exact bytes.

CREATE TABLE gate_sessions (
    tenant          TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    team_id         TEXT    NOT NULL,
    agent_id        TEXT    NOT NULL,
    resumable       INTEGER NOT NULL,
    hold_window_ns  INTEGER NOT NULL,
    hold_indefinite INTEGER NOT NULL,
    state           TEXT    NOT NULL,
    version         INTEGER NOT NULL,
    created_us      INTEGER NOT NULL,
    updated_us      INTEGER NOT NULL,
    PRIMARY KEY (tenant, id)
) WITHOUT ROWID;

CREATE TABLE gate_actions (
    tenant             TEXT    NOT NULL,
    session_id         TEXT    NOT NULL,
    action_id          TEXT    NOT NULL,
    action_type        TEXT    NOT NULL,
    team_id            TEXT    NOT NULL,
    agent_id           TEXT    NOT NULL,
    action             BLOB,
    fingerprint        TEXT    NOT NULL,
    fingerprint_scheme TEXT    NOT NULL,
    commitment_version TEXT    NOT NULL,
    state              TEXT    NOT NULL,
    verdict            TEXT    NOT NULL,
    rule_id_cited      TEXT    NOT NULL,
    rationale          TEXT    NOT NULL,
    reason             TEXT    NOT NULL,
    decision           BLOB,
    hold_window_ns     INTEGER NOT NULL,
    hold_indefinite    INTEGER NOT NULL,
    hold_expires_us    INTEGER NOT NULL,
    decided_by         TEXT    NOT NULL,
    decided_us         INTEGER NOT NULL,
    fencing_token      INTEGER NOT NULL, -- the uint64's bits
    claimed_us         INTEGER NOT NULL,
    acknowledged_us    INTEGER NOT NULL,
    version            INTEGER NOT NULL,
    created_us         INTEGER NOT NULL,
    updated_us         INTEGER NOT NULL,
    PRIMARY KEY (tenant, session_id, action_id)
);
-- The operator's listings: one tenant's, or every tenant's by state.
CREATE INDEX gate_actions_list ON gate_actions (tenant, created_us, session_id, action_id);
CREATE INDEX gate_actions_state ON gate_actions (state, created_us, session_id, action_id, tenant);
-- The expiry sweep reads only the holds that can expire.
CREATE INDEX gate_actions_expiring ON gate_actions (hold_expires_us)
    WHERE state = 'held' AND hold_expires_us <> 0;

-- Rule aggregates range over one subject, or over every subject of the
-- action type, from a time on; each index covers its query (amount
-- included), so a total reads only the entries it counts.
CREATE TABLE gate_ledger (
    seq         INTEGER NOT NULL PRIMARY KEY,
    tenant      TEXT    NOT NULL,
    action_type TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    amount      REAL    NOT NULL,
    at_us       INTEGER NOT NULL,
    session_id  TEXT    NOT NULL,
    action_id   TEXT    NOT NULL
);
CREATE INDEX gate_ledger_subject ON gate_ledger (tenant, action_type, subject, at_us, amount);
CREATE INDEX gate_ledger_type ON gate_ledger (tenant, action_type, at_us, amount);

CREATE TABLE gate_rule_sets (
    tenant     TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    hash       TEXT    NOT NULL,
    created_by TEXT    NOT NULL,
    created_us INTEGER NOT NULL,
    PRIMARY KEY (tenant, version)
) WITHOUT ROWID;

CREATE TABLE gate_audit (
    seq        INTEGER NOT NULL PRIMARY KEY,
    at_us      INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    tenant     TEXT    NOT NULL,
    session_id TEXT    NOT NULL,
    action_id  TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    body       BLOB,
    prev_hash  TEXT    NOT NULL,
    hash       TEXT    NOT NULL
);
CREATE TRIGGER gate_audit_no_update BEFORE UPDATE ON gate_audit
BEGIN SELECT RAISE(ABORT, 'gate_audit is append-only'); END;
CREATE TRIGGER gate_audit_no_delete BEFORE DELETE ON gate_audit
BEGIN SELECT RAISE(ABORT, 'gate_audit is append-only'); END;

-- The chain's head, moved by every append in its transaction: entries cut
-- from the end of gate_audit no longer match it.
CREATE TABLE gate_audit_head (
    id   INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    hash TEXT    NOT NULL
);
INSERT INTO gate_audit_head (id, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

CREATE TABLE gate_heartbeat (
    id    INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    at_us INTEGER NOT NULL
);
INSERT INTO gate_heartbeat (id, at_us) VALUES (1, 0);
