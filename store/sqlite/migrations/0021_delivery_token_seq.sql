-- The sequence number of the event a run's newest token was delivered
-- with: a start with an older token of the same event is accepted once
-- the newest one's consumer acknowledged past it (nothing will bring it
-- again).
ALTER TABLE delivery_run_tokens ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
