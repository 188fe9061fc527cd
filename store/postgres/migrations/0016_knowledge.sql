-- Knowledge collections of the tool gateway (tools.KnowledgeStore): the
-- collections, the ingest job queue, the documents committed to each
-- collection and their entity graphs. A document's chunks are memories of
-- the memory store (0006_memory), in a partition of their own.
--
-- Every table is keyed by tenant first. Times are microseconds since the
-- Unix epoch (0: unset). Metadata and graph data are bytea stored as
-- given. COLLATE "C" keeps names and ids in byte order, as in the SQLite
-- store, whatever the database's collation.

-- One row per tenant that ever made a collection: the lock that makes a
-- tenant's limits (collections, active jobs) one check and one write.
CREATE TABLE knowledge_tenants (
    tenant text COLLATE "C" NOT NULL PRIMARY KEY
);

CREATE TABLE knowledge_collections (
    tenant               text COLLATE "C" NOT NULL,
    id                   text COLLATE "C" NOT NULL,
    name                 text COLLATE "C" NOT NULL,
    description          text   NOT NULL DEFAULT '',
    documents            bigint NOT NULL DEFAULT 0,
    chunks               bigint NOT NULL DEFAULT 0,
    created_us           bigint NOT NULL,
    deleted_us           bigint NOT NULL DEFAULT 0, -- set: waiting for its chunks to be purged
    graph_status         text   NOT NULL DEFAULT 'none',
    graph_error          text   NOT NULL DEFAULT '',
    graph_entities       bigint NOT NULL DEFAULT 0,
    graph_relationships  bigint NOT NULL DEFAULT 0,
    graph_communities    bigint NOT NULL DEFAULT 0,
    graph_requested_us   bigint NOT NULL DEFAULT 0,
    graph_built_us       bigint NOT NULL DEFAULT 0,
    graph_attempts       bigint NOT NULL DEFAULT 0,
    graph_lease_owner    text   NOT NULL DEFAULT '',
    graph_lease_until_us bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, id)
);
-- A name is taken while its collection lives: a deleted one frees it.
CREATE UNIQUE INDEX knowledge_collections_name ON knowledge_collections (tenant, name) WHERE deleted_us = 0;
CREATE INDEX knowledge_collections_purge ON knowledge_collections (deleted_us) WHERE deleted_us > 0;
-- Graph claims (FOR UPDATE SKIP LOCKED) look only at graphs waiting or
-- being built.
CREATE INDEX knowledge_collections_graph_claim ON knowledge_collections (graph_requested_us, tenant, id)
    WHERE graph_status IN ('pending', 'running') AND deleted_us = 0;

CREATE TABLE knowledge_graphs (
    tenant        text COLLATE "C" NOT NULL,
    collection_id text COLLATE "C" NOT NULL,
    data          bytea NOT NULL,
    PRIMARY KEY (tenant, collection_id)
);

CREATE TABLE knowledge_jobs (
    tenant         text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    collection_id  text COLLATE "C" NOT NULL,
    status         text   NOT NULL,
    error          text   NOT NULL DEFAULT '',
    document_id    text   NOT NULL DEFAULT '',
    duplicate_of   text   NOT NULL DEFAULT '',
    content        text   NOT NULL DEFAULT '', -- emptied once the job ends
    sha256         text   NOT NULL,
    filename       text   NOT NULL DEFAULT '',
    source_url     text   NOT NULL DEFAULT '',
    metadata       bytea,
    attempts       bigint NOT NULL DEFAULT 0,
    lease_owner    text   NOT NULL DEFAULT '',
    lease_until_us bigint NOT NULL DEFAULT 0,
    not_before_us  bigint NOT NULL DEFAULT 0,
    created_us     bigint NOT NULL,
    updated_us     bigint NOT NULL,
    PRIMARY KEY (tenant, id)
);
-- Claims read the jobs still live, oldest first, however many ended; the
-- tenant's live jobs are counted and cancelled by the second index.
CREATE INDEX knowledge_jobs_claim ON knowledge_jobs (created_us, id, tenant) WHERE status IN ('pending', 'running');
CREATE INDEX knowledge_jobs_active ON knowledge_jobs (tenant, collection_id) WHERE status IN ('pending', 'running');
CREATE INDEX knowledge_jobs_ended ON knowledge_jobs (updated_us)
    WHERE status IN ('completed', 'failed', 'dead_letter', 'cancelled');

CREATE TABLE knowledge_documents (
    tenant        text COLLATE "C" NOT NULL,
    id            text COLLATE "C" NOT NULL,
    collection_id text COLLATE "C" NOT NULL,
    job_id        text   NOT NULL,
    sha256        text COLLATE "C" NOT NULL,
    filename      text   NOT NULL DEFAULT '',
    source_url    text   NOT NULL DEFAULT '',
    metadata      bytea,
    bytes         bigint NOT NULL,
    chunks        bigint NOT NULL,
    created_us    bigint NOT NULL,
    PRIMARY KEY (tenant, id),
    -- One document per content in a collection: a second is a duplicate.
    UNIQUE (tenant, collection_id, sha256)
);
CREATE INDEX knowledge_documents_collection ON knowledge_documents (tenant, collection_id, id);
