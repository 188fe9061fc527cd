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
    tenant     TEXT    NOT NULL,
    kind       TEXT    NOT NULL, -- 'write' or 'forget'
    agent      TEXT    NOT NULL,
    run        TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    request    TEXT    NOT NULL, -- memory.RequestDigest of the first request
    result_id  TEXT    NOT NULL, -- memory or proposal id
    scope      TEXT    NOT NULL,
    event_id   TEXT    NOT NULL,
    count      INTEGER NOT NULL DEFAULT 0,
    durable    INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (tenant, kind, agent, run, key)
);
CREATE INDEX memory_keys_age ON memory_keys (created_ms);
