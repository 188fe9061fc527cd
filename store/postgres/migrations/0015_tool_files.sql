-- The files of the tool gateway's novaos.files.* tools (tools.FileStore).
--
-- A file is keyed by its tenant, its area (agent: the owning agent's id,
-- '' for the tenant's shared area) and its path; COLLATE "C" orders
-- paths by their bytes, as in the SQLite store, whatever the database's
-- collation, which is how listings page. The content is bytea in the
-- file's row (TOASTed out of line when large, so a listing, which reads
-- the other columns, does not read it). Times are microseconds since the
-- Unix epoch, as bigint like the other tables' times.
--
-- tool_file_usage holds each tenant's totals and the last version given
-- in the tenant. A put or delete locks the tenant's row first, then
-- checks and writes the file and moves the totals in the same
-- transaction: the lock orders every replica's writes of one tenant, so
-- none slips past the quota, and versions, taken from the counter, are
-- unique in a tenant and only grow. A tenant's row stays when its last
-- file is deleted, with its counter.

CREATE TABLE tool_files (
    tenant       text COLLATE "C" NOT NULL,
    agent        text COLLATE "C" NOT NULL,
    path         text COLLATE "C" NOT NULL,
    version      bigint NOT NULL,
    size         bigint NOT NULL,
    content_type text   NOT NULL,
    sha256       text   NOT NULL,
    created_us   bigint NOT NULL,
    updated_us   bigint NOT NULL,
    content      bytea  NOT NULL,
    PRIMARY KEY (tenant, agent, path)
);

CREATE TABLE tool_file_usage (
    tenant       text COLLATE "C" NOT NULL PRIMARY KEY,
    bytes        bigint NOT NULL,
    files        bigint NOT NULL,
    last_version bigint NOT NULL
);
