package postgres

// KnownEventsSQL is the lookup of an append's dedupe keys, whose plan a
// test checks.
const KnownEventsSQL = knownEventsSQL
