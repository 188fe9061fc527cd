-- Knowledge collections of the tool gateway (tools.KnowledgeStore): the
-- collections, the ingest job queue, the documents committed to each
-- collection and their entity graphs. A document's chunks are memories of
-- the memory store (0006_memory), in a partition of their own.
--
-- Every table is keyed by tenant first. Times are microseconds since the
-- Unix epoch (0: unset). Metadata and graph data are stored as given.

CREATE TABLE knowledge_collections (
    tenant               TEXT    NOT NULL,
    id                   TEXT    NOT NULL,
    name                 TEXT    NOT NULL,
    description          TEXT    NOT NULL DEFAULT '',
    documents            INTEGER NOT NULL DEFAULT 0,
    chunks               INTEGER NOT NULL DEFAULT 0,
    created_us           INTEGER NOT NULL,
    deleted_us           INTEGER NOT NULL DEFAULT 0, -- set: waiting for its chunks to be purged
    graph_status         TEXT    NOT NULL DEFAULT 'none',
    graph_error          TEXT    NOT NULL DEFAULT '',
    graph_entities       INTEGER NOT NULL DEFAULT 0,
    graph_relationships  INTEGER NOT NULL DEFAULT 0,
    graph_communities    INTEGER NOT NULL DEFAULT 0,
    graph_requested_us   INTEGER NOT NULL DEFAULT 0,
    graph_built_us       INTEGER NOT NULL DEFAULT 0,
    graph_attempts       INTEGER NOT NULL DEFAULT 0,
    graph_lease_owner    TEXT    NOT NULL DEFAULT '',
    graph_lease_until_us INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
-- A name is taken while its collection lives: a deleted one frees it.
CREATE UNIQUE INDEX knowledge_collections_name ON knowledge_collections (tenant, name) WHERE deleted_us = 0;
CREATE INDEX knowledge_collections_purge ON knowledge_collections (deleted_us) WHERE deleted_us > 0;
CREATE INDEX knowledge_collections_graph_claim ON knowledge_collections (graph_requested_us, tenant, id)
    WHERE graph_status IN ('pending', 'running') AND deleted_us = 0;

CREATE TABLE knowledge_graphs (
    tenant        TEXT NOT NULL,
    collection_id TEXT NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (tenant, collection_id)
);

CREATE TABLE knowledge_jobs (
    tenant         TEXT    NOT NULL,
    id             TEXT    NOT NULL,
    collection_id  TEXT    NOT NULL,
    status         TEXT    NOT NULL,
    error          TEXT    NOT NULL DEFAULT '',
    document_id    TEXT    NOT NULL DEFAULT '',
    duplicate_of   TEXT    NOT NULL DEFAULT '',
    content        TEXT    NOT NULL DEFAULT '', -- emptied once the job ends
    sha256         TEXT    NOT NULL,
    filename       TEXT    NOT NULL DEFAULT '',
    source_url     TEXT    NOT NULL DEFAULT '',
    metadata       BLOB,
    attempts       INTEGER NOT NULL DEFAULT 0,
    lease_owner    TEXT    NOT NULL DEFAULT '',
    lease_until_us INTEGER NOT NULL DEFAULT 0,
    not_before_us  INTEGER NOT NULL DEFAULT 0,
    created_us     INTEGER NOT NULL,
    updated_us     INTEGER NOT NULL,
    PRIMARY KEY (tenant, id)
);
-- Claims read the jobs still live, oldest first, however many ended; the
-- tenant's live jobs are counted and cancelled by the second index.
CREATE INDEX knowledge_jobs_claim ON knowledge_jobs (created_us, id, tenant) WHERE status IN ('pending', 'running');
CREATE INDEX knowledge_jobs_active ON knowledge_jobs (tenant, collection_id) WHERE status IN ('pending', 'running');
CREATE INDEX knowledge_jobs_ended ON knowledge_jobs (updated_us)
    WHERE status IN ('completed', 'failed', 'dead_letter', 'cancelled');

CREATE TABLE knowledge_documents (
    tenant        TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    collection_id TEXT    NOT NULL,
    job_id        TEXT    NOT NULL,
    sha256        TEXT    NOT NULL,
    filename      TEXT    NOT NULL DEFAULT '',
    source_url    TEXT    NOT NULL DEFAULT '',
    metadata      BLOB,
    bytes         INTEGER NOT NULL,
    chunks        INTEGER NOT NULL,
    created_us    INTEGER NOT NULL,
    PRIMARY KEY (tenant, id),
    -- One document per content in a collection: a second is a duplicate.
    UNIQUE (tenant, collection_id, sha256)
);
CREATE INDEX knowledge_documents_collection ON knowledge_documents (tenant, collection_id, id);
