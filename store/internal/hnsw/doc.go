// Package hnsw is an approximate nearest-neighbour index over unit float32
// vectors: a hierarchical navigable small world graph (Malkov and
// Yashunin). The memory service's partition index builds one per large
// tenant×scope partition so a search visits a few thousand vectors
// instead of all of them.
//
//	g := hnsw.New(256, nil)
//	for slot, vec := range vectors { // unit vectors
//		g.Add(uint32(slot), vec)
//	}
//	best := g.Search(query, 10, 0, func(slot uint32) bool {
//		return !deleted[slot] // filtered out, still walked through
//	})
//
// # Model
//
// Every node sits on layer 0 and, with probability 1/M per layer, on the
// layers above; a search descends greedily from the single top node and
// then widens to a best-first walk of ef candidates on layer 0. A new node
// is linked to up to M neighbours per layer (2·M kept on layer 0) chosen
// by the paper's heuristic, which prefers neighbours in different
// directions over the M nearest so clusters stay linked to each other.
// Scores are dot products (cosine, as vectors are unit length): higher is
// nearer.
//
// Ids are the caller's dense slot numbers; the graph's tables are arrays
// indexed by them, so memory follows the largest id. There is no delete:
// the caller filters deleted or expired slots out with Search's accept
// function and rebuilds the graph when too many are dead. A node's links
// are a count and up to 2·M ids in one flat []uint32 for layer 0 (132
// bytes per node at M 16) plus a shared arena for the few nodes on upper
// layers; the vectors are the caller's slices, not copies.
//
// # Concurrency
//
// Add must not run concurrently with anything else on the same Graph.
// Searches that do not overlap an Add may run concurrently: they only
// read the graph and take their scratch space (heaps and a visited set
// reset by a generation counter) from a sync.Pool.
//
// # Measured (clustered 256-dimensional data, clusters of ~200, 2 cores)
//
// See BenchmarkSearch and TestRecall*. TODO figures.
//
// # Limits
//
// Recall depends on the data. Clustered data, which real embeddings
// resemble, reaches recall@10 above 0.99 at the default EfSearch 64;
// vectors spread uniformly over a 256-dimensional sphere have no
// structure to exploit and need EfSearch of about 512 for 0.9.
// Hundreds of exact copies of one vector tie with each other and can
// crowd one another out of neighbour lists, so a search for that vector
// may miss some copies (tens of copies are found; TestDuplicateVectors).
package hnsw
