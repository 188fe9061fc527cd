//go:build race

package hnsw

// raceEnabled shrinks the recall data sets: the race detector slows the
// builds tenfold, and the recall figures hold at the smaller size too.
const raceEnabled = true
