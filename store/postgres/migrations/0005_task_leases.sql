-- Process leases, for crash recovery (a2asrv.Recoverer, store/lease).
--
-- Every open database handle (one per replica) is an instance: a row here
-- whose expiry it pushes forward at every heartbeat, by the database's clock
-- so that replicas' clocks need not agree. Every task write records the
-- writing instance in a2a_tasks.instance_id. A task still SUBMITTED or
-- WORKING (or with no state) whose instance has no live row was left by a
-- dead replica. Tasks written before this migration have instance '' and
-- count as left.

CREATE TABLE a2a_instances (
    id           text COLLATE "C" NOT NULL PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);

ALTER TABLE a2a_tasks ADD COLUMN instance_id text COLLATE "C" NOT NULL DEFAULT '';

-- Only tasks waiting for a process are ever looked up by instance; the
-- state list is a2asrv.OrphanStates.
CREATE INDEX a2a_tasks_unsettled ON a2a_tasks (instance_id)
    WHERE state IN ('TASK_STATE_UNSPECIFIED', 'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');
