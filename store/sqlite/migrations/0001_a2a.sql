-- A2A tasks and push-notification configs.
--
-- A task's full JSON encoding is in body; the other columns copy the fields
-- that lookups, scope checks and listings need, so no query parses JSON.

CREATE TABLE a2a_tasks (
    id           TEXT    NOT NULL PRIMARY KEY,
    tenant       TEXT    NOT NULL,
    owner        TEXT    NOT NULL,
    context_id   TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    status_ts_ms INTEGER NOT NULL,
    version      INTEGER NOT NULL,
    body         BLOB    NOT NULL
);

-- Listing order is (status_ts_ms DESC, id DESC) within one scope.
CREATE INDEX a2a_tasks_by_scope ON a2a_tasks (tenant, owner, status_ts_ms DESC, id DESC);
CREATE INDEX a2a_tasks_by_context ON a2a_tasks (tenant, owner, context_id, status_ts_ms DESC, id DESC);

CREATE TABLE a2a_push_configs (
    tenant  TEXT NOT NULL,
    owner   TEXT NOT NULL,
    task_id TEXT NOT NULL,
    id      TEXT NOT NULL,
    body    BLOB NOT NULL,
    PRIMARY KEY (tenant, owner, task_id, id)
) WITHOUT ROWID;
