-- Running totals for the gate ledger: a rule aggregate's window total is
-- its series' head minus the series' last entry before the window, two
-- index lookups, instead of a count and sum over the window's entries.
--
-- Every entry belongs to two series, its subject's (tenant, action_type,
-- subject) and its action type's, the wide series (tenant, action_type).
-- Each entry carries both series' count (subject_n, wide_n) and sum up to
-- and including itself; the sum is a compensated pair hi + lo kept with
-- TwoSum by the store (store/internal/sqlstore.RunningTotal). The head
-- tables hold each series' latest values and time; a write locks and
-- moves them in the transaction that inserts its entries (their pages
-- keep free space, fillfactor 70, so that these updates stay HOT).
-- Entries are filed at the later of their time and their series' latest,
-- so every series is in at_us order and n grows along it.

ALTER TABLE gate_ledger ADD COLUMN subject_n  bigint           NOT NULL DEFAULT 0;
ALTER TABLE gate_ledger ADD COLUMN subject_hi double precision NOT NULL DEFAULT 0;
ALTER TABLE gate_ledger ADD COLUMN subject_lo double precision NOT NULL DEFAULT 0;
ALTER TABLE gate_ledger ADD COLUMN wide_n     bigint           NOT NULL DEFAULT 0;
ALTER TABLE gate_ledger ADD COLUMN wide_hi    double precision NOT NULL DEFAULT 0;
ALTER TABLE gate_ledger ADD COLUMN wide_lo    double precision NOT NULL DEFAULT 0;

-- The backfill numbers and sums the existing entries of each series in
-- (at_us, seq) order: time order, ties in insertion order. Its sums are
-- the server's window sums with lo = 0, not compensated, so a window that
-- reaches back into these entries may be off by their rounding, under a
-- cent while a series' total stays below 10^13. That is fine for a
-- one-time pass; entries from now on are added with TwoSum, and windows
-- of them keep their cents.
UPDATE gate_ledger SET (subject_n, subject_hi, wide_n, wide_hi) = (c.sn, c.ss, c.wn, c.ws)
FROM (
    SELECT seq,
        row_number() OVER s AS sn, sum(amount) OVER s AS ss,
        row_number() OVER w AS wn, sum(amount) OVER w AS ws
    FROM gate_ledger
    WINDOW s AS (PARTITION BY tenant, action_type, subject ORDER BY at_us, seq),
           w AS (PARTITION BY tenant, action_type ORDER BY at_us, seq)
) AS c
WHERE gate_ledger.seq = c.seq;

CREATE TABLE gate_ledger_subject_heads (
    tenant      text             NOT NULL,
    action_type text             NOT NULL,
    subject     text             NOT NULL,
    n           bigint           NOT NULL,
    hi          double precision NOT NULL,
    lo          double precision NOT NULL,
    at_us       bigint           NOT NULL,
    PRIMARY KEY (tenant, action_type, subject)
) WITH (fillfactor = 70);

CREATE TABLE gate_ledger_wide_heads (
    tenant      text             NOT NULL,
    action_type text             NOT NULL,
    n           bigint           NOT NULL,
    hi          double precision NOT NULL,
    lo          double precision NOT NULL,
    at_us       bigint           NOT NULL,
    PRIMARY KEY (tenant, action_type)
) WITH (fillfactor = 70);

-- A series' head is its last entry, the one whose n is the series' count.
INSERT INTO gate_ledger_subject_heads (tenant, action_type, subject, n, hi, lo, at_us)
SELECT tenant, action_type, subject, subject_n, subject_hi, subject_lo, at_us FROM gate_ledger
WHERE (tenant, action_type, subject, subject_n) IN (
    SELECT tenant, action_type, subject, count(*) FROM gate_ledger GROUP BY tenant, action_type, subject);
INSERT INTO gate_ledger_wide_heads (tenant, action_type, n, hi, lo, at_us)
SELECT tenant, action_type, wide_n, wide_hi, wide_lo, at_us FROM gate_ledger
WHERE (tenant, action_type, wide_n) IN (
    SELECT tenant, action_type, count(*) FROM gate_ledger GROUP BY tenant, action_type);

-- A window's base is the series' last entry before it: the greatest
-- at_us below the window's start and, among entries at that time, the
-- greatest n. Each index carries the running totals (INCLUDE), so the
-- lookup can read the index alone; n in the key orders equal times
-- without a sort. They replace 0008's indexes, which only the old count and sum
-- read.
DROP INDEX gate_ledger_subject;
DROP INDEX gate_ledger_type;
CREATE INDEX gate_ledger_subject_totals ON gate_ledger (tenant, action_type, subject, at_us, subject_n) INCLUDE (subject_hi, subject_lo);
CREATE INDEX gate_ledger_wide_totals ON gate_ledger (tenant, action_type, at_us, wide_n) INCLUDE (wide_hi, wide_lo);
