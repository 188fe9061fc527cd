package a2apush_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apush"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/auth"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/store/postgres"
	"novaos.dev/novaos/store/sqlite"
)

// benchStores are the stores a benchmark writes tasks to and delivers
// from.
type benchStores struct {
	tasks  a2asrv.TaskStore
	push   a2asrv.PushConfigStore
	outbox a2asrv.PushOutbox
}

func benchBackends(b *testing.B) map[string]func(b *testing.B) benchStores {
	return map[string]func(b *testing.B) benchStores{
		"memory": func(b *testing.B) benchStores {
			t := a2asrv.NewMemoryTaskStore(&a2asrv.MemoryOptions{MaxPushQueued: 1 << 20})
			return benchStores{t, t.PushConfigStore(), t.PushOutbox()}
		},
		"sqlite": func(b *testing.B) benchStores {
			db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return benchStores{db.TaskStore(), db.PushConfigStore(), db.PushOutbox()}
		},
		"postgres": func(b *testing.B) benchStores {
			db, err := postgres.Open(context.Background(), pgtest.URL(b), nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return benchStores{db.TaskStore(), db.PushConfigStore(), db.PushOutbox()}
		},
	}
}

// benchHook is a webhook that answers 204 and notes, for each
// notification "task/n" it gets, when it arrived.
type benchHook struct {
	srv     *httptest.Server
	mu      sync.Mutex
	arrived map[string]time.Time
	notify  chan struct{}
}

func newBenchHook(b *testing.B) *benchHook {
	h := &benchHook{arrived: map[string]time.Time{}, notify: make(chan struct{}, 1)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		var ev struct {
			ArtifactUpdate *struct {
				TaskID   string `json:"taskId"`
				Artifact struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"artifact"`
			} `json:"artifactUpdate"`
		}
		if json.Unmarshal(body, &ev) == nil && ev.ArtifactUpdate != nil && len(ev.ArtifactUpdate.Artifact.Parts) > 0 {
			h.mu.Lock()
			key := ev.ArtifactUpdate.TaskID + "/" + ev.ArtifactUpdate.Artifact.Parts[0].Text
			if _, dup := h.arrived[key]; !dup {
				h.arrived[key] = now
			}
			h.mu.Unlock()
			select {
			case h.notify <- struct{}{}:
			default:
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(h.srv.Close)
	return h
}

func (h *benchHook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.arrived)
}

// run starts a deliverer signing with a fresh key.
func runDeliverer(b *testing.B, outbox a2asrv.PushOutbox) *a2apush.Deliverer {
	iss, err := auth.Open("", auth.Options{Issuer: issuerURL})
	if err != nil {
		b.Fatal(err)
	}
	d, err := a2apush.New(outbox, &a2apush.Options{Policy: &netguard.Policy{AllowLoopback: true}, Signer: iss, Issuer: issuerURL,
		Concurrency: 32})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	return d
}

func chunkEvent(id string, n int) []*a2a.StreamResponse {
	return []*a2a.StreamResponse{{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{
		TaskID: id, ContextID: "c", Append: n > 0,
		Artifact: a2a.Artifact{ArtifactID: "a", Parts: []a2a.Part{a2a.TextPart(strconv.Itoa(n))}},
	}}}
}

// BenchmarkPushDelivery writes b.N artifact updates across 16 tasks, each
// with one config, as fast as the store takes them, and times until the
// webhook has had every one: updates/s is delivery throughput, p50 and p99
// the time from an update's write returning to its arrival (queueing
// included, since the writers outrun delivery).
func BenchmarkPushDelivery(b *testing.B) {
	for name, open := range benchBackends(b) {
		b.Run(name, func(b *testing.B) {
			s := open(b)
			hook := newBenchHook(b)
			const tasks = 16
			scope := a2asrv.Scope{Tenant: "bench"}
			vers := make([]a2asrv.Version, tasks)
			ctx := context.Background()
			for i := range tasks {
				id := fmt.Sprintf("t%d", i)
				v, err := s.tasks.Create(ctx, scope, &a2a.Task{ID: id, ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.Now()}})
				if err != nil {
					b.Fatal(err)
				}
				vers[i] = v
				if err := s.push.Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "h", TaskID: id, URL: hook.srv.URL}); err != nil {
					b.Fatal(err)
				}
			}
			d := runDeliverer(b, s.outbox)
			written := make([]time.Time, b.N)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range tasks {
				wg.Go(func() {
					id := fmt.Sprintf("t%d", w)
					for n := w; n < b.N; n += tasks {
						v, err := s.tasks.Append(ctx, scope, id, vers[w], chunkEvent(id, n), nil)
						if err != nil {
							b.Error(err)
							return
						}
						vers[w] = v
						written[n] = time.Now()
						d.Wake()
					}
				})
			}
			wg.Wait()
			deadline := time.Now().Add(5 * time.Minute)
			for hook.count() < b.N {
				if time.Now().After(deadline) {
					b.Fatalf("%d of %d delivered", hook.count(), b.N)
				}
				select {
				case <-hook.notify:
				case <-time.After(10 * time.Millisecond):
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			lat := make([]time.Duration, 0, b.N)
			hook.mu.Lock()
			for n := range b.N {
				lat = append(lat, hook.arrived[fmt.Sprintf("t%d/%d", n%tasks, n)].Sub(written[n]))
			}
			hook.mu.Unlock()
			reportLatency(b, lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "updates/s")
		})
	}
}

// BenchmarkPushLatency writes one update at a time and waits for it at the
// webhook: the end-to-end latency of one update when nothing queues.
func BenchmarkPushLatency(b *testing.B) {
	for name, open := range benchBackends(b) {
		b.Run(name, func(b *testing.B) {
			s := open(b)
			hook := newBenchHook(b)
			scope := a2asrv.Scope{Tenant: "bench"}
			ctx := context.Background()
			v, err := s.tasks.Create(ctx, scope, &a2a.Task{ID: "t0", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: time.Now()}})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.push.Put(ctx, scope, &a2a.TaskPushNotificationConfig{ID: "h", TaskID: "t0", URL: hook.srv.URL}); err != nil {
				b.Fatal(err)
			}
			d := runDeliverer(b, s.outbox)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for n := range b.N {
				start := time.Now()
				if v, err = s.tasks.Append(ctx, scope, "t0", v, chunkEvent("t0", n), nil); err != nil {
					b.Fatal(err)
				}
				d.Wake()
				for hook.count() <= n {
					select {
					case <-hook.notify:
					case <-time.After(time.Second):
					}
				}
				hook.mu.Lock()
				lat = append(lat, hook.arrived[fmt.Sprintf("t0/%d", n)].Sub(start))
				hook.mu.Unlock()
			}
			b.StopTimer()
			reportLatency(b, lat)
		})
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}
