-- Events appended to a task (a2asrv.TaskStore.Append): status and artifact
-- updates kept as they were written, so a streamed chunk costs one small
-- row instead of a rewrite of the whole task. A read applies them in
-- version order to the body in a2a_tasks; a whole-task write (Update, or
-- Append with a compacted task) replaces the body and drops them.
CREATE TABLE a2a_task_events (
    task_id text COLLATE "C" NOT NULL,
    version bigint NOT NULL,
    body    bytea  NOT NULL,
    PRIMARY KEY (task_id, version)
);

-- events counts a task's rows in a2a_task_events, so reading a task that
-- has none costs no second query.
ALTER TABLE a2a_tasks ADD COLUMN events bigint NOT NULL DEFAULT 0;
