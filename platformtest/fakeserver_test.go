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
			replied := make(chan string, 1)
			h := &platformtest.RecordingHandler{Work: func(ctx context.Context, run *adapter.Run) error {
				_ = run.Patch().SetStatusLine("writing")
				id, err := run.Reply(ctx, "hello back")
				replied <- id
				return err
			}}
			a, _ := startAdapter(t, f, "alpha", h, polling)
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
			sent, finished := -1, -1
			for i, r := range f.Requests() {
				switch {
				case r.Operation == "createMessage" && r.Status == http.StatusCreated && sent < 0:
					sent = i
				case r.Operation == "finishRun" && finished < 0:
					finished = i
				}
			}
			if sent < 0 || finished < 0 || sent > finished {
				t.Fatalf("the reply is request %d, the finish %d: the reply must come first", sent, finished)
			}
			// The reply, an answer to the run's message, reaches the thread.
			id := <-replied
			err = waitCond(ctx, func() bool {
				msgs, err := f.Messages(ctx, tr.ThreadID)
				return err == nil && len(msgs) == 1 && msgs[0].ClientMsgID == id && msgs[0].ReplyTo == tr.MessageID
			})
			if failed, ferr := a.Outbox().Failed(ctx); err != nil || ferr != nil || len(failed) > 0 {
				t.Fatalf("the reply is not on the platform (%v); the outbox failed %v (%v)", err, failed, ferr)
			}
		})
	}
}

// Each fault on a gateway frame of either side, and on the upgrade,
// goes off once, and the run still completes once over the gateway.
func TestGatewayFaults(t *testing.T) {
	faults := []platformtest.Fault{platformtest.StoredThen502(), platformtest.StoredLate(5 * time.Millisecond),
		platformtest.RateLimited(time.Second), platformtest.Disconnect()}
	targets := []string{platformtest.GatewayUpgrade, platformtest.GatewayFrame(delivery.OpHello), platformtest.GatewayFrame(delivery.OpEvent),
		platformtest.GatewayFrame(delivery.OpAck)}
	for _, target := range targets {
		for _, fault := range faults {
			t.Run(target+"/"+fault.Kind(), func(t *testing.T) {
				t.Parallel()
				f := platformtest.NewFakeServer(t, nil)
				h := &platformtest.RecordingHandler{}
				cfg := f.Config("alpha")
				cfg.StateDir = t.TempDir()
				a, err := adapter.New(cfg, h, &adapter.Options{Clock: platformtest.SpedUpClock{Base: f.Clock(), Factor: 100},
					Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				done := make(chan struct{})
				go func() {
					defer close(done)
					_, _ = a.Run(ctx)
				}()
				defer func() { cancel(); <-done; _ = a.Close() }()
				if err := f.WaitConsumer(ctx, "alpha"); err != nil {
					t.Fatal(err)
				}
				f.Inject(target, fault, 1)
				if target == platformtest.GatewayUpgrade || target == platformtest.GatewayFrame(delivery.OpHello) {
					// Connected already: the next connection meets it.
					f.Inject(platformtest.GatewayFrame(delivery.OpEvent), platformtest.Disconnect(), 1)
				}
				tr, err := f.Trigger(ctx, "hello")
				if err != nil {
					t.Fatal(err)
				}
				run, err := f.WaitRun(ctx, tr.RunID, func(r delivery.Run) bool { return r.State.Ended() })
				if err != nil {
					t.Fatal(err)
				}
				err = waitCond(ctx, func() bool {
					cs, err := f.ConsumerState(ctx, "alpha")
					return err == nil && cs.AckedSeq == cs.HeadSeq && f.Fired(target) == 1
				})
				if run.State != delivery.RunCompleted || len(h.Executes()) != 1 || err != nil {
					t.Fatalf("the run is %s after %d executions; the fault fired %d times (%v)", run.State, len(h.Executes()), f.Fired(target), err)
				}
			})
		}
	}
}
