package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goa2a "github.com/a2aproject/a2a-go/v2/a2a"
	goa2asrv "github.com/a2aproject/a2a-go/v2/a2asrv"

	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/app"
	"novaos.dev/novaos/secret"
)

// Shared by the execution gateway's interop and crash tests
// (gateway_*_test.go): a gateway client for a tenant's user, readers of a
// run's event stream (the Go client's and a raw SSE one), and the two
// peer agents installed by URL, an a2a-go agent in this process and the
// a2a-js agent js/gateway_agent.mjs in a Node process of its own.

const (
	gwTenant = "acme"
	gwUser   = "alice"
	// gwTimeout bounds every wait of these tests. It is only a failure
	// bound: each test waits on events and process state, never on time,
	// and a busy two-core machine may take long.
	gwTimeout = 2 * time.Minute
)

// gwUserClient returns a gateway client of srv for the user alice of the
// tenant acme, allowed to install instances and run them, and the token
// it sends.
func gwUserClient(t *testing.T, srv *app.Server) (*gateway.Client, secret.Value) {
	t.Helper()
	tok, err := srv.Issuer().Mint(t.Context(), identity.Claims{TenantID: gwTenant, UserID: gwUser, AgentID: "interop",
		Scopes: []string{"runs:*", "instances:*"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gateway.NewClient(srv.URL(), &gateway.ClientOptions{Token: secret.New(tok)})
	if err != nil {
		t.Fatal(err)
	}
	return c, secret.New(tok)
}

// gwInstall installs the A2A agent at url as an instance of the client's
// tenant.
func gwInstall(t *testing.T, c *gateway.Client, name, url string) *gateway.Instance {
	t.Helper()
	inst, err := c.Install(t.Context(), gateway.InstallRequest{Name: name, URL: url, Config: map[string]any{"greeting": "hi"},
		Scopes: []string{"memory:read:*"}})
	if err != nil {
		t.Fatalf("install %s: %v", url, err)
	}
	if inst.URL != url || inst.AgentID == "" {
		t.Fatalf("installed %+v, want the agent at %s registered", inst, url)
	}
	return inst
}

// gwExecute starts a run of inst with input.
func gwExecute(t *testing.T, c *gateway.Client, inst *gateway.Instance, input string) string {
	t.Helper()
	res, err := c.Execute(t.Context(), gateway.ExecuteRequest{InstanceID: inst.ID, Input: input})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	return res.RunID
}

// gwEvents follows a run's events with EventsWithReconnect from after
// lastID ("" from the start) until stop says so or the stream ends, and
// returns what it read; a stream error fails the test.
func gwEvents(t *testing.T, c *gateway.Client, runID, lastID string, stop func(gateway.StreamEvent) bool) []gateway.StreamEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), gwTimeout)
	defer cancel()
	var out []gateway.StreamEvent
	for ev, err := range c.EventsWithReconnect(ctx, runID, &gateway.ReconnectOptions{LastEventID: lastID, MaxRetries: 50}) {
		if err != nil {
			t.Fatalf("events of run %s after %d events: %v\nread: %s", runID, len(out), err, gwKinds(out))
		}
		out = append(out, ev)
		if stop != nil && stop(ev) {
			break
		}
	}
	return out
}

// gwFollow reads a run's events until its terminal event, which must end
// the stream.
func gwFollow(t *testing.T, c *gateway.Client, runID string) []gateway.StreamEvent {
	t.Helper()
	evs := gwEvents(t, c, runID, "", nil)
	if len(evs) == 0 || !evs[len(evs)-1].IsTerminal() {
		t.Fatalf("the stream of run %s ended without a terminal event: %s", runID, gwKinds(evs))
	}
	return evs
}

// gwKinds shows events as "seq:type[:status]" for failure messages.
func gwKinds(evs []gateway.StreamEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s:%s", ev.ID, ev.WireType)
		if ev.Status != "" {
			fmt.Fprintf(&b, ":%s", ev.Status)
		}
		if ev.Content != "" {
			fmt.Fprintf(&b, " %q", ev.Content)
		}
	}
	return b.String()
}

// gwExactlyOnce checks that evs are the run's events 1..len(evs), each
// once, in order, with the SSE id its sequence.
func gwExactlyOnce(t *testing.T, runID string, evs []gateway.StreamEvent) {
	t.Helper()
	for i, ev := range evs {
		want := int64(i + 1)
		if ev.Sequence != want || ev.ID != strconv.FormatInt(want, 10) || ev.RunID != runID {
			t.Fatalf("event %d is id %q sequence %d of run %q, want %d of %s; events:%s", i, ev.ID, ev.Sequence, ev.RunID, want, runID, gwKinds(evs))
		}
	}
}

