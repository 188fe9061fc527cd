package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/benchpair"
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

// BenchmarkLogHandler compares a record through NewLogHandler with the
// same record through slog.NewJSONHandler, both with the attributes
// Context.Logger adds (run_id, agent_id, tenant_id, task_id, skill) and
// writing to io.Discard; it reports ndjson÷json, what renaming the
// time, level and message costs.
func BenchmarkLogHandler(b *testing.B) {
	run := []any{slog.String("run_id", "run-1"), slog.String("agent_id", "greeter"), slog.String("tenant_id", "t-1"),
		slog.String("task_id", "task-1"), slog.String("skill", "greet")}
	ndjson := slog.New(NewLogHandler(io.Discard, nil)).With(run...)
	plain := slog.New(slog.NewJSONHandler(io.Discard, nil)).With(run...)
	ctx := context.Background()
	b.ReportAllocs()
	benchpair.Run(b, "ndjson", func() {
		ndjson.InfoContext(ctx, "skill finished", "status", "completed", "ms", 12)
	}, "json", func() {
		plain.InfoContext(ctx, "skill finished", "status", "completed", "ms", 12)
	})
}

// BenchmarkValidateAgainstSchema compares ValidateAgainstSchema of a
// small object against a four-property object schema (as a run's
// output_schema arrives, a map) with json.Marshal of the same value; it
// reports validate÷marshal. The schema is compiled on every call.
func BenchmarkValidateAgainstSchema(b *testing.B) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":   map[string]any{"type": "string", "minLength": 1},
			"age":    map[string]any{"type": "integer", "minimum": 0},
			"email":  map[string]any{"type": "string"},
			"topics": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required":             []any{"name", "age"},
		"additionalProperties": false,
	}
	value := map[string]any{"name": "Jane", "age": 42, "email": "jane@example.com", "topics": []any{"billing", "plans"}}
	if errs := ValidateAgainstSchema(value, schema); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ReportAllocs()
	benchpair.Run(b, "validate", func() {
		if errs := ValidateAgainstSchema(value, schema); len(errs) > 0 {
			b.Fatal(errs)
		}
	}, "marshal", func() {
		if _, err := json.Marshal(value); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkMemoryPrefetchOff compares a skill call of an agent with the
// automatic memory pre-fetch on (the default) with one of an agent with
// NoMemoryPrefetch, both for a request whose platform context carries no
// memory budget, so the pre-fetch never runs; it reports prefetch÷off,
// which should be 1: a request without a budget pays nothing for it.
func BenchmarkMemoryPrefetchOff(b *testing.B) {
	req := request("hello")
	req.Metadata = map[string]any{ContextMetadataKey: map[string]any{
		"run_id": "run-1", "tenant_id": "t-1", "agent_id": "bench", "idempotency_key": "k",
	}}
	h := func(c *Context) (Result, error) { return Result{Output: c.Input()}, nil }
	on := New("bench", "1", nil)
	on.MustRegister(Skill{ID: "s", Handler: h})
	off := New("bench", "1", &Options{NoMemoryPrefetch: true})
	off.MustRegister(Skill{ID: "s", Handler: h})
	ctx := context.Background()
	exec := func(a *Agent) func() {
		return func() {
			if err := a.Execute(ctx, req, nopUpdater{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	benchpair.Run(b, "prefetch", exec(on), "off", exec(off))
}
