package delivery

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"novaos.dev/novaos/delivery"
)

// FuzzRequestBodies sends arbitrary bodies to the decoders of the agent
// API (a patch, a heartbeat, an acknowledgement, a start, a message): no
// body may get a 5xx or an answer that is not JSON.
func FuzzRequestBodies(f *testing.F) {
	h := newHarness(f, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	run := h.trigger(h.inst, "hello")
	tok, _ := a.tokenFor("alpha", run.ID)
	started := decodeAs[delivery.Run](f, a.call("POST", delivery.StartRunPath(run.ID), startBody(), tok, ""))
	routes := []struct{ method, path string }{
		{"PATCH", delivery.RunPath(run.ID)},
		{"POST", delivery.HeartbeatPath(h.inst.ID)},
		{"POST", delivery.ConsumerAckPath(h.inst.ID, "alpha")},
		{"POST", delivery.StartRunPath(run.ID)},
		{"POST", delivery.MessagesPath},
		{"POST", delivery.AwaitInputPath(run.ID)},
	}
	seeds := []string{
		`{"base_version":` + jsonInt(started.Version) + `,"ops":[{"op":"replace","path":"/status_line","value":"x"}]}`,
		`{"base_version":1,"ops":[{"op":"add","path":"/steps/-","value":{"id":"s1","kind":"tool","status":"running"}}]}`,
		`{"base_version":1,"ops":[{"op":"add","path":"/metrics/a","value":1e308}]}`,
		`{"status":"ok","details":{"active_runs":["r"],"adapter":{"name":"a","version":"1"}}}`,
		`{"status":"ok","details":{"x":{"y":[1,2,{"z":null}]}}}`,
		`{"seq":1}`, `{"seq":-1}`, `{"seq":1e40}`,
		`{"billing_mode_used":"platform","tool_class_used":"chat"}`,
		`{"thread_id":"thread-1","content_md":"hi","client_msg_id":"c1"}`,
		`{"status_line":"` + "\xff" + `"}`,
		``, `null`, `[]`, `{"a":1,"a":2}`, `{`,
	}
	for _, s := range seeds {
		for i := range routes {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := routes[int(route)%len(routes)]
		req := httptest.NewRequest(rt.method, rt.path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set(delivery.InvocationTokenHeader, tok)
		w := httptest.NewRecorder()
		h.mux.ServeHTTP(w, req)
		if w.Code >= http.StatusInternalServerError {
			t.Fatalf("%s %s: %d %s", rt.method, rt.path, w.Code, w.Body.Bytes())
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("%s %s: %d, not JSON: %q", rt.method, rt.path, w.Code, w.Body.Bytes())
		}
		if w.Code >= 400 {
			var p delivery.Problem
			if json.Unmarshal(w.Body.Bytes(), &p) != nil || p.Code == "" || p.Status != w.Code {
				t.Fatalf("%s %s: %d, not a problem: %s", rt.method, rt.path, w.Code, w.Body.Bytes())
			}
		}
	})
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// FuzzVerifyToken checks that no string is taken for a token but the
// ones the service signs, and that none makes it fail otherwise.
func FuzzVerifyToken(f *testing.F) {
	h := newHarness(f, nil)
	a := h.agent(h.inst, false)
	a.open("alpha")
	run := h.trigger(h.inst, "hello")
	good, _ := a.tokenFor("alpha", run.ID)
	f.Add(good)
	for _, v := range forgeries {
		f.Add(h.forge(good, v))
	}
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := h.svc.verifyToken(t.Context(), tok, h.inst.ID, run.ID)
		if err == nil && tok != good {
			// Only another encoding of the same signed bytes could pass.
			if c.RunID != run.ID || c.Audience != h.inst.ID || c.Issuer != h.srv.URL {
				t.Fatalf("accepted %q as %+v", tok, c)
			}
		}
	})
}
