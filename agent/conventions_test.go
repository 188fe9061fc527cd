package agent_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
	"novaos.dev/novaos/ext/confidence"
	"novaos.dev/novaos/ext/conventions"
	"novaos.dev/novaos/ext/cost"
	"novaos.dev/novaos/ext/extmeta"
	"novaos.dev/novaos/ext/toolcall"
	"novaos.dev/novaos/ext/worldstate"
	"novaos.dev/novaos/internal/schematest"
)

// stream sends a SendStreamingMessage and returns every frame, each
// checked against the A2A schema.
func stream(t *testing.T, url string, req a2a.SendMessageRequest, header http.Header) []a2a.StreamResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": req})
	if err != nil {
		t.Fatal(err)
	}
	hreq, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var frames []a2a.StreamResponse
	events := a2a.NewEventReader(resp.Body, 0)
	for {
		ev, err := events.Next()
		if errors.Is(err, io.EOF) {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		env, err := a2a.DecodeResponse(ev.Data)
		if err != nil || env.Error != nil {
			t.Fatalf("frame %s: %v %v", ev.Data, err, env.Error)
		}
		schematest.Validate(t, "Stream Response", env.Result)
		var f a2a.StreamResponse
		if err := a2a.Unmarshal(env.Result, &f); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
}

// telemetrySkill calls two tools and reports every kind of extension data.
func telemetrySkill(c *agent.Context) (agent.Result, error) {
	search, err := c.StartToolCall("call_1", "search", map[string]any{"q": "go"})
	if err != nil {
		return agent.Result{}, err
	}
	if err := search.Complete("3 hits"); err != nil {
		return agent.Result{}, err
	}
	fetch, err := c.StartToolCall("", "fetch", nil)
	if err != nil {
		return agent.Result{}, err
	}
	if err := fetch.Fail(errors.New("status 503")); err != nil {
		return agent.Result{}, err
	}
	if err := errors.Join(
		c.ReportCost(cost.Payload{Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}, DurationMs: new(int64(900)), CostUSD: new(0.01), Success: new(true)}),
		c.ReportConfidence(confidence.Payload{Confidence: 0.92, Explanation: "high coverage"}),
		c.ReportWorldstate(worldstate.Delta{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1}),
		c.ReportWorldstate(worldstate.Delta{Domain: "board", Path: "data.last", Op: worldstate.OpSet, Value: "BUG-12"}),
	); err != nil {
		return agent.Result{}, err
	}
	return agent.Result{Output: "done"}, nil
}

var (
	wantCost       = cost.Payload{Usage: cost.Usage{InputTokens: 1500, OutputTokens: 420}, DurationMs: new(int64(900)), CostUSD: new(0.01), Success: new(true)}
	wantConfidence = confidence.Payload{Confidence: 0.92, Explanation: "high coverage"}
	wantWorld      = worldstate.Payload{Deltas: []worldstate.Delta{
		{Domain: "board", Path: "data.backlog", Op: worldstate.OpInc, Value: 1.0},
		{Domain: "board", Path: "data.last", Op: worldstate.OpSet, Value: "BUG-12"},
	}}
)

// checkArtifactTelemetry parses the three artifact extensions from md.
func checkArtifactTelemetry(t *testing.T, md map[string]any) {
	t.Helper()
	c, ok, err := cost.Parse(md)
	if !ok || err != nil {
		t.Fatalf("cost: ok=%v err=%v in %v", ok, err, md)
	}
	if diff := cmp.Diff(wantCost, c); diff != "" {
		t.Errorf("cost (-want +got):\n%s", diff)
	}
	conf, ok, err := confidence.Parse(md)
	if !ok || err != nil || conf != wantConfidence {
		t.Errorf("confidence = %+v ok=%v err=%v", conf, ok, err)
	}
	w, ok, err := worldstate.Parse(md)
	if !ok || err != nil {
		t.Fatalf("worldstate: ok=%v err=%v", ok, err)
	}
	if diff := cmp.Diff(wantWorld, w); diff != "" {
		t.Errorf("worldstate (-want +got):\n%s", diff)
	}
}

