package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"novaos.dev/novaos/a2a"
)

// seed 000, AgentBuilder.describe_exception: ""<type>: <message>" for a
// skill failure, or just "<type>" if it has no message. str(error) alone
// drops the exception type and is empty for TimeoutError(), so the type is
// always named." Options.TypedFailures gives that wording; the default
// keeps the error's own text (the package doc says why).
func TestTypedFailures(t *testing.T) {
	_, pathErr := os.Open("/nonexistent/novaos-describe-test")
	tests := []struct {
		name         string
		err          func() error
		typed, plain string
	}{
		{"plain error", func() error { return errors.New("db: connection refused") },
			"*errors.errorString: db: connection refused", "db: connection refused"},
		{"wrapped: the cause's type, the whole text",
			func() error { return fmt.Errorf("load config: %w", pathErr) },
			"*fs.PathError: load config: " + pathErr.Error(), "load config: " + pathErr.Error()},
		{"typed error", func() error { return &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist} },
			"*fs.PathError: open x: file does not exist", "open x: file does not exist"},
		{"no message: just the type", func() error { return emptyError{} },
			"agent.emptyError", "agent.emptyError"},
		{"deadline", func() error { return context.DeadlineExceeded },
			"context.deadlineExceededError: context deadline exceeded", "context deadline exceeded"},
		{"joined: the first cause's type", func() error { return fmt.Errorf("two: %w; %w", emptyError{}, errors.New("b")) },
			"agent.emptyError: two: ; b", "two: ; b"},
		{"panic keeps its wording", func() error { panic("boom") }, "panic: boom", "panic: boom"},
	}
	for _, tt := range tests {
		for _, typed := range []bool{true, false} {
			want := tt.plain
			if typed {
				want = tt.typed
			}
			t.Run(fmt.Sprintf("%s/typed=%v", tt.name, typed), func(t *testing.T) {
				a := New("a", "1", &Options{TypedFailures: typed})
				a.MustRegister(Skill{ID: "s", Handler: func(c *Context) (Result, error) { return Result{}, tt.err() }})
				f, err := run(t, a, request("hi"))
				if err != nil {
					t.Fatal(err)
				}
				final := f.final()
				if final.State != a2a.TaskStateFailed {
					t.Fatalf("state = %v, want FAILED", final.State)
				}
				if got := final.Msg.Parts[0].Text; got != want {
					t.Errorf("message = %q, want %q", got, want)
				}
			})
		}
	}
}
