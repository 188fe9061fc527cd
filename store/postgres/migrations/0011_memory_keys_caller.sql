-- Idempotency keys belong to their caller and their request.
--
-- A key was tenant-wide and replayed whatever the request: another agent's
-- write with the same key got the first agent's memory id and was dropped,
-- and a forget of one memory with the key of another's reported it
-- deleted. A key is now scoped to the caller (agent and run) and records
-- the digest of the request it was first sent with (memory.Key); another
-- request under it is refused. Keys of the old shape name no caller or
-- request, so they cannot be matched and are dropped: a retry that spans
-- the upgrade is a new write.
DROP TABLE memory_keys;

CREATE TABLE memory_keys (
    tenant     text    NOT NULL,
    kind       text    NOT NULL, -- 'write' or 'forget'
    agent      text    NOT NULL,
    run        text    NOT NULL,
    key        text    NOT NULL,
    request    text    NOT NULL, -- memory.RequestDigest of the first request
    result_id  text    NOT NULL, -- memory or proposal id
    scope      text    NOT NULL,
    event_id   text    NOT NULL,
    count      integer NOT NULL DEFAULT 0,
    durable    boolean NOT NULL DEFAULT true,
    created_ms bigint  NOT NULL,
    PRIMARY KEY (tenant, kind, agent, run, key)
);
CREATE INDEX memory_keys_age ON memory_keys (created_ms);
