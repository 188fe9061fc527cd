-- Push-notification delivery (a2asrv.PushOutbox).
--
-- A config is a stream: its row carries the delivery state. pending counts
-- its rows in a2a_push_outbox; due_ms is when its head (oldest row) is next
-- due, NULL when nothing is pending or the stream is dead. A claim pushes
-- due_ms out by the lease and stamps lease, so a claimer that dies leaves
-- the stream due again once the lease runs out. attempts counts the failed
-- attempts at the head; last_error (no secrets) and the times are what
-- GetTaskPushNotificationConfig can show.
ALTER TABLE a2a_push_configs ADD COLUMN state             TEXT    NOT NULL DEFAULT 'active';
ALTER TABLE a2a_push_configs ADD COLUMN pending           INTEGER NOT NULL DEFAULT 0;
ALTER TABLE a2a_push_configs ADD COLUMN due_ms            INTEGER;
ALTER TABLE a2a_push_configs ADD COLUMN lease             TEXT    NOT NULL DEFAULT '';
ALTER TABLE a2a_push_configs ADD COLUMN attempts          INTEGER NOT NULL DEFAULT 0;
ALTER TABLE a2a_push_configs ADD COLUMN last_error        TEXT    NOT NULL DEFAULT '';
ALTER TABLE a2a_push_configs ADD COLUMN last_attempt_ms   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE a2a_push_configs ADD COLUMN last_delivered_ms INTEGER NOT NULL DEFAULT 0;

CREATE INDEX a2a_push_configs_due ON a2a_push_configs (due_ms) WHERE due_ms IS NOT NULL;

-- The notifications a task write queued, in the transaction of the write:
-- one row per (active config of the task) x (StreamResponse the write
-- produced). seq orders them; a stream's rows are delivered in seq order.
-- AUTOINCREMENT: a seq is never used twice, even after the newest rows are
-- delivered and deleted, because receivers tell repeats by it (the JWT's
-- notificationId).
CREATE TABLE a2a_push_outbox (
    seq       INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    tenant    TEXT    NOT NULL,
    owner     TEXT    NOT NULL,
    task_id   TEXT    NOT NULL,
    config_id TEXT    NOT NULL,
    queued_ms INTEGER NOT NULL,
    body      BLOB    NOT NULL
);

CREATE INDEX a2a_push_outbox_stream ON a2a_push_outbox (task_id, tenant, owner, config_id, seq);
