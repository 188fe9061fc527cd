-- Memory search moved into the store's in-process partition index
-- (store/internal/memindex), which ranks keyword matches by BM25 over the
-- partition's own statistics, as the SQLite store does: the tsvector
-- column and its GIN index are no longer read.
--
-- A partition's write counters, bumped in the transaction of each write:
-- appended by new memories (bumped before the row is inserted, so the row
-- lock orders a partition's appends: their seqs are in commit order),
-- changed by anything else that alters a stored memory (update, forget,
-- sweep). Each process's index compares them to what it loaded.
CREATE TABLE memory_partitions (
    tenant   text   NOT NULL,
    scope    text   NOT NULL,
    owner    text   NOT NULL,
    appended bigint NOT NULL DEFAULT 0,
    changed  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant, scope, owner)
);
INSERT INTO memory_partitions (tenant, scope, owner, appended)
    SELECT tenant, scope, owner, count(*) FROM memories GROUP BY tenant, scope, owner;

DROP INDEX memories_terms;
ALTER TABLE memories DROP COLUMN terms;
