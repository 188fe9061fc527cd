-- Agent registry records (internal/registry). The record's full JSON
-- encoding is in body; id and name are copied out for lookups, uniqueness
-- and name-ordered listing.

CREATE TABLE registry_agents (
    id   TEXT NOT NULL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    body BLOB NOT NULL
);
