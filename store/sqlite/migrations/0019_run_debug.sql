-- Run debugging (package gateway's DebugSession) and the trace context of
-- run events.
--
-- A run's debugger is kept in the run's body with the rest of the run;
-- its breakpoint state has a column too, because claims pass over a run
-- whose debugger paused it. The claim index's predicate stays on the
-- status: the state is checked on the few rows it holds, as the lease is.
-- An event keeps the W3C trace and span ids it was recorded in ('' when
-- none).

ALTER TABLE gateway_runs ADD COLUMN debug_state TEXT NOT NULL DEFAULT '';

ALTER TABLE gateway_run_events ADD COLUMN trace_id TEXT NOT NULL DEFAULT '';
ALTER TABLE gateway_run_events ADD COLUMN span_id TEXT NOT NULL DEFAULT '';
