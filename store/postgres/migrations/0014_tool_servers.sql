-- The tool gateway's upstream MCP servers (tools.ServerStore): what each
-- tenant registered, by name.
--
-- Times are microseconds since the Unix epoch, as bigint like the other
-- tables' times. The key, the version and the times are columns; the rest
-- of a registration is its JSON encoding in body, so a field the
-- registration gains needs no migration. body and the sealed credentials
-- are bytea stored as given. COLLATE "C" keeps names in byte order, as in
-- the SQLite store, whatever the database's collation.

CREATE TABLE tool_servers (
    tenant             text COLLATE "C" NOT NULL,
    name               text COLLATE "C" NOT NULL,
    version            bigint NOT NULL,
    created_us         bigint NOT NULL,
    updated_us         bigint NOT NULL,
    sealed_credentials bytea,
    body               bytea  NOT NULL,
    PRIMARY KEY (tenant, name)
);
