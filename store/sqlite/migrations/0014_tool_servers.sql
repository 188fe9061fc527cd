-- The tool gateway's upstream MCP servers (tools.ServerStore): what each
-- tenant registered, by name.
--
-- Times are microseconds since the Unix epoch. The key, the version and
-- the times are columns; the rest of a registration is its JSON encoding
-- in body, so a field the registration gains needs no migration. The
-- sealed credentials are a BLOB of their own, stored as given.

CREATE TABLE tool_servers (
    tenant             TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    version            INTEGER NOT NULL,
    created_us         INTEGER NOT NULL,
    updated_us         INTEGER NOT NULL,
    sealed_credentials BLOB,
    body               BLOB    NOT NULL,
    PRIMARY KEY (tenant, name)
) WITHOUT ROWID;
