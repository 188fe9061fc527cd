package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/secret"
)

// A stand-in for the gateway: it starts run-1 and streams its events, the
// way a run whose output failed a check after the agent returned ends:
// with a FAILED status and no error event.
func exampleGateway() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+gateway.ExecutePath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(gateway.ExecuteResult{RunID: "run-1", Status: gateway.StatusQueued, EventsURL: gateway.EventsPath + "run-1"})
	})
	mux.HandleFunc("GET "+gateway.EventsPath+"{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		events := []gateway.Event{
			{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"RUNNING"}`)},
			{Type: gateway.EventMessageDelta, Payload: json.RawMessage(`{"content":"Hello, "}`)},
			{Type: gateway.EventMessageDelta, Payload: json.RawMessage(`{"content":"world"}`)},
			{Type: gateway.EventStatus, Payload: json.RawMessage(`{"status":"FAILED","reason":"the answer failed its output schema"}`)},
		}
		var b []byte
		for i, ev := range events {
			ev.RunID, ev.Sequence = r.PathValue("id"), int64(i+1)
			body, _ := json.Marshal(ev.Frame())
			b = a2a.AppendEvent(b, a2a.Event{ID: strconv.Itoa(i + 1), Event: gateway.SSEEventName, Data: body})
		}
		_, _ = w.Write(b)
	})
	return httptest.NewServer(mux)
}

// Start a run and follow its events; the last event says how it ended.
func ExampleClient_EventsWithReconnect() {
	srv := exampleGateway()
	defer srv.Close()

	c, err := gateway.NewClient(srv.URL, &gateway.ClientOptions{Token: secret.New("a platform token")})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	run, err := c.Execute(ctx, gateway.ExecuteRequest{InstanceID: "0193a5b2-echo", Input: "Say hello"})
	if err != nil {
		panic(err)
	}
	var last gateway.StreamEvent
	for ev, err := range c.EventsWithReconnect(ctx, run.RunID, nil) {
		if err != nil {
			fmt.Println("stream failed:", err)
			return
		}
		if ev.Type == gateway.EventChunk {
			fmt.Print(ev.Content)
		}
		last = ev
	}
	fmt.Println()
	// Branch on IsFailure, not on the event type: this run ended with a
	// status event, not an error event.
	if last.IsFailure() {
		fmt.Printf("run %s %s: %s\n", run.RunID, last.Status, last.Content)
	}
	// Output:
	// Hello, world
	// run run-1 FAILED: the answer failed its output schema
}

func ExampleParseSSE() {
	ev, err := gateway.ParseSSE("message", `{"type":"status","payload":{"status":"WAITING_USER","reason":"input required"},"run_id":"run-1","sequence":7}`)
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.Type, ev.Status, ev.IsTerminal(), ev.Content)
	// Output: status WAITING_USER false input required
}

// Hold a run, let one event through, and let it go on. A stand-in for the
// gateway answers each action with the run's debugger.
func ExampleClient_SendDebugControl() {
	state := map[gateway.DebugAction]gateway.BreakpointState{gateway.DebugPause: gateway.BreakpointPaused,
		gateway.DebugStep: gateway.BreakpointStepping, gateway.DebugResume: gateway.BreakpointRunning}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		action := gateway.DebugAction(r.URL.Path[len(gateway.RunsPath+"/run-1/debug/"):])
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(gateway.DebugSession{SessionID: "dbg-1", RunID: "run-1", BreakpointState: state[action], Action: action})
	}))
	defer srv.Close()

	c, err := gateway.NewClient(srv.URL, &gateway.ClientOptions{Token: secret.New("a platform token")})
	if err != nil {
		panic(err)
	}
	for _, a := range []gateway.DebugAction{gateway.DebugPause, gateway.DebugStep, gateway.DebugResume} {
		d, err := c.SendDebugControl(context.Background(), "run-1", a, map[string]any{"note": "looking at the tool calls"})
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Action, "→", d.BreakpointState)
	}
	// Output:
	// pause → paused
	// step → stepping
	// resume → running
}
