package benchpair

import "testing"

// TestRun: every iteration calls both sides once.
func TestRun(t *testing.T) {
	var ops, bases, n int
	res := testing.Benchmark(func(b *testing.B) {
		ops, bases = 0, 0
		Run(b, "op", func() { ops++ }, "base", func() { bases++ })
		n = b.N
	})
	if ops != n || bases != n || n == 0 {
		t.Fatalf("%d iterations called op %d times and base %d times", n, ops, bases)
	}
	for _, m := range []string{"op-ns/call", "base-ns/call", "op÷base"} {
		if _, ok := res.Extra[m]; !ok {
			t.Errorf("no %s reported: %v", m, res.Extra)
		}
	}
}
