package runspage

import (
	"context"
	"errors"
	"net/http"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/execgw/runsse"
	"novaos.dev/novaos/internal/webui"
)

// stream serves GET {id}/events: the run's events after the Last-Event-ID
// (on a reconnection) or the "after" parameter, as SSE frames shaped like
// the API's (id: the sequence, event: message, data: the frame), then
// each new one as it is committed, until the run's stream ends with done
// or error. It is authenticated by the session cookie alone: an
// EventSource sends no other credential, and it is a GET that changes
// nothing. A caught-up stream of an ended run answers 204, which tells
// an EventSource to stop reconnecting.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, id string) {
	s, err := h.site.Authenticated(r)
	switch {
	case errors.Is(err, webui.ErrNoSession) || err != nil && webui.Refused(err):
		webui.Plain(w, http.StatusUnauthorized, "Sign in on the runs page first.")
		return
	case err != nil:
		h.log.ErrorContext(r.Context(), "runspage: checking a token failed", "err", err)
		webui.Plain(w, http.StatusServiceUnavailable, "The token could not be checked just now; try again.")
		return
	}
	p := s.Principal
	run, err := h.runs.Get(r.Context(), p, id)
	if err != nil {
		status, msg := h.failure(r, err, "reading a run")
		webui.Plain(w, status, msg)
		return
	}
	text := r.Header.Get("Last-Event-ID")
	if text == "" {
		text = r.URL.Query().Get("after")
	}
	after, ok := runsse.ParseCursor(text, run.LastSequence)
	if !ok {
		webui.Plain(w, http.StatusBadRequest, "The Last-Event-ID is not an event id of this run.")
		return
	}
	if run.Status.Terminal() && after >= run.LastSequence {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	feed, err := h.runs.Follow(r.Context(), p, run.ID)
	if err != nil {
		status, msg := h.failure(r, err, "following a run")
		if status == http.StatusInternalServerError {
			status, msg = http.StatusServiceUnavailable, "Too many live streams are open; reload the page later."
			w.Header().Set("Retry-After", "5")
		}
		webui.Plain(w, status, msg)
		return
	}
	defer feed.Stop()
	runsse.Stream(w, r, pageSource{h, p, run.ID}, after, runsse.Options{KeepAlive: h.keepAlive, Wake: feed.Wake, Closing: feed.Closing,
		OnError: func(err error) {
			h.log.ErrorContext(r.Context(), "runspage: reading run events failed", "run_id", run.ID, "err", err)
		}})
}

// pageSource reads a run's events through the gateway, as the signed-in
// principal may.
type pageSource struct {
	h  *handler
	p  Principal
	id string
}

func (ps pageSource) Events(ctx context.Context, after int64, limit int) ([]gateway.Event, error) {
	return ps.h.runs.Events(ctx, ps.p, ps.id, after, limit)
}

func (ps pageSource) Ended(ctx context.Context, after int64) (bool, error) {
	run, err := ps.h.runs.Get(ctx, ps.p, ps.id)
	if err != nil {
		return false, err
	}
	return run.Status.Terminal() && run.LastSequence <= after, nil
}
