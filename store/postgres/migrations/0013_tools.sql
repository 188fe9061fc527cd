-- The tool gateway (package tools): MCP sessions and tenants' policies.
--
-- Times are microseconds since the Unix epoch, as bigint like the other
-- tables' times. A session is found by its id alone (a request names only
-- the id), so ids are unique across tenants. Sweeps of idle sessions read
-- last_seen_us's index. COLLATE "C" compares ids and tenants byte for
-- byte, as the SQLite store does.

CREATE TABLE tool_sessions (
    id               text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant           text COLLATE "C" NOT NULL,
    subject          text   NOT NULL,
    protocol_version text   NOT NULL,
    created_us       bigint NOT NULL,
    last_seen_us     bigint NOT NULL
);
CREATE INDEX tool_sessions_last_seen ON tool_sessions (last_seen_us);

CREATE TABLE tool_policies (
    tenant     text COLLATE "C" NOT NULL PRIMARY KEY,
    expr       text   NOT NULL,
    version    bigint NOT NULL,
    updated_us bigint NOT NULL,
    updated_by text   NOT NULL
);
