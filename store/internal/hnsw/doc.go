// Package hnsw is an approximate nearest-neighbour index over unit float32
// vectors.
//
// It is a hierarchical navigable small world graph (Malkov and Yashunin).
// The memory service's partition index builds one per large tenant×scope
// partition so a search visits a few thousand vectors instead of all of
// them.
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
// # Measured
//
// Clustered 256-dimensional data (clusters of about 200 points, cosine
// about 0.5 within a cluster), defaults, one query at a time on a shared
// 2-core machine with AVX2 (the graph and the exact scan use the same dot
// product); BenchmarkSearch, BenchmarkExactScan and BenchmarkBuild in one
// run:
//
//	n      exact scan  EfSearch 32           EfSearch 64            EfSearch 128 (default)
//	10k    247 µs      39 µs (6.4×) r 0.99   61 µs (4.0×) r 0.9995  69 µs (3.6×) r 1.0
//	100k   6.29 ms     121 µs (52×) r 0.96   176 µs (36×) r 0.999   249 µs (25×) r 0.999
//
// (r: recall@10 against the exact scan). With half the ids rejected by
// accept the recall stays 0.999, but the walk must collect ef accepted
// nodes, so such a filter costs about what doubling ef does: 188 µs at
// 10k (1.3× faster than the exact scan), 648 µs at 100k (9.7×). Building
// takes 0.63 s per 10k and 16 s per 100k (6,300 inserts/s at 100k; at 10k
// 15,800/s with EfConstruction 64 against 11,300/s with 100). Without
// AVX2 and FMA the Go dot product is 7.5 times slower and searches and
// builds take 3 to 4 times as long. By construction the graph itself
// holds about 165 bytes per node at M 16 (links, offsets and the slice
// header of the caller's vector, which it does not copy: 1 KiB at 256
// dimensions).
//
// # Limits
//
// Recall depends on the data. Clustered data, which real embeddings
// resemble, reaches recall@10 above 0.99 at EfSearch 64.
// Vectors spread uniformly over a 256-dimensional sphere have no structure
// to exploit: at 20k nodes M 16 (EfConstruction 100) gives 0.34 at
// EfSearch 64 and 0.88 at 512; M 32 gives 0.92 at EfSearch 256 and 0.98
// at 512 for a build three times as long, while EfConstruction 200
// instead of 100 gains only 0.01. At 5k nodes the defaults reach 0.9
// at EfSearch 256 (TestRecallUniform); at 20k they need EfSearch about
// 640, where the graph was no faster than the exact scan (measured with
// the Go dot product).
//
// The memory service's default HashEmbedder (hashed words, word pairs and
// character n-grams) sits in between: on 20k synthetic texts of 300
// topics (half topic words, half Zipf-distributed common words; a one-off
// measurement, not a test, as this package may import only the standard
// library) the defaults gave
// recall@10 0.80 at EfSearch 64, 0.88 at 128 and 0.93 at 256 (2.4× faster
// than the exact scan, with the Go dot product); M 32 gave 0.86, 0.91 and
// 0.96. So the caller
// should measure recall on its own vectors with Graph.Recall and choose
// EfSearch (or keep the exact scan) from that.
//
// A filter that rejects whole regions (every other cluster) leaves
// queries there with only far, scattered answers and recall near 0.9
// (TestFilteredSearch); one that rejects ids spread over the data, as
// expiry and deletion do, costs no recall.
//
// Hundreds of exact copies of one vector tie with each other and can
// crowd one another out of neighbour lists, so a search for that vector
// may miss some copies (tens of copies are found; TestDuplicateVectors).
package hnsw
