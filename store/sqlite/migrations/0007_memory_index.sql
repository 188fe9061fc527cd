-- Memory search moved into the store's in-process partition index
-- (store/internal/memindex), which ranks by BM25 over the partition's own
-- statistics: the FTS5 table is no longer read, and writing it cost every
-- memory write a third of its time. The partition counters now also count
-- every update (content, tags, confidence, custom), since searches return
-- the memory from the index.
DROP TABLE memory_fts;
