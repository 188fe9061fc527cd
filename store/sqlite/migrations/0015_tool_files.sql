-- The files of the tool gateway's novaos.files.* tools (tools.FileStore).
--
-- A file is keyed by its tenant, its area (agent: the owning agent's id,
-- '' for the tenant's shared area) and its path; BINARY collation orders
-- paths by their bytes, which is how listings page. The content is a
-- BLOB in the file's row, last, so that a listing reads the columns
-- before it and never the content's overflow pages. Times are
-- microseconds since the Unix epoch.
--
-- tool_file_usage holds each tenant's totals, which a put checks against
-- its quota and moves in the same transaction as the file, and the last
-- version given in the tenant: versions come from it, so they are unique
-- in a tenant and only grow. A tenant's row stays when its last file is
-- deleted, with its counter.

CREATE TABLE tool_files (
    tenant       TEXT    NOT NULL,
    agent        TEXT    NOT NULL,
    path         TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    size         INTEGER NOT NULL,
    content_type TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,
    created_us   INTEGER NOT NULL,
    updated_us   INTEGER NOT NULL,
    content      BLOB    NOT NULL,
    PRIMARY KEY (tenant, agent, path)
);

CREATE TABLE tool_file_usage (
    tenant       TEXT    NOT NULL PRIMARY KEY,
    bytes        INTEGER NOT NULL,
    files        INTEGER NOT NULL,
    last_version INTEGER NOT NULL
) WITHOUT ROWID;