// gwIndex is a run's event index as the gateway recorded it: the types in
// sequence order.
func gwIndex(t *testing.T, c *gateway.Client, runID string) []string {
	t.Helper()
	var types []string
	after := ""
	for {
		p, err := c.RunEvents(t.Context(), runID, gateway.RunEventsOptions{After: after})
		if err != nil {
			t.Fatalf("event index of run %s: %v", runID, err)
		}
		for i, ev := range p.Events {
			if want := int64(len(types) + 1); ev.Sequence != want {
				t.Fatalf("index event %d of page after %q has sequence %d, want %d", i, after, ev.Sequence, want)
			}
			types = append(types, ev.Type)
		}
		if len(p.Events) == 0 || p.NextCursor == "" {
			return types
		}
		after = p.NextCursor
	}
}

// gwWireTypes are the events' types as sent.
func gwWireTypes(evs []gateway.StreamEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.WireType
	}
	return out
}

// gwFind returns the first event of type typ whose status (when want is
// not "") is want.
func gwFind(evs []gateway.StreamEvent, typ string, want gateway.Status) (gateway.StreamEvent, bool) {
	for _, ev := range evs {
		if ev.WireType == typ && (want == "" || ev.Status == want) {
			return ev, true
		}
	}
	return gateway.StreamEvent{}, false
}

// sseFrame is one frame of an event stream as a raw reader sees it.
type sseFrame struct {
	ID, Event, Data string
}

// rawEvents reads GET /api/v1/events/{runID} with a plain HTTP client and
// a line reader, no gateway code, until the server closes the stream.
func rawEvents(t *testing.T, baseURL string, token secret.Value, runID string) []sseFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), gwTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+gateway.EventsPath+runID, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token.Reveal())
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET events: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET events: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	var frames []sseFrame
	var cur sseFrame
	var data []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if data != nil {
				cur.Data = strings.Join(data, "\n")
				frames = append(frames, cur)
			}
			cur, data = sseFrame{}, nil
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			cur.ID = value
		case "event":
			cur.Event = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read events after %d frames: %v", len(frames), err)
	}
	return frames
}

