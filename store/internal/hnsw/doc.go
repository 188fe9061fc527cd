// Package hnsw is an approximate nearest-neighbour index over unit float32
// vectors: a hierarchical navigable small world graph.
package hnsw
