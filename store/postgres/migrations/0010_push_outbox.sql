-- Push-notification delivery (a2asrv.PushOutbox).
--
-- A config is a stream: its row carries the delivery state. pending counts
-- its rows in a2a_push_outbox; due_ms is when its head (oldest row) is next
-- due, NULL when nothing is pending or the stream is dead. A claim pushes
-- due_ms out by the lease and stamps lease, so a claimer that dies leaves
-- the stream due again once the lease runs out. attempts counts the failed
-- attempts at the head; last_error (no secrets) and the times are what
-- GetTaskPushNotificationConfig can show.
--
-- pending is a counter on the config row, not a count of outbox rows,
-- because a writer that waited for the row's lock re-reads the row but not
-- other tables: settling a stream while a task write queues to it must see
-- that write, and the counter is how it does.
ALTER TABLE a2a_push_configs ADD COLUMN state             text   NOT NULL DEFAULT 'active';
ALTER TABLE a2a_push_configs ADD COLUMN pending           bigint NOT NULL DEFAULT 0;
ALTER TABLE a2a_push_configs ADD COLUMN due_ms            bigint;
ALTER TABLE a2a_push_configs ADD COLUMN lease             text   NOT NULL DEFAULT '';
ALTER TABLE a2a_push_configs ADD COLUMN attempts          bigint NOT NULL DEFAULT 0;
ALTER TABLE a2a_push_configs ADD COLUMN last_error        text   NOT NULL DEFAULT '';
ALTER TABLE a2a_push_configs ADD COLUMN last_attempt_ms   bigint NOT NULL DEFAULT 0;
ALTER TABLE a2a_push_configs ADD COLUMN last_delivered_ms bigint NOT NULL DEFAULT 0;

CREATE INDEX a2a_push_configs_due ON a2a_push_configs (due_ms) WHERE due_ms IS NOT NULL;

-- The notifications a task write queued, in the transaction of the write:
-- one row per (active config of the task) x (StreamResponse the write
-- produced). seq orders them; a stream's rows are delivered in seq order.
-- Writes to one task hold its row lock while they queue, so seq grows
-- along a stream in commit order too.
CREATE TABLE a2a_push_outbox (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant    text COLLATE "C" NOT NULL,
    owner     text COLLATE "C" NOT NULL,
    task_id   text COLLATE "C" NOT NULL,
    config_id text COLLATE "C" NOT NULL,
    queued_ms bigint NOT NULL,
    body      bytea  NOT NULL
);

CREATE INDEX a2a_push_outbox_stream ON a2a_push_outbox (task_id, tenant, owner, config_id, seq);
