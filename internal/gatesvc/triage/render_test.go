package triage

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/gate"
)

type noOperator struct{ Operator }

// TestRenderError: a template that fails is a logged 500 with a plain
// message, not half a page and not a panic.
func TestRenderError(t *testing.T) {
	var logs bytes.Buffer
	h := New(noOperator{}, func(context.Context, string) (Principal, error) { return Principal{}, nil },
		&Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}).(*handler)
	for _, name := range []string{"missing.html", "detail.html"} {
		w := httptest.NewRecorder()
		// detail.html with a record whose Decision cannot be shown: a nil
		// Operator in pageData makes {{if $.Operator.Admin}} fail.
		d := pageData{Title: "x", Base: h.path, Detail: h.detailView(gate.ActionRecord{State: gate.ActionHeld})}
		h.render(w, httptest.NewRequest(http.MethodGet, "/ui/gate", nil), http.StatusOK, name, d)
		if w.Code != http.StatusInternalServerError || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s: %d %q, want a plain 500", name, w.Code, w.Header().Get("Content-Type"))
		}
		if strings.Contains(w.Body.String(), "<") {
			t.Errorf("%s: half a page was sent: %q", name, w.Body)
		}
	}
	if !strings.Contains(logs.String(), "rendering a page failed") {
		t.Errorf("the failure is not logged:\n%s", logs.String())
	}
}
