-- Process leases, for crash recovery (a2asrv.Recoverer, store/lease).
--
-- Every open database handle is an instance: a row here whose expiry it
-- pushes forward at every heartbeat. Every task write records the writing
-- instance in a2a_tasks.instance_id. A task still SUBMITTED or WORKING (or
-- with no state) whose instance has no live row was left by a dead process.
-- Tasks written before this migration have instance '' and count as left.

CREATE TABLE a2a_instances (
    id           TEXT    NOT NULL PRIMARY KEY,
    heartbeat_ms INTEGER NOT NULL,
    expires_ms   INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE a2a_tasks ADD COLUMN instance_id TEXT NOT NULL DEFAULT '';

-- Only tasks waiting for a process are ever looked up by instance; the
-- state list is a2asrv.OrphanStates.
CREATE INDEX a2a_tasks_unsettled ON a2a_tasks (instance_id)
    WHERE state IN ('TASK_STATE_UNSPECIFIED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');
