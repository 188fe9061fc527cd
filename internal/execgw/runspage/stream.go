package runspage

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/internal/webui"
)

// writeTimeout bounds one write to a live stream: a browser that reads
// nothing for this long is dropped.
const writeTimeout = 30 * time.Second

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
	after, ok := parseCursor(text, run.LastSequence)
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

	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	bw := bufio.NewWriterSize(w, 4096)
	flush := func() error {
		_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		if err := bw.Flush(); err != nil {
			return err
		}
		return rc.Flush()
	}
	if flush() != nil {
		return
	}
	keepAlive := time.NewTicker(h.keepAlive)
	defer keepAlive.Stop()
	for {
		events, err := h.runs.Events(r.Context(), p, run.ID, after, eventsPage)
		if err != nil {
			if r.Context().Err() == nil {
				h.log.ErrorContext(r.Context(), "runspage: reading run events failed", "run_id", run.ID, "err", err)
			}
			return
		}
		for _, e := range events {
			if writeFrame(bw, e) != nil {
				return
			}
			after = e.Sequence
			if e.Type == gateway.EventDone || e.Type == gateway.EventError {
				_ = flush()
				return
			}
		}
		if len(events) > 0 {
			if flush() != nil {
				return
			}
			if len(events) == eventsPage {
				continue
			}
		} else if now, err := h.runs.Get(r.Context(), p, run.ID); err != nil || now.Status.Terminal() && now.LastSequence <= after {
			return // the stream already said how the run ended
		}
		select {
		case <-feed.Wake:
		case <-keepAlive.C:
			if _, err := bw.WriteString(": keepalive\n\n"); err != nil || flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-feed.Closing:
			return
		}
	}
}

// parseCursor reads an event id the page's stream issued: a decimal
// sequence no greater than the run's last. "" is the start.
func parseCursor(v string, last int64) (int64, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > last || strconv.FormatInt(n, 10) != v {
		return 0, false
	}
	return n, true
}

// writeFrame writes one event as the API's SSE frame.
func writeFrame(bw *bufio.Writer, e gateway.Event) error {
	data, err := json.Marshal(e.Frame())
	if err != nil {
		return err
	}
	bw.WriteString("id: ")
	bw.WriteString(strconv.FormatInt(e.Sequence, 10))
	bw.WriteString("\nevent: " + gateway.SSEEventName + "\ndata: ")
	bw.Write(data)
	_, err = bw.WriteString("\n\n")
	return err
}
