package agent

import (
	"context"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// nopUpdater accepts every write, so the benchmarks measure the agent alone.
type nopUpdater struct{}

func (nopUpdater) TaskID() string    { return "task-1" }
func (nopUpdater) ContextID() string { return "ctx-1" }
func (nopUpdater) Task() *a2a.Task   { return nil }
func (nopUpdater) UpdateStatus(context.Context, a2a.TaskState, *a2a.Message, map[string]any) error {
	return nil
}
func (nopUpdater) AddArtifact(context.Context, a2a.Artifact, bool, bool, map[string]any) error {
	return nil
}
func (nopUpdater) Reply(context.Context, *a2a.Message) error { return nil }

func benchExecute(b *testing.B, opts *Options, req *a2asrv.RequestContext, h HandlerFunc) {
	a := New("bench", "1", opts)
	a.MustRegister(Skill{ID: "s", Handler: h})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Execute(ctx, req, nopUpdater{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecuteEmptyResult(b *testing.B) {
	benchExecute(b, nil, request("hello"), func(c *Context) (Result, error) { return Result{}, nil })
}

func BenchmarkExecuteTextResult(b *testing.B) {
	benchExecute(b, nil, request("hello"), func(c *Context) (Result, error) { return Result{Output: c.Input()}, nil })
}

func BenchmarkExecutePlatformContext(b *testing.B) {
	req := request("hello")
	req.Metadata = map[string]any{ContextMetadataKey: map[string]any{
		"run_id": "run-1", "tenant_id": "t-1", "idempotency_key": "k",
		"history": []any{map[string]any{"role": "user", "content": "earlier"}},
	}}
	benchExecute(b, nil, req, func(c *Context) (Result, error) { return Result{Output: c.RunID()}, nil })
}

func BenchmarkExecuteMaskedResult(b *testing.B) {
	benchExecute(b, &Options{MaskOutputPII: true}, request("hello"), func(c *Context) (Result, error) {
		return Result{Output: "mail jane@example.com about order 12"}, nil
	})
}
