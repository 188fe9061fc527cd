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

	"novaos.dev/novaos/a2a/a2asrv"
)

// fakeDB is a database with a Ping and, like store/postgres, a
// notification listener, each up or down as a test sets it.
type fakeDB struct {
	pingErr, listenErr error
}

func (fakeDB) TaskStore() a2asrv.TaskStore             { return a2asrv.NewMemoryTaskStore(nil) }
func (fakeDB) PushConfigStore() a2asrv.PushConfigStore { return nil }
func (fakeDB) PushOutbox() a2asrv.PushOutbox           { return nil }
func (fakeDB) Close() error                            { return nil }
func (f fakeDB) Ping(context.Context) error            { return f.pingErr }
func (f fakeDB) ListenerStatus() error                 { return f.listenErr }

var _ listening = fakeDB{}

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
			s := &Server{db: tt.db, log: slog.New(slog.NewTextHandler(&logs, nil)),
				opts: Options{DatabaseURL: "postgres://novaos:hunter2@db.internal/prod"}}
			rec := httptest.NewRecorder()
			s.serveHealth(rec, httptest.NewRequest(http.MethodGet, healthPath, nil))
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
	s := &Server{log: slog.New(slog.DiscardHandler), tasks: a2asrv.NewMemoryTaskStore(nil)}
	h := s.health(t.Context())
	if h.Listener != nil || h.Status != "ok" {
		t.Errorf("health = %+v, want ok without a listener", h)
	}
	b, _ := json.Marshal(h)
	if strings.Contains(string(b), "listener") {
		t.Errorf("body names a listener: %s", b)
	}
}
