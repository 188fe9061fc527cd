package memory_test

import (
	"fmt"

	"novaos.dev/novaos/memory"
)

// Fuse merges a keyword and a vector ranking of one query; a store's
// SearchKeyword and SearchVector give the two lists.
func ExampleFuse() {
	q := "which plan did the customer choose?"
	emb := memory.NewHashEmbedder(0)
	memories := []memory.Memory{
		{ID: "m1", Content: "Customer chose the annual plan."},
		{ID: "m2", Content: "The customer asked about refunds."},
		{ID: "m3", Content: "Planning meeting moved to Friday."},
	}
	qv := emb.Vector(q)
	var vector []memory.Hit
	for _, m := range memories {
		vector = append(vector, memory.Hit{Memory: m, Score: memory.Cosine(qv, emb.Vector(m.Content))})
	}
	// Stand-ins for the stores' two searches, best first.
	keyword := []memory.Hit{{Memory: memories[0], Score: 2.1}, {Memory: memories[1], Score: 0.7}}
	vector = []memory.Hit{vector[0], vector[2], vector[1]}

	for _, r := range memory.Fuse(memory.Terms(q), keyword, vector, memory.FuseOptions{}) {
		fmt.Printf("%s keyword #%d vector #%d\n", r.Memory.Content, r.KeywordRank, r.VectorRank)
	}
	// Output:
	// Customer chose the annual plan. keyword #1 vector #1
	// The customer asked about refunds. keyword #2 vector #3
	// Planning meeting moved to Friday. keyword #0 vector #2
}

func ExampleWriteRequest_Validate() {
	req := memory.WriteRequest{Scope: memory.ScopeAgent, Content: "User prefers concise summaries.", MemoryType: "factual"}
	fmt.Println(req.Validate())
	// Output: memory: memory_type: must be semantic, episodic or procedural
}
