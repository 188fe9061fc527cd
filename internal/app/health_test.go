package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/store"
)

// fakeDB is a database whose task store and, like store/postgres's,
// notification listener are each up or down as a test sets it.
type fakeDB struct {
	pingErr, listenErr error
}

func (f fakeDB) stores() *store.Stores {
	return &store.Stores{Kind: "postgres", Tasks: pingStore{a2asrv.NewMemoryTaskStore(nil), f.pingErr},
		Listener: func() error { return f.listenErr }}
}

// pingStore fails every lookup with err, when set.
type pingStore struct {
	a2asrv.TaskStore
	err error
}

func (p pingStore) Get(ctx context.Context, s a2asrv.Scope, id string) (*a2a.Task, a2asrv.Version, error) {
	if p.err != nil {
		return nil, 0, p.err
	}
	return p.TaskStore.Get(ctx, s, id)
}

func TestHealthListener(t *testing.T) {
	// What a down listener may say: the host and user it failed to reach.
	leaky := errors.New("failed to connect to `user=novaos database=prod`: db.internal:5432: password authentication failed for hunter2")
	tests := []struct {
		name       string
		db         fakeDB
		wantStatus int
		want       Health
	}{
		{"listening", fakeDB{}, http.StatusOK, Health{Status: "ok",
			Database: DatabaseHealth{Kind: "postgres", OK: true}, Listener: &ListenerHealth{OK: true}}},
		{"listener down: degraded, still 200", fakeDB{listenErr: leaky}, http.StatusOK, Health{Status: "degraded",
			Database: DatabaseHealth{Kind: "postgres", OK: true}, Listener: &ListenerHealth{OK: false, Error: "not listening"}}},
		{"database down", fakeDB{pingErr: leaky, listenErr: leaky}, http.StatusServiceUnavailable, Health{Status: "unavailable",
			Database: DatabaseHealth{Kind: "postgres", OK: false, Error: "ping failed"}, Listener: &ListenerHealth{OK: false, Error: "not listening"}}},
		{"database down, listener up", fakeDB{pingErr: leaky}, http.StatusServiceUnavailable, Health{Status: "unavailable",
			Database: DatabaseHealth{Kind: "postgres", OK: false, Error: "ping failed"}, Listener: &ListenerHealth{OK: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs strings.Builder
			s := healthCheck{stores: tt.db.stores(), kind: "postgres", log: slog.New(slog.NewTextHandler(&logs, nil))}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, healthPath, nil))
			if rec.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tt.wantStatus)
			}
			body := rec.Body.String()
			var got Health
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			for _, secret := range []string{"hunter2", "db.internal", "user="} {
				if strings.Contains(body, secret) {
					t.Errorf("body reveals %q: %s", secret, body)
				}
			}
			if tt.db.listenErr != nil && !strings.Contains(logs.String(), "notification listener is down") {
				t.Errorf("listener failure not logged: %s", logs.String())
			}
		})
	}
}

// A database without a listener (SQLite, a custom store) has no listener
// member at all.
func TestHealthWithoutListener(t *testing.T) {
	s := healthCheck{log: slog.New(slog.DiscardHandler), stores: &store.Stores{Tasks: a2asrv.NewMemoryTaskStore(nil)}}
	h := s.health(t.Context())
	if h.Listener != nil || h.Status != "ok" {
		t.Errorf("health = %+v, want ok without a listener", h)
	}
	b, _ := json.Marshal(h)
	if strings.Contains(string(b), "listener") {
		t.Errorf("body names a listener: %s", b)
	}
}
