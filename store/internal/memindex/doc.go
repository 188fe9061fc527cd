// Package memindex keeps the search structures of memory partitions in
// process.
//
// It holds an inverted index ranked with BM25, the vectors of each model,
// the conversation order and the filter columns. The durable stores
// (store/sqlite, store/postgres) answer keyword search, vector search, term
// statistics and conversation neighbours from it, and read only the memories
// that make the page from their database.
//
// Why: reading a partition's matches from the database (FTS5 postings,
// vector blobs, one B-tree seek per candidate) costs tens of
// milliseconds at 10k memories; the same ranking over arrays in memory
// costs a few.
//
// A partition's entry is exact, never stale: the store keeps two counters
// per partition in the database, bumped in the transaction of every write
// (appended for new memories, changed for updates, forgets and sweeps).
// Every search reads them first. A newer appended count loads only the
// rows added since (their sequence numbers are above the entry's
// highest). A newer changed count reads the partition's (seq, id,
// version) triples, marks the slots of deleted and changed memories dead
// and loads the changed ones again; when more than a quarter of the entry
// would be dead, it is rebuilt instead. The counters are in the database,
// so writes by another process sharing it are seen too.
//
// The ranking matches what the stores' SQL gave: BM25 with k1 1.2 and b
// 0.75 over memory.Terms of the content and tags (FTS5's bm25), except
// that the document frequencies and lengths are the partition's own, not
// the whole table's; ties go to the older memory. Vector scores are
// cosine similarities, compared only between vectors of one model and
// width.
//
// Entries are bounded by Options.MaxBytes; past it the least recently
// searched partitions are dropped whole and loaded again when next
// searched.
package memindex
