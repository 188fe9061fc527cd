-- The memory service (package memory): memories with a full-text index and
-- vectors, idempotency keys, the forget audit trail, agent-write proposals,
-- the consolidation hint queue and live conversation messages.
--
-- Every table is keyed by tenant first: the service passes the tenant of the
-- verified token to every call, and every statement filters on it. Times
-- are Unix milliseconds from the caller's clock, as in the SQLite store.

CREATE TABLE memories (
    seq             bigserial        PRIMARY KEY, -- write order, the tie-break of conversation order
    tenant          text             NOT NULL,
    id              text             NOT NULL,
    scope           text             NOT NULL,
    owner           text             NOT NULL,
    content         text             NOT NULL,
    type            text             NOT NULL DEFAULT '',
    tags            text             NOT NULL DEFAULT '', -- memory.JoinTags
    source          text             NOT NULL DEFAULT '',
    conversation_id text             NOT NULL DEFAULT '',
    classification  text             NOT NULL DEFAULT '',
    confidence      double precision,
    custom          bytea,
    version         bigint           NOT NULL,
    created_ms      bigint           NOT NULL,
    updated_ms      bigint           NOT NULL,
    expires_ms      bigint           NOT NULL DEFAULT 0,
    write_event_id  text             NOT NULL DEFAULT '',
    model           text             NOT NULL DEFAULT '',
    vec             bytea,                               -- memory.EncodeVector
    terms           tsvector         NOT NULL,           -- 'simple' over memory.Terms of content and tags
    UNIQUE (tenant, id)
);
CREATE INDEX memories_partition ON memories (tenant, scope, owner, created_ms);
CREATE INDEX memories_conversation ON memories (tenant, conversation_id, created_ms, seq) WHERE conversation_id <> '';
CREATE INDEX memories_expiry ON memories (expires_ms) WHERE expires_ms > 0;
CREATE INDEX memories_terms ON memories USING gin (terms);

CREATE TABLE memory_keys (
    tenant     text    NOT NULL,
    kind       text    NOT NULL, -- 'write' or 'forget'
    key        text    NOT NULL,
    result_id  text    NOT NULL,
    scope      text    NOT NULL,
    event_id   text    NOT NULL,
    count      integer NOT NULL DEFAULT 0,
    durable    boolean NOT NULL DEFAULT true,
    created_ms bigint  NOT NULL,
    PRIMARY KEY (tenant, kind, key)
);
CREATE INDEX memory_keys_age ON memory_keys (created_ms);

CREATE TABLE memory_audit (
    seq       bigserial PRIMARY KEY,
    tenant    text      NOT NULL,
    event_id  text      NOT NULL,
    action    text      NOT NULL,
    memory_id text      NOT NULL,
    scope     text      NOT NULL,
    owner     text      NOT NULL,
    actor     text      NOT NULL,
    reason    text      NOT NULL,
    at_ms     bigint    NOT NULL
);
CREATE INDEX memory_audit_memory ON memory_audit (tenant, memory_id);
CREATE FUNCTION memory_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'memory_audit is append-only';
END $$;
CREATE TRIGGER memory_audit_append_only BEFORE UPDATE OR DELETE ON memory_audit
    FOR EACH ROW EXECUTE FUNCTION memory_audit_append_only();

CREATE TABLE memory_proposals (
    tenant      text   NOT NULL,
    id          text   NOT NULL,
    status      text   NOT NULL,
    reason      text   NOT NULL DEFAULT '',
    memory_id   text   NOT NULL DEFAULT '',
    body        bytea  NOT NULL, -- memory.EncodeMemory of what to commit
    created_ms  bigint NOT NULL,
    resolved_ms bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX memory_proposals_pending ON memory_proposals (created_ms) WHERE status = 'pending';
CREATE INDEX memory_proposals_resolved ON memory_proposals (resolved_ms) WHERE status <> 'pending';

CREATE TABLE memory_hints (
    tenant          text    NOT NULL,
    id              text    NOT NULL,
    agent           text    NOT NULL,
    user_id         text    NOT NULL,
    conversation_id text    NOT NULL,
    text            text    NOT NULL,
    priority        integer NOT NULL,
    tags            text    NOT NULL DEFAULT '',
    context         text    NOT NULL DEFAULT '',
    status          text    NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    lease_ms        bigint  NOT NULL DEFAULT 0,
    submitted_ms    bigint  NOT NULL,
    resolved_ms     bigint  NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX memory_hints_pending ON memory_hints (priority DESC, submitted_ms) WHERE status = 'pending';
CREATE INDEX memory_hints_resolved ON memory_hints (resolved_ms) WHERE status <> 'pending';

CREATE TABLE memory_messages (
    seq             bigserial PRIMARY KEY,
    tenant          text      NOT NULL,
    conversation_id text      NOT NULL,
    message_id      text      NOT NULL,
    role            text      NOT NULL,
    content         text      NOT NULL,
    at_ms           bigint    NOT NULL
);
CREATE INDEX memory_messages_conversation ON memory_messages (tenant, conversation_id, seq);