// rawFrame is the JSON body of a raw frame.
type rawFrame struct {
	Type    string `json:"type"`
	RunID   string `json:"run_id"`
	Seq     int64  `json:"sequence"`
	Payload struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"payload"`
}

func (f sseFrame) body(t *testing.T) rawFrame {
	t.Helper()
	var b rawFrame
	if err := json.Unmarshal([]byte(f.Data), &b); err != nil {
		t.Fatalf("frame %s: %v: %s", f.ID, err, f.Data)
	}
	return b
}

// gwDelivery is what a peer agent was sent: the message (its id is the
// gateway's idempotency key) and the platform context of the request's
// metadata, with the execution token replaced by "(present)".
type gwDelivery struct {
	MessageID string         `json:"message_id"`
	TaskID    string         `json:"task_id"`
	ContextID string         `json:"context_id"`
	Text      string         `json:"text"`
	Resumed   bool           `json:"resumed"`
	TaskState any            `json:"task_state"`
	Context   map[string]any `json:"context"`
	// Token and Authorization are the execution token and the request's
	// Authorization header, kept apart so no failure message shows them
	// (a2a-go peer only).
	Token, Authorization string `json:"-"`
}

// String shows a delivery without its token or Authorization header.
func (d gwDelivery) String() string {
	return fmt.Sprintf("{message %s task %s context %s text %q resumed %v platform context %v}",
		d.MessageID, d.TaskID, d.ContextID, d.Text, d.Resumed, d.Context)
}

func (d gwDelivery) ctx(key string) string {
	s, _ := d.Context[key].(string)
	return s
}

// checkPlatformContext checks the platform context a delivery of the run
// carried.
func checkPlatformContext(t *testing.T, d gwDelivery, run *gateway.Run, instanceID string) {
	t.Helper()
	for k, want := range map[string]string{
		"run_id": run.ID, "tenant_id": gwTenant, "user_id": gwUser, "instance_id": instanceID,
		"idempotency_key": run.IdempotencyKey, "execution_token": "(present)",
	} {
		if got := d.ctx(k); got != want {
			t.Errorf("platform context %s = %q, want %q (context %v)", k, got, want, d.Context)
		}
	}
	if d.MessageID != run.IdempotencyKey {
		t.Errorf("message id %q, want the idempotency key %q", d.MessageID, run.IdempotencyKey)
	}
	if tp := d.ctx("traceparent"); !strings.HasPrefix(tp, "00-"+d.ctx("trace_id")+"-") || len(tp) != 55 {
		t.Errorf("traceparent %q does not carry trace_id %q", tp, d.ctx("trace_id"))
	}
	if cfg, _ := d.Context["config"].(map[string]any); cfg["greeting"] != "hi" {
		t.Errorf("platform context config = %v, want the instance's", d.Context["config"])
	}
}

// waitDelivery waits for the next delivery of the run a peer reports,
// passing over those of other runs.
func waitDelivery(t *testing.T, ch <-chan gwDelivery, runID, what string) gwDelivery {
	t.Helper()
	deadline := time.After(gwTimeout)
	for {
		select {
		case d := <-ch:
			if d.ctx("run_id") == runID {
				return d
			}
		case <-deadline:
			t.Fatalf("no %s of run %s reached the agent in %v", what, runID, gwTimeout)
			return gwDelivery{}
		}
	}
}

// gwGoAgent is an a2a-go v2.3.1 agent that reports every delivery. "ask"
// waits for input, which completes the task with "answer: <text>";
// "hold" reports WORKING ("working") and, on the first delivery of an
// idempotency key, waits until release is closed or its call ends;
// "steps" reports WORKING "step 1" to "step 3", waits for release, then
// "step 4" to "step 6"; "refuse" is refused with an A2A error
// (UnsupportedOperation) before any event; anything else (and a redelivered "hold") is
// echoed as an artifact and completes.
type gwGoAgent struct {
	deliveries chan gwDelivery
	// cancels gets the task id of every CancelTask.
	cancels chan string
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	seen    map[string]int
}

// releaseAll lets every held execution go on.
func (a *gwGoAgent) releaseAll() { a.once.Do(func() { close(a.release) }) }

func (a *gwGoAgent) Execute(ctx context.Context, ec *goa2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		d := gwDelivery{MessageID: ec.Message.ID, TaskID: string(ec.TaskID), ContextID: ec.ContextID,
			Text: goPeerText(ec.Message), Resumed: ec.StoredTask != nil}
		if pc, ok := ec.Metadata[agent.ContextMetadataKey].(map[string]any); ok {
			d.Context = make(map[string]any, len(pc))
			for k, v := range pc {
				d.Context[k] = v
			}
			if tok, ok := pc["execution_token"].(string); ok {
				d.Token, d.Context["execution_token"] = tok, "(present)"
			}
			if _, ok := pc["mcp_gateway_token"].(string); ok {
				d.Context["mcp_gateway_token"] = "(present)"
			}
		}
		if ec.ServiceParams != nil {
			if v, ok := ec.ServiceParams.Get("authorization"); ok && len(v) > 0 {
				d.Authorization = v[0]
			}
		}
		a.mu.Lock()
		a.seen[d.MessageID]++
		first := a.seen[d.MessageID] == 1
		a.mu.Unlock()
		a.deliveries <- d

		status := func(state goa2a.TaskState, text string) bool {
			var m *goa2a.Message
			if text != "" {
				m = goa2a.NewMessageForTask(goa2a.MessageRoleAgent, ec, goa2a.NewTextPart(text))
			}
			return yield(goa2a.NewStatusUpdateEvent(ec, state, m), nil)
		}
		wait := func() bool {
			select {
			case <-a.release:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if d.Text == "refuse" {
			yield(nil, goa2a.ErrUnsupportedOperation)
			return
		}
		if st := ec.StoredTask; st != nil && st.Status.State == goa2a.TaskStateInputRequired {
			if yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("answer: "+d.Text)), nil) {
				status(goa2a.TaskStateCompleted, "done")
			}
			return
		}
		if ec.StoredTask == nil && !yield(goa2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		switch d.Text {
		case "ask":
			status(goa2a.TaskStateInputRequired, "what number?")
			return
		case "hold":
			if !status(goa2a.TaskStateWorking, "working") || first && !wait() {
				return
			}
			if first {
				return // released: the stream ends without an ending
			}
		case "steps":
			for i := 1; i <= 6; i++ {
				if !status(goa2a.TaskStateWorking, fmt.Sprintf("step %d", i)) || i == 3 && !wait() {
					return
				}
			}
		default:
			if !status(goa2a.TaskStateWorking, "") {
				return
			}
		}
		if yield(goa2a.NewArtifactEvent(ec, goa2a.NewTextPart("echo: "+d.Text)), nil) {
			status(goa2a.TaskStateCompleted, "done")
		}
	}
}

func (a *gwGoAgent) Cancel(_ context.Context, ec *goa2asrv.ExecutorContext) iter.Seq2[goa2a.Event, error] {
	return func(yield func(goa2a.Event, error) bool) {
		a.cancels <- string(ec.TaskID)
		yield(goa2a.NewStatusUpdateEvent(ec, goa2a.TaskStateCanceled, nil), nil)
	}
}

// startGWGoAgent serves a gwGoAgent with a2a-go's JSON-RPC handler and
// its card at the well-known path.
func startGWGoAgent(t *testing.T) (*gwGoAgent, string) {
	t.Helper()
	a := &gwGoAgent{deliveries: make(chan gwDelivery, 64), cancels: make(chan string, 64), release: make(chan struct{}), seen: map[string]int{}}
	h := goa2asrv.NewHandler(a, goa2asrv.WithLogger(slog.New(slog.DiscardHandler)))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		a.releaseAll()
		srv.CloseClientConnections()
		srv.Close()
	})
	card := &goa2a.AgentCard{
		Name:                "a2a-go gateway peer",
		Description:         "a2a-go v2.3.1 agent run through the NovaOS execution gateway",
		Version:             "1.0.0",
		SupportedInterfaces: []*goa2a.AgentInterface{goa2a.NewAgentInterface(srv.URL, goa2a.TransportProtocolJSONRPC)},
		Capabilities:        goa2a.AgentCapabilities{Streaming: true},
		DefaultInputModes:   []string{"text/plain"},
		DefaultOutputModes:  []string{"text/plain"},
		Skills:              []goa2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}},
	}
	mux.Handle(goa2asrv.WellKnownAgentCardPath, goa2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/", goa2asrv.NewJSONRPCHandler(h))
	return a, srv.URL
}

// jsGatewayAgent is a running js/gateway_agent.mjs.
type jsGatewayAgent struct {
	URL        string
	Port       int
	deliveries chan gwDelivery
	cancels    chan string
	cmd        *exec.Cmd
	exited     chan struct{}
	stderr     *lockedBuffer
}

// lockedBuffer is a bytes.Buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startJSGatewayAgent starts js/gateway_agent.mjs on port (0: any), with
// --hold when hold is set, and waits until it listens. The process is
// stopped when the test ends, if it still runs.
func startJSGatewayAgent(t *testing.T, port int, hold bool) *jsGatewayAgent {
	t.Helper()
	node, dir := jsPeer(t)
	args := []string{"gateway_agent.mjs", strconv.Itoa(port)}
	if hold {
		args = append(args, "--hold")
	}
	p := &jsGatewayAgent{deliveries: make(chan gwDelivery, 64), cancels: make(chan string, 64), exited: make(chan struct{}), stderr: &lockedBuffer{}}
	p.cmd = exec.Command(node, args...)
	p.cmd.Dir = dir
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start node gateway_agent.mjs: %v", err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	ready := make(chan string, 1)
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		first := true
		for sc.Scan() {
			if first {
				ready <- sc.Text()
				first = false
				continue
			}
			var line struct {
				Delivery *gwDelivery
				Cancel   *struct {
					TaskID string `json:"task_id"`
				}
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line.Delivery != nil {
				p.deliveries <- *line.Delivery
			}
			if line.Cancel != nil {
				p.cancels <- line.Cancel.TaskID
			}
		}
		close(ready)
		p.cmd.Wait()
	}()
	select {
	case line, ok := <-ready:
		var r struct{ URL string }
		if !ok || json.Unmarshal([]byte(line), &r) != nil || r.URL == "" {
			t.Fatalf("gateway_agent.mjs did not report its URL (got %q); stderr:\n%s", line, p.stderr)
		}
		p.URL = r.URL
		_, portText, _ := strings.Cut(strings.TrimPrefix(r.URL, "http://"), ":")
		if p.Port, err = strconv.Atoi(portText); err != nil {
			t.Fatalf("gateway_agent.mjs URL %q: %v", r.URL, err)
		}
	case <-time.After(gwTimeout):
		t.Fatalf("gateway_agent.mjs did not start in %v; stderr:\n%s", gwTimeout, p.stderr)
	}
	return p
}

// waitCancel waits until the agent is asked to cancel the task.
func waitCancel(t *testing.T, ch <-chan string, taskID string) {
	t.Helper()
	deadline := time.After(gwTimeout)
	for {
		select {
		case id := <-ch:
			if id == taskID {
				return
			}
		case <-deadline:
			t.Fatalf("the agent was not asked to cancel task %s in %v", taskID, gwTimeout)
		}
	}
}

// kill9 kills the process with SIGKILL and waits until it is gone.
func (p *jsGatewayAgent) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 the agent: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(gwTimeout):
		t.Fatalf("the agent did not die of SIGKILL in %v", gwTimeout)
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the agent ended with %v, not SIGKILL", p.cmd.ProcessState)
	}
}
