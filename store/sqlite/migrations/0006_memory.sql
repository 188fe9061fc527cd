-- The memory service (package memory): memories with a full-text index and
-- vectors, idempotency keys, the forget audit trail, agent-write proposals,
-- the consolidation hint queue and live conversation messages.
--
-- Every table is keyed by tenant first: the service passes the tenant of the
-- verified token to every call, and every statement filters on it.

CREATE TABLE memories (
    seq             INTEGER NOT NULL PRIMARY KEY, -- also the rowid of memory_fts
    tenant          TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    scope           TEXT    NOT NULL,
    owner           TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    type            TEXT    NOT NULL DEFAULT '',
    tags            TEXT    NOT NULL DEFAULT '', -- memory.JoinTags
    source          TEXT    NOT NULL DEFAULT '',
    conversation_id TEXT    NOT NULL DEFAULT '',
    classification  TEXT    NOT NULL DEFAULT '',
    confidence      REAL,
    custom          BLOB,                        -- JSON object or NULL
    version         INTEGER NOT NULL,
    created_ms      INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL DEFAULT 0,  -- 0: never
    write_event_id  TEXT    NOT NULL DEFAULT '',
    model           TEXT    NOT NULL DEFAULT '', -- the vector's model; '' when none
    vec             BLOB,                        -- memory.EncodeVector
    UNIQUE (tenant, id)
);

-- One partition (tenant, scope, owner) is what every read ranges over.
CREATE INDEX memories_partition ON memories (tenant, scope, owner, created_ms);
CREATE INDEX memories_conversation ON memories (tenant, conversation_id, created_ms, seq) WHERE conversation_id <> '';
CREATE INDEX memories_expiry ON memories (expires_ms) WHERE expires_ms > 0;

-- A partition's write counters, bumped in the transaction of each write:
-- appended by new memories, changed by anything else that alters its
-- vectors (update, forget, sweep). The store's in-process vector cache
-- compares them to what it loaded, so it stays exact under any number of
-- processes sharing the file.
CREATE TABLE memory_partitions (
    tenant   TEXT    NOT NULL,
    scope    TEXT    NOT NULL,
    owner    TEXT    NOT NULL,
    appended INTEGER NOT NULL DEFAULT 0,
    changed  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, scope, owner)
) WITHOUT ROWID;

-- part holds one token naming the row's partition, so a search matches
-- inside its partition within the index instead of filtering the whole
-- tenant's matches afterwards; terms holds memory.Terms of the content
-- and tags. The join on memories re-checks the tenant and partition.
CREATE VIRTUAL TABLE memory_fts USING fts5(part, terms, tokenize = 'unicode61 remove_diacritics 0');

CREATE TABLE memory_keys (
    tenant     TEXT    NOT NULL,
    kind       TEXT    NOT NULL, -- 'write' or 'forget'
    key        TEXT    NOT NULL,
    result_id  TEXT    NOT NULL, -- memory or proposal id
    scope      TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    count      INTEGER NOT NULL DEFAULT 0,
    durable    INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, kind, key)
);
CREATE INDEX memory_keys_age ON memory_keys (created_ms);

CREATE TABLE memory_audit (
    seq       INTEGER NOT NULL PRIMARY KEY,
    tenant    TEXT    NOT NULL,
    event_id  TEXT    NOT NULL,
    action    TEXT    NOT NULL,
    memory_id TEXT    NOT NULL,
    scope     TEXT    NOT NULL,
    owner     TEXT    NOT NULL,
    actor     TEXT    NOT NULL,
    reason    TEXT    NOT NULL,
    at_ms     INTEGER NOT NULL
);
CREATE INDEX memory_audit_memory ON memory_audit (tenant, memory_id);
CREATE TRIGGER memory_audit_no_update BEFORE UPDATE ON memory_audit
BEGIN SELECT RAISE(ABORT, 'memory_audit is append-only'); END;
CREATE TRIGGER memory_audit_no_delete BEFORE DELETE ON memory_audit
BEGIN SELECT RAISE(ABORT, 'memory_audit is append-only'); END;

CREATE TABLE memory_proposals (
    tenant      TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    status      TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    memory_id   TEXT    NOT NULL DEFAULT '',
    body        BLOB    NOT NULL, -- memory.EncodeMemory of what to commit
    created_ms  INTEGER NOT NULL,
    resolved_ms INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX memory_proposals_pending ON memory_proposals (created_ms) WHERE status = 'pending';
CREATE INDEX memory_proposals_resolved ON memory_proposals (resolved_ms) WHERE status <> 'pending';

CREATE TABLE memory_hints (
    tenant          TEXT    NOT NULL,
    id              TEXT    NOT NULL,
    agent           TEXT    NOT NULL,
    user_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    text            TEXT    NOT NULL,
    priority        INTEGER NOT NULL, -- 0 low, 1 normal, 2 high
    tags            TEXT    NOT NULL DEFAULT '',
    context         TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    lease_ms        INTEGER NOT NULL DEFAULT 0,
    submitted_ms    INTEGER NOT NULL,
    resolved_ms     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX memory_hints_pending ON memory_hints (priority DESC, submitted_ms) WHERE status = 'pending';
CREATE INDEX memory_hints_resolved ON memory_hints (resolved_ms) WHERE status <> 'pending';

CREATE TABLE memory_messages (
    seq             INTEGER NOT NULL PRIMARY KEY,
    tenant          TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    message_id      TEXT    NOT NULL,
    role            TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    at_ms           INTEGER NOT NULL
);
CREATE INDEX memory_messages_conversation ON memory_messages (tenant, conversation_id, seq);
