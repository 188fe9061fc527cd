-- Agent registry records (internal/registry). The record's full JSON
-- encoding is in body (bytea, for the same reason as a2a_tasks.body); id
-- and name are copied out for lookups, uniqueness and name-ordered listing,
-- in the "C" collation so name order is byte order, as in the page tokens.

CREATE TABLE registry_agents (
    id   text COLLATE "C" NOT NULL PRIMARY KEY,
    name text COLLATE "C" NOT NULL UNIQUE,
    body bytea NOT NULL
);
