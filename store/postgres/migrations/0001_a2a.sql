-- A2A tasks and push-notification configs.
--
-- A task's full JSON encoding is in body (bytea, not jsonb: jsonb rejects
-- the \u0000 escape that user content may carry); the other columns copy
-- the fields that lookups, scope checks and listings need. Keys use the "C"
-- collation so that id order is byte order, the same as in the other stores
-- and in the page tokens.

CREATE TABLE a2a_tasks (
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    tenant       text COLLATE "C" NOT NULL,
    owner        text COLLATE "C" NOT NULL,
    context_id   text COLLATE "C" NOT NULL,
    state        text   NOT NULL,
    status_ts_ms bigint NOT NULL,
    version      bigint NOT NULL,
    body         bytea  NOT NULL
);

-- Listing order is (status_ts_ms DESC, id DESC) within one scope.
CREATE INDEX a2a_tasks_by_scope ON a2a_tasks (tenant, owner, status_ts_ms DESC, id DESC);
CREATE INDEX a2a_tasks_by_context ON a2a_tasks (tenant, owner, context_id, status_ts_ms DESC, id DESC);

CREATE TABLE a2a_push_configs (
    tenant  text COLLATE "C" NOT NULL,
    owner   text COLLATE "C" NOT NULL,
    task_id text COLLATE "C" NOT NULL,
    id      text COLLATE "C" NOT NULL,
    body    bytea NOT NULL,
    PRIMARY KEY (tenant, owner, task_id, id)
);
