package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/store"
)

// healthTimeout bounds the database ping behind /healthz, so a stuck
// database makes the check fail instead of hang.
const healthTimeout = 2 * time.Second

// Health is the body of /healthz.
type Health struct {
	// Status is "ok"; "degraded" when the database answers but its
	// notification listener is down (the response is still 200); or
	// "unavailable" when the database does not answer (503).
	Status   string         `json:"status"`
	Database DatabaseHealth `json:"database"`
	// Listener is present when the database has a notification listener
	// (PostgreSQL): the connection LISTENing for other replicas' task
	// updates.
	Listener *ListenerHealth `json:"listener,omitempty"`
}

// DatabaseHealth reports the store behind the server.
type DatabaseHealth struct {
	Kind string `json:"kind"` // sqlite, postgres, or custom (Options.TaskStore)
	OK   bool   `json:"ok"`
	// Error is a short reason when the ping failed; the detail is logged.
	Error string `json:"error,omitempty"`
}

// ListenerHealth reports the database's notification listener.
type ListenerHealth struct {
	OK bool `json:"ok"`
	// Error is a short reason when it is down; the detail, which may name
	// the database host and user, is logged.
	Error string `json:"error,omitempty"`
}

// Health statuses.
const (
	healthOK          = "ok"
	healthDegraded    = "degraded"
	healthUnavailable = "unavailable"
)

// healthProbeID is a task id no task has (ids are UUIDs), looked up to
// check that the task store answers.
const healthProbeID = "novaos-health-probe"

// healthCheck answers /healthz from the stores it probes.
type healthCheck struct {
	stores *store.Stores
	kind   string // DatabaseHealth.Kind
	log    *slog.Logger
}

// ping checks the database with a lookup through the task store:
// not-found means it answered.
func (s healthCheck) ping(ctx context.Context) error {
	_, _, err := s.stores.Tasks.Get(ctx, a2asrv.Scope{}, healthProbeID)
	if err == nil || errors.Is(err, a2asrv.ErrNotFound) {
		return nil
	}
	return err
}

// health checks the database and its listener. A replica whose listener
// is down is degraded, not unavailable: it still serves every call on its
// own tasks and reads every task from the database; what it misses are
// the live updates other replicas write to tasks its callers subscribed
// to here. Taking it out of a load balancer for that would move all of
// its load onto the others for a partial fault (and, with the listener
// down everywhere, say a pooler that refuses LISTEN, take the whole
// service down), while the listener reconnects by itself.
func (s healthCheck) health(ctx context.Context) Health {
	h := Health{Status: healthOK, Database: DatabaseHealth{Kind: s.kind, OK: true}}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if err := s.ping(ctx); err != nil {
		s.log.WarnContext(ctx, "app: health check: database ping failed", "err", err)
		h.Status = healthUnavailable
		h.Database.OK = false
		h.Database.Error = "ping failed"
	}
	if status := s.stores.Listener; status != nil {
		h.Listener = &ListenerHealth{OK: true}
		if err := status(); err != nil {
			s.log.WarnContext(ctx, "app: health check: the notification listener is down", "err", err)
			h.Listener.OK = false
			h.Listener.Error = "not listening"
			if h.Status == healthOK {
				h.Status = healthDegraded
			}
		}
	}
	return h
}

func (s healthCheck) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.health(r.Context())
	status := http.StatusOK
	if h.Status == healthUnavailable {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, r, status, h)
}

// serveIndex answers the root with what the server hosts, so a person
// opening the address in a browser finds the endpoints.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, struct {
		Name   string     `json:"name"`
		Agents []Endpoint `json:"agents"`
		Health string     `json:"health"`
	}{"NovaOS", s.Endpoints(), s.URL() + "/healthz"})
}

// writeJSON answers with v, never cached: health and the index are live.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, r, status, v)
}
