-- Reserved for a migration another branch adds; this placeholder keeps the
-- versions without a gap until it lands, and is replaced by it.
SELECT 1;