func conventionsAgent(opts *agent.Options) *agent.Agent {
	if opts == nil {
		opts = &agent.Options{}
	}
	opts.Extensions = conventions.Declarations(nil)
	a := agent.New("triage", "1", opts)
	a.MustRegister(agent.Skill{ID: "work", Handler: telemetrySkill})
	return a
}

func TestConventionsStreaming(t *testing.T) {
	url := endpoint(t, conventionsAgent(nil))

	// The served card declares the four extensions.
	// As a v1 client asks: without A2A-Version the card has 0.3's members too.
	req, _ := http.NewRequest(http.MethodGet, url+a2a.WellKnownCardPath, nil)
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	schematest.Validate(t, "Agent Card", raw)
	var card a2a.AgentCard
	if err := a2a.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(conventions.Declarations(nil), card.Capabilities.Extensions); diff != "" {
		t.Errorf("card extensions (-want +got):\n%s", diff)
	}

	frames := stream(t, url, a2a.SendMessageRequest{Message: userMsg("go", nil)}, nil)
	var calls []toolcall.Payload
	var final *a2a.TaskStatusUpdateEvent
	artifacts := 0
	for i, f := range frames {
		switch {
		case f.StatusUpdate != nil:
			if f.StatusUpdate.Status.State.Terminal() {
				final = f.StatusUpdate
				continue
			}
			if m := f.StatusUpdate.Status.Message; m != nil {
				p, ok, err := toolcall.Parse(m.Metadata)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if ok {
					if f.StatusUpdate.Status.State != a2a.TaskStateWorking || len(m.Parts) == 0 {
						t.Errorf("tool-call frame %d: state %v, %d parts", i, f.StatusUpdate.Status.State, len(m.Parts))
					}
					calls = append(calls, p)
				}
			}
		case f.ArtifactUpdate != nil:
			artifacts++
			if final != nil {
				t.Error("artifact after the final status")
			}
			checkArtifactTelemetry(t, f.ArtifactUpdate.Artifact.Metadata)
		}
	}
	if final == nil || final.Status.State != a2a.TaskStateCompleted || artifacts != 1 {
		t.Fatalf("final = %+v, %d artifacts", final, artifacts)
	}
	if len(calls) != 4 {
		t.Fatalf("tool-call events = %+v, want 4", calls)
	}
	fetchID := calls[2].ToolCallID
	if fetchID == "" || calls[3].ToolCallID != fetchID {
		t.Errorf("fetch events have ids %q and %q", fetchID, calls[3].ToolCallID)
	}
	want := []toolcall.Payload{
		{ToolCallID: "call_1", Name: "search", Phase: toolcall.PhaseStarted, Args: map[string]any{"q": "go"}},
		{ToolCallID: "call_1", Name: "search", Phase: toolcall.PhaseCompleted, Result: "3 hits"},
		{ToolCallID: fetchID, Name: "fetch", Phase: toolcall.PhaseStarted},
		{ToolCallID: fetchID, Name: "fetch", Phase: toolcall.PhaseFailed, Error: "status 503"},
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("tool-call events (-want +got):\n%s", diff)
	}
}

func TestConventionsUnary(t *testing.T) {
	for _, mask := range []bool{false, true} {
		url := endpoint(t, conventionsAgent(&agent.Options{MaskOutputPII: mask}))
		task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("go", nil)}, nil)
		if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
			t.Fatalf("mask=%v: task %v with %d artifacts", mask, task.Status.State, len(task.Artifacts))
		}
		checkArtifactTelemetry(t, task.Artifacts[0].Metadata)
		// The tool-call events stay in the history for a caller that did not
		// stream.
		n := 0
		for _, m := range task.History {
			if _, ok, _ := toolcall.Parse(m.Metadata); ok {
				n++
			}
		}
		if n != 4 {
			t.Errorf("mask=%v: %d tool-call messages in the history, want 4", mask, n)
		}
	}
}

