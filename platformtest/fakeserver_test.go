package platformtest_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/platformtest"
)

func startAdapter(t *testing.T, f *platformtest.FakeServer, consumer string, h adapter.Handler, polling bool) (*adapter.Adapter, <-chan error) {
	t.Helper()
	cfg := f.Config(consumer)
	cfg.StateDir = t.TempDir()
	cfg.Polling = polling
	a, err := adapter.New(cfg, h, &adapter.Options{Clock: f.Clock(), Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Run(ctx)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = a.Close()
	})
	return a, done
}

func TestARunEndToEnd(t *testing.T) {
	for _, polling := range []bool{true, false} {
		name := "gateway"
		if polling {
			name = "polling"
		}
		t.Run(name, func(t *testing.T) {
			f := platformtest.NewFakeServer(t, nil)
			h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
				_ = run.Patch().SetStatusLine("writing")
				_, err := run.Reply(ctx, "hello back")
				return err
			}}
			startAdapter(t, f, "alpha", h, polling)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := f.WaitConsumer(ctx, "alpha"); err != nil {
				t.Fatal(err)
			}
			tr, err := f.Trigger(ctx, "hello")
			if err != nil {
				t.Fatal(err)
			}
			run, err := f.WaitRun(ctx, tr.RunID, func(r delivery.Run) bool { return r.State.Ended() })
			if err != nil {
				t.Fatal(err)
			}
			if run.State != delivery.RunCompleted || run.Starts != 1 || len(h.Executes()) != 1 || len(h.Prepares()) != 1 {
				t.Fatalf("run %+v, prepares %v, executes %v", run, h.Prepares(), h.Executes())
			}
			// The reply reached the run before it ended.
			replied, finished := -1, -1
			for i, r := range f.Requests() {
				switch {
				case r.Operation == "createMessage" && r.Status == http.StatusCreated && replied < 0:
					replied = i
				case r.Operation == "finishRun" && finished < 0:
					finished = i
				}
			}
			if replied < 0 || finished < 0 || replied > finished {
				t.Fatalf("the reply is request %d, the finish %d: the reply must come first", replied, finished)
			}
		})
	}
}
