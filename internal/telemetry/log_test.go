package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"novaos.dev/novaos/internal/telemetry"
)

func TestLogHandler(t *testing.T) {
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name      string
		ctx       context.Context
		log       func(l *slog.Logger, ctx context.Context)
		wantTrace bool
		key       string // where the ids are: "" at the top
	}{
		{"with a span", remoteParent(true), func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "m") }, true, ""},
		{"unsampled span too", remoteParent(false), func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "m") }, true, ""},
		{"no span", context.Background(), func(l *slog.Logger, ctx context.Context) { l.InfoContext(ctx, "m") }, false, ""},
		{"no context", remoteParent(true), func(l *slog.Logger, _ context.Context) { l.Info("m") }, false, ""},
		{"with attrs", remoteParent(true), func(l *slog.Logger, ctx context.Context) { l.With("a", 1).InfoContext(ctx, "m") }, true, ""},
		{"in a group", remoteParent(true), func(l *slog.Logger, ctx context.Context) { l.WithGroup("g").InfoContext(ctx, "m") }, true, "g"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))
			if telemetry.LogHandler(h) != h {
				t.Error("wrapping twice wraps again")
			}
			tc.log(slog.New(h), tc.ctx)
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("%v: %s", err, buf.Bytes())
			}
			at := line
			if tc.key != "" {
				at, _ = line[tc.key].(map[string]any)
			}
			if !tc.wantTrace {
				if _, ok := line[telemetry.LogTraceID]; ok {
					t.Errorf("line %s has a trace id", buf.Bytes())
				}
				return
			}
			if at[telemetry.LogTraceID] != traceID || at[telemetry.LogSpanID] != spanID {
				t.Errorf("line %s, want trace_id %s span_id %s", buf.Bytes(), traceID, spanID)
			}
		})
	}
}
