-- The tool gateway (package tools): MCP sessions and tenants' policies.
--
-- Times are microseconds since the Unix epoch. A session is found by its
-- id alone (a request names only the id), so ids are unique across
-- tenants. Sweeps of idle sessions read last_seen_us's index.

CREATE TABLE tool_sessions (
    id               TEXT    NOT NULL PRIMARY KEY,
    tenant           TEXT    NOT NULL,
    subject          TEXT    NOT NULL,
    protocol_version TEXT    NOT NULL,
    created_us       INTEGER NOT NULL,
    last_seen_us     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX tool_sessions_last_seen ON tool_sessions (last_seen_us);

CREATE TABLE tool_policies (
    tenant     TEXT    NOT NULL PRIMARY KEY,
    expr       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    updated_us INTEGER NOT NULL,
    updated_by TEXT    NOT NULL
) WITHOUT ROWID;
