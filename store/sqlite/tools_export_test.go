package sqlite

// SweepToolSessionsSQL is ToolStore.SweepSessions' statement.
const SweepToolSessionsSQL = sweepToolSessionsSQL
