package gate_test

import (
	"context"
	"testing"

	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/secret"
)

// BenchmarkWrite measures a gated write against the minimal stand-in gate
// of ExampleWrite on loopback (a submit claimed in the same step, then the
// acknowledgement: two round trips), beside the same function ungated.
// The service's own cost is not in it; novaos bench gate measures that.
func BenchmarkWrite(b *testing.B) {
	srv := exampleGate()
	defer srv.Close()
	c, err := gate.NewClient(gate.Config{URL: srv.URL, Token: secret.New("bench")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	fn := func(ctx context.Context, n int) (int, error) { return n + 1, nil }
	spec := gate.WriteSpec[int]{ActionType: "bump", Context: func(n int) (gate.Context, error) {
		return gate.GenericContext{RecordID: "r"}, nil
	}}
	b.Run("ungated", func(b *testing.B) {
		ctx := context.Background()
		for i := range b.N {
			fn(ctx, i)
		}
	})
	b.Run("gated", func(b *testing.B) {
		write := gate.Write(c, spec, fn)
		err := c.Run(context.Background(), gate.Session{TenantID: "t", TeamID: "t", AgentID: "a"}, func(ctx context.Context) error {
			for i := range b.N {
				if _, err := write(ctx, i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
}