func TestConventionsNotDeclared(t *testing.T) {
	a := agent.New("plain", "1", &agent.Options{Extensions: []a2a.AgentExtension{toolcall.Declaration()}})
	errs := make(chan error, 8)
	a.MustRegister(agent.Skill{ID: "work", Handler: func(c *agent.Context) (agent.Result, error) {
		errs <- c.ReportCost(cost.Payload{})
		errs <- c.ReportConfidence(confidence.Payload{Confidence: 1})
		errs <- c.ReportWorldstate(worldstate.Delta{Domain: "d", Path: "p", Op: worldstate.OpSet})
		errs <- c.ReportCost(cost.Payload{DurationMs: new(int64(-1))}) // invalid first
		if c.ExtensionMetadata() != nil {
			errs <- errors.New("something was recorded")
		}
		return agent.Result{Output: "x"}, nil
	}})
	url := endpoint(t, a)
	task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("go", nil)}, nil)
	for i := range 3 {
		if err := <-errs; !errors.Is(err, agent.ErrNotDeclared) {
			t.Errorf("report %d: err = %v, want ErrNotDeclared", i, err)
		}
	}
	if err := <-errs; !errors.Is(err, extmeta.ErrInvalid) {
		t.Errorf("invalid report: err = %v, want ErrInvalid", err)
	}
	if len(errs) != 0 {
		t.Error(<-errs)
	}
	if md := task.Artifacts[0].Metadata; md != nil {
		t.Errorf("artifact metadata = %v, want none", md)
	}

	// Tool calls: not declared means a silent call and ErrNotDeclared.
	b := agent.New("plain", "1", nil)
	b.MustRegister(agent.Skill{ID: "work", Handler: func(c *agent.Context) (agent.Result, error) {
		call, err := c.StartToolCall("", "search", nil)
		if !errors.Is(err, agent.ErrNotDeclared) || call == nil {
			return agent.Result{}, errors.New("StartToolCall did not say ErrNotDeclared")
		}
		if err := call.Complete(1); err != nil {
			return agent.Result{}, err
		}
		if err := call.Complete(1); !errors.Is(err, agent.ErrToolCallEnded) {
			return agent.Result{}, errors.New("second Complete did not say ErrToolCallEnded")
		}
		return agent.Result{Output: "ok"}, nil
	}})
	task = sendTask(t, endpoint(t, b), a2a.SendMessageRequest{Message: userMsg("go", nil)}, nil)
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %v: %s", task.Status.State, task.Status.Message.Text())
	}
	for _, m := range task.History {
		if _, ok, _ := toolcall.Parse(m.Metadata); ok {
			t.Error("a tool-call event was emitted by an agent that does not declare the extension")
		}
	}
}

func TestConventionsActivation(t *testing.T) {
	url := endpoint(t, conventionsAgent(&agent.Options{RequireExtensionActivation: true}))
	for _, tc := range []struct {
		name      string
		header    string
		wantCalls int
		wantCost  bool
	}{
		{"none activated", "", 0, false},
		{"cost only", cost.URI, 0, true},
		{"all", "https://example.com/unknown, " + toolcall.URI + "," + cost.URI, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.header != "" {
				h.Set(a2a.HeaderExtensions, tc.header)
			}
			task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("go", nil)}, h)
			if task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("task %v: %s", task.Status.State, task.Status.Message.Text())
			}
			calls := 0
			for _, m := range task.History {
				if _, ok, _ := toolcall.Parse(m.Metadata); ok {
					calls++
				}
			}
			md := task.Artifacts[0].Metadata
			_, hasCost, _ := cost.Parse(md)
			_, hasConf, _ := confidence.Parse(md)
			if calls != tc.wantCalls || hasCost != tc.wantCost || hasConf {
				t.Errorf("tool calls %d (want %d), cost %v (want %v), confidence %v (want false)", calls, tc.wantCalls, hasCost, tc.wantCost, hasConf)
			}
		})
	}
}

func TestConventionsWithoutOutput(t *testing.T) {
	a := agent.New("quiet", "1", &agent.Options{Extensions: conventions.Declarations([]string{cost.URI})})
	a.MustRegister(agent.Skill{ID: "nothing", Handler: func(c *agent.Context) (agent.Result, error) {
		return agent.Result{}, c.ReportCost(cost.Payload{Usage: cost.Usage{InputTokens: 1}})
	}})
	a.MustRegister(agent.Skill{ID: "fail", Handler: func(c *agent.Context) (agent.Result, error) {
		if err := c.ReportCost(cost.Payload{Success: new(false)}); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Status: agent.StatusFailed, Error: "upstream down"}, nil
	}})
	a.MustRegister(agent.Skill{ID: "self", Handler: func(c *agent.Context) (agent.Result, error) {
		if err := c.ReportCost(cost.Payload{CostUSD: new(0.5)}); err != nil {
			return agent.Result{}, err
		}
		u := c.Updater()
		art := a2a.Artifact{ArtifactID: "own", Parts: []a2a.Part{a2a.TextPart("mine")}, Metadata: c.ExtensionMetadata()}
		if err := u.AddArtifact(c, art); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{}, u.Complete(c, nil)
	}})
	url := endpoint(t, a)
	for _, tc := range []struct {
		skill     string
		state     a2a.TaskState
		wantText  string
		wantUsage cost.Payload
	}{
		{"nothing", a2a.TaskStateCompleted, "", cost.Payload{Usage: cost.Usage{InputTokens: 1}}},
		{"fail", a2a.TaskStateFailed, "upstream down", cost.Payload{Success: new(false)}},
		{"self", a2a.TaskStateCompleted, "mine", cost.Payload{CostUSD: new(0.5)}},
	} {
		t.Run(tc.skill, func(t *testing.T) {
			task := sendTask(t, url, a2a.SendMessageRequest{Message: userMsg("go", map[string]any{agent.SkillIDMetadataKey: tc.skill})}, nil)
			if task.Status.State != tc.state || len(task.Artifacts) != 1 {
				t.Fatalf("task %v with %d artifacts", task.Status.State, len(task.Artifacts))
			}
			art := task.Artifacts[0]
			if got := a2a.PartsText(art.Parts); got != tc.wantText {
				t.Errorf("artifact text %q, want %q", got, tc.wantText)
			}
			got, ok, err := cost.Parse(art.Metadata)
			if !ok || err != nil {
				t.Fatalf("cost: ok=%v err=%v", ok, err)
			}
			if diff := cmp.Diff(tc.wantUsage, got); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
		})
	}
}

// BeginToolCall reports like StartToolCall, with plain types: end
// completes or fails the call, a second end is ErrToolCallEnded, and an
// agent that does not declare tool-call-v1 gets a silent call and no
// error.
func TestBeginToolCall(t *testing.T) {
	tests := []struct {
		name string
		opts *agent.Options
		want []string
	}{
		{"declared", &agent.Options{Extensions: []a2a.AgentExtension{toolcall.Declaration()}},
			[]string{"call_1 search started", "call_1 search completed", "fetch started", "fetch failed: status 503"}},
		{"not declared", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := agent.New("tools", "1", tt.opts)
			var errs []error
			a.MustRegister(agent.Skill{ID: "work", Handler: func(c *agent.Context) (agent.Result, error) {
				id, end, err := c.BeginToolCall("call_1", "search", map[string]any{"q": "go"})
				errs = append(errs, err)
				if id != "call_1" {
					errs = append(errs, errors.New("id "+id))
				}
				errs = append(errs, end("3 hits", nil))
				if err := end("again", nil); !errors.Is(err, agent.ErrToolCallEnded) {
					errs = append(errs, errors.New("second end did not say ErrToolCallEnded"))
				}
				id, end, err = c.BeginToolCall("", "fetch", nil)
				if id == "" {
					errs = append(errs, errors.New("no id generated"))
				}
				errs = append(errs, err, end(nil, errors.New("status 503")))
				return agent.Result{Output: "ok"}, nil
			}})
			task := sendTask(t, endpoint(t, a), a2a.SendMessageRequest{Message: userMsg("go", nil)}, nil)
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range task.History {
				if p, ok, _ := toolcall.Parse(m.Metadata); ok {
					s := p.Name + " " + string(p.Phase)
					if p.ToolCallID == "call_1" {
						s = p.ToolCallID + " " + s
					}
					if p.Error != "" {
						s += ": " + p.Error
					}
					got = append(got, s)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tool-call events (-want +got):\n%s", diff)
			}
		})
	}
}
