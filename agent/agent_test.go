package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

func request(text string) *a2asrv.RequestContext {
	msg := a2a.NewMessage(a2a.RoleUser, a2a.TextPart(text))
	msg.TaskID, msg.ContextID = "task-1", "ctx-1"
	return &a2asrv.RequestContext{TaskID: "task-1", ContextID: "ctx-1", Message: msg}
}

func withSkill(req *a2asrv.RequestContext, id string) *a2asrv.RequestContext {
	if req.Message.Metadata == nil {
		req.Message.Metadata = map[string]any{}
	}
	req.Message.Metadata[SkillIDMetadataKey] = id
	return req
}

func oneSkill(h HandlerFunc) *Agent {
	a := New("test-agent", "1.0.0", nil)
	a.MustRegister(Skill{ID: "s", Handler: h})
	return a
}

func run(t *testing.T, a *Agent, req *a2asrv.RequestContext) (*fakeUpdater, error) {
	t.Helper()
	f := &fakeUpdater{}
	err := a.Execute(context.Background(), req, f)
	return f, err
}

func text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return m.Text()
}

func TestStatusMapping(t *testing.T) {
	tests := []struct {
		status    string
		want      a2a.TaskState
		wantInMsg string
	}{
		{"", a2a.TaskStateCompleted, ""},
		{"COMPLETED", a2a.TaskStateCompleted, ""},
		{"FAILED", a2a.TaskStateFailed, "the skill failed"},
		{"WAITING_USER", a2a.TaskStateInputRequired, ""},
		{"REJECTED", a2a.TaskStateRejected, "rejected the request"},
		{"AUTH_REQUIRED", a2a.TaskStateAuthRequired, ""},
		{"QUEUED", a2a.TaskStateSubmitted, ""},
		{"RUNNING", a2a.TaskStateWorking, ""},
		{"IN_PROGRESS", a2a.TaskStateWorking, ""},
		{"ERROR", a2a.TaskStateFailed, ""},
		{"completed", a2a.TaskStateFailed, `unknown status "completed"`},
		{"DONE", a2a.TaskStateFailed, `unknown status "DONE"`},
		{"CANCELED", a2a.TaskStateFailed, `unknown status "CANCELED"`},
	}
	for _, tt := range tests {
		t.Run("status="+tt.status, func(t *testing.T) {
			a := oneSkill(func(c *Context) (Result, error) { return Result{Status: tt.status}, nil })
			f, err := run(t, a, request("hi"))
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			got := f.final()
			if got.State != tt.want {
				t.Errorf("final state = %v, want %v", got.State, tt.want)
			}
			if tt.wantInMsg != "" && !strings.Contains(text(got.Msg), tt.wantInMsg) {
				t.Errorf("status message %q does not contain %q", text(got.Msg), tt.wantInMsg)
			}
			if ops := f.ops(); ops[0] != "status:TASK_STATE_WORKING" {
				t.Errorf("first write = %v, want WORKING", ops)
			}
		})
	}
}

func TestResultContent(t *testing.T) {
	type payload struct {
		Answer int `json:"answer"`
	}
	tests := []struct {
		name      string
		res       Result
		wantParts []a2a.Part // artifact parts; nil means no artifact
		wantMsg   []a2a.Part // status message parts
	}{
		{
			name:      "string output",
			res:       Result{Output: "hello"},
			wantParts: []a2a.Part{a2a.TextPart("hello")},
			wantMsg:   []a2a.Part{a2a.TextPart("hello")},
		},
		{
			name:      "bytes output",
			res:       Result{Output: []byte("raw")},
			wantParts: []a2a.Part{a2a.RawPart([]byte("raw"), "", "application/octet-stream")},
			wantMsg:   []a2a.Part{a2a.RawPart([]byte("raw"), "", "application/octet-stream")},
		},
		{
			name:      "struct output",
			res:       Result{Output: payload{42}},
			wantParts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"answer":42}`), MediaType: "application/json"}},
			wantMsg:   []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{"answer":42}`), MediaType: "application/json"}},
		},
		{
			name: "parts output and metadata",
			res:  Result{Output: []a2a.Part{a2a.URLPart("https://example.com/x", "x", "text/plain")}, Metadata: map[string]any{"k": "v"}},
			wantParts: []a2a.Part{
				a2a.URLPart("https://example.com/x", "x", "text/plain"),
				{Kind: a2a.PartData, Data: json.RawMessage(`{"k":"v"}`), Metadata: map[string]any{"mediaType": "application/vnd.novaos.skill-metadata+json"}},
			},
			wantMsg: []a2a.Part{
				a2a.URLPart("https://example.com/x", "x", "text/plain"),
				{Kind: a2a.PartData, Data: json.RawMessage(`{"k":"v"}`), Metadata: map[string]any{"mediaType": "application/vnd.novaos.skill-metadata+json"}},
			},
		},
		{
			name: "error only",
			res:  Result{Status: StatusFailed, Error: "upstream down"},
			wantMsg: []a2a.Part{
				a2a.TextPart("upstream down"),
				{Kind: a2a.PartData, Data: json.RawMessage(`{"skill_error":"upstream down"}`), Metadata: map[string]any{"mediaType": "application/vnd.novaos.metadata+json"}},
			},
		},
		{
			name:      "part pointer output",
			res:       Result{Output: &a2a.Part{Kind: a2a.PartText, Text: "ptr"}},
			wantParts: []a2a.Part{a2a.TextPart("ptr")},
			wantMsg:   []a2a.Part{a2a.TextPart("ptr")},
		},
		{
			name:      "raw JSON output",
			res:       Result{Output: json.RawMessage(`[1,2]`)},
			wantParts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`[1,2]`), MediaType: "application/json"}},
			wantMsg:   []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`[1,2]`), MediaType: "application/json"}},
		},
		{
			name:    "empty string output with legacy working status",
			res:     Result{Output: "", Status: "RUNNING"},
			wantMsg: nil,
		},
		{
			name: "empty result",
			res:  Result{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := oneSkill(func(c *Context) (Result, error) { return tt.res, nil })
			f, err := run(t, a, request("hi"))
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			var artParts []a2a.Part
			for _, c := range f.recorded() {
				if c.Op == "artifact" {
					artParts = c.Art.Parts
					if c.Art.Name != "result" || c.Art.ArtifactID == "" {
						t.Errorf("artifact = %+v, want name result and an id", c.Art)
					}
				}
			}
			if diff := cmp.Diff(tt.wantParts, artParts); diff != "" {
				t.Errorf("artifact parts (-want +got):\n%s", diff)
			}
			final := f.final()
			var msgParts []a2a.Part
			if final.Msg != nil {
				msgParts = final.Msg.Parts
				if final.Msg.Role != a2a.RoleAgent || final.Msg.TaskID != "task-1" || final.Msg.ContextID != "ctx-1" {
					t.Errorf("message envelope = %+v", final.Msg)
				}
			}
			if diff := cmp.Diff(tt.wantMsg, msgParts); diff != "" {
				t.Errorf("status message parts (-want +got):\n%s", diff)
			}
		})
	}
}

type emptyError struct{}

func (emptyError) Error() string { return "" }

func TestHandlerFailures(t *testing.T) {
	var nilMap map[string]int
	tests := []struct {
		name    string
		handler HandlerFunc
		wantMsg string
	}{
		{"error", func(c *Context) (Result, error) {
			return Result{Output: "ignored"}, errors.New("db: connection refused")
		}, "db: connection refused"},
		{"panic string", func(c *Context) (Result, error) { panic("boom") }, "panic: boom"},
		{"panic runtime error", func(c *Context) (Result, error) { nilMap["x"] = 1; return Result{}, nil }, "panic: assignment to entry in nil map"},
		{"panic error value", func(c *Context) (Result, error) { panic(errors.New("bad state")) }, "panic: bad state"},
		{"deadline is a failure", func(c *Context) (Result, error) { return Result{}, context.DeadlineExceeded }, "context deadline exceeded"},
		{"unencodable output", func(c *Context) (Result, error) { return Result{Output: make(chan int)}, nil }, "agent: output chan int"},
		{"invalid raw JSON output", func(c *Context) (Result, error) { return Result{Output: json.RawMessage(`{`)}, nil }, "agent: output is not valid JSON"},
		{"unencodable metadata", func(c *Context) (Result, error) { return Result{Metadata: map[string]any{"f": func() {}}}, nil }, "agent: result metadata"},
		{"error with empty text", func(c *Context) (Result, error) { return Result{}, emptyError{} }, "agent.emptyError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := run(t, oneSkill(tt.handler), request("hi"))
			if err != nil {
				t.Fatalf("Execute returned %v; a skill failure must become a FAILED task", err)
			}
			final := f.final()
			if final.State != a2a.TaskStateFailed {
				t.Fatalf("final state = %v, want FAILED", final.State)
			}
			if got := final.Msg.Parts[0].Text; !strings.HasPrefix(got, tt.wantMsg) {
				t.Errorf("message = %q, want prefix %q", got, tt.wantMsg)
			}
			for _, c := range f.recorded() {
				if c.Op == "artifact" {
					t.Errorf("failure wrote an artifact: %+v", c.Art)
				}
			}
		})
	}
}

func TestRouting(t *testing.T) {
	multi := func() *Agent {
		a := New("multi", "1", nil)
		for _, id := range []string{"alpha", "beta"} {
			a.MustRegister(Skill{ID: id, Handler: func(c *Context) (Result, error) { return Result{Output: "ran " + c.Skill()}, nil }})
		}
		return a
	}
	tests := []struct {
		name      string
		agent     *Agent
		req       func() *a2asrv.RequestContext
		wantState a2a.TaskState
		wantText  string
	}{
		{"sole skill is the default", oneSkill(func(c *Context) (Result, error) { return Result{Output: "ran " + c.Skill()}, nil }),
			func() *a2asrv.RequestContext { return request("x") }, a2a.TaskStateCompleted, "ran s"},
		{"named in message metadata", multi(),
			func() *a2asrv.RequestContext { return withSkill(request("x"), "beta") }, a2a.TaskStateCompleted, "ran beta"},
		{"named in request metadata", multi(),
			func() *a2asrv.RequestContext {
				r := request("x")
				r.Metadata = map[string]any{SkillIDMetadataKey: "alpha"}
				return r
			}, a2a.TaskStateCompleted, "ran alpha"},
		{"message metadata wins", multi(),
			func() *a2asrv.RequestContext {
				r := withSkill(request("x"), "beta")
				r.Metadata = map[string]any{SkillIDMetadataKey: "alpha"}
				return r
			}, a2a.TaskStateCompleted, "ran beta"},
		{"continued task reuses its skill", multi(),
			func() *a2asrv.RequestContext {
				r := request("answer")
				first := a2a.Message{MessageID: "m0", Role: a2a.RoleUser, Metadata: map[string]any{SkillIDMetadataKey: "beta"}}
				r.Task = &a2a.Task{ID: "task-1", History: []a2a.Message{first}}
				return r
			}, a2a.TaskStateCompleted, "ran beta"},
		{"unknown skill is rejected", multi(),
			func() *a2asrv.RequestContext { return withSkill(request("x"), "gamma") }, a2a.TaskStateRejected, `unknown skill "gamma"; this agent's skills are: alpha, beta`},
		{"unknown skill on single-skill agent", oneSkill(func(c *Context) (Result, error) { return Result{}, nil }),
			func() *a2asrv.RequestContext { return withSkill(request("x"), "nope") }, a2a.TaskStateRejected, `unknown skill "nope"`},
		{"several skills and none named", multi(),
			func() *a2asrv.RequestContext { return request("x") }, a2a.TaskStateRejected, "several skills (alpha, beta)"},
		{"skill id not a string", multi(),
			func() *a2asrv.RequestContext {
				r := request("x")
				r.Message.Metadata = map[string]any{SkillIDMetadataKey: 7.0}
				return r
			}, a2a.TaskStateRejected, `metadata "skillId" must be a string`},
		{"no skills", New("empty", "1", nil),
			func() *a2asrv.RequestContext { return request("x") }, a2a.TaskStateRejected, "no skills"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := run(t, tt.agent, tt.req())
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			final := f.final()
			if final.State != tt.wantState {
				t.Errorf("state = %v, want %v", final.State, tt.wantState)
			}
			if !strings.Contains(text(final.Msg), tt.wantText) {
				t.Errorf("message %q does not contain %q", text(final.Msg), tt.wantText)
			}
			if tt.wantState == a2a.TaskStateRejected {
				if diff := cmp.Diff([]string{"status:TASK_STATE_REJECTED"}, f.ops()); diff != "" {
					t.Errorf("a rejected request must not start work (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestContentNegotiation(t *testing.T) {
	newAgent := func() *Agent {
		a := New("modes", "1", nil)
		a.MustRegister(Skill{ID: "img", InputModes: []string{"text/plain", "image/*"}, OutputModes: []string{"image/png", "text/plain"},
			Handler: func(c *Context) (Result, error) { return Result{Output: strings.Join(c.OutputModes(), ",")}, nil }})
		return a
	}
	tests := []struct {
		name     string
		accepted []string
		parts    []a2a.Part
		wantErr  bool
		wantOut  string
	}{
		{name: "nothing said", wantOut: "image/png,text/plain"},
		{name: "exact", accepted: []string{"text/plain"}, wantOut: "text/plain"},
		{name: "wildcard subtype", accepted: []string{"image/*"}, wantOut: "image/png"},
		{name: "any", accepted: []string{"*/*"}, wantOut: "image/png,text/plain"},
		{name: "parameters and case ignored", accepted: []string{"Text/Plain; charset=utf-8"}, wantOut: "text/plain"},
		{name: "no overlap", accepted: []string{"application/json", "audio/mpeg"}, wantErr: true},
		{name: "input image accepted", parts: []a2a.Part{a2a.RawPart([]byte{1}, "a.png", "image/png")}, wantOut: "image/png,text/plain"},
		{name: "input of unstated type accepted", parts: []a2a.Part{a2a.URLPart("https://example.com/f", "", "")}, wantOut: "image/png,text/plain"},
		{name: "input type refused", parts: []a2a.Part{a2a.TextPart("x"), a2a.RawPart([]byte("tck"), "", "application/x-unsupported-tck-type")}, wantErr: true},
		{name: "data part refused by implied type", parts: []a2a.Part{{Kind: a2a.PartData, Data: json.RawMessage(`{}`)}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("x")
			if tt.parts != nil {
				req.Message.Parts = tt.parts
			}
			req.Configuration = &a2a.SendMessageConfiguration{AcceptedOutputModes: tt.accepted}
			f, err := run(t, newAgent(), req)
			if tt.wantErr {
				var e *a2a.Error
				if !errors.As(err, &e) || e.Code != a2a.CodeContentTypeNotSupported {
					t.Fatalf("err = %v, want ContentTypeNotSupported", err)
				}
				if n := len(f.recorded()); n != 0 {
					t.Errorf("%d writes before the error; want none", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if got := text(f.final().Msg); got != tt.wantOut {
				t.Errorf("OutputModes = %q, want %q", got, tt.wantOut)
			}
		})
	}
}

func TestDirectUpdaterCalls(t *testing.T) {
	tests := []struct {
		name      string
		handler   HandlerFunc
		wantOps   []string
		wantState a2a.TaskState
		wantText  string
	}{
		{
			name: "direct reject wins over returned result",
			handler: func(c *Context) (Result, error) {
				u := c.Updater()
				if err := u.Reject(c, u.NewMessage(a2a.TextPart("no way"))); err != nil {
					return Result{}, err
				}
				return Result{Output: "done", Status: StatusCompleted}, nil
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "status:TASK_STATE_REJECTED"},
			wantState: a2a.TaskStateRejected, wantText: "no way",
		},
		{
			name: "direct complete then error keeps completion",
			handler: func(c *Context) (Result, error) {
				if err := c.Updater().Complete(c, nil); err != nil {
					return Result{}, err
				}
				return Result{}, errors.New("late failure")
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "status:TASK_STATE_COMPLETED"},
			wantState: a2a.TaskStateCompleted,
		},
		{
			name: "pause and empty result stays paused",
			handler: func(c *Context) (Result, error) {
				u := c.Updater()
				return Result{}, u.RequiresInput(c, u.NewMessage(a2a.TextPart("which one?")))
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "status:TASK_STATE_INPUT_REQUIRED"},
			wantState: a2a.TaskStateInputRequired, wantText: "which one?",
		},
		{
			name: "auth pause and empty result stays paused",
			handler: func(c *Context) (Result, error) {
				return Result{}, c.Updater().RequiresAuth(c, nil)
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "status:TASK_STATE_AUTH_REQUIRED"},
			wantState: a2a.TaskStateAuthRequired,
		},
		{
			name: "pause then a real result completes",
			handler: func(c *Context) (Result, error) {
				if err := c.Updater().RequiresInput(c, nil); err != nil {
					return Result{}, err
				}
				return Result{Output: "resolved"}, nil
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "status:TASK_STATE_INPUT_REQUIRED", "artifact", "status:TASK_STATE_COMPLETED"},
			wantState: a2a.TaskStateCompleted, wantText: "resolved",
		},
		{
			name: "writes after a terminal call fail",
			handler: func(c *Context) (Result, error) {
				u := c.Updater()
				_ = u.Fail(c, nil)
				if err := u.StartWork(c, nil); !errors.Is(err, ErrTaskClosed) {
					return Result{}, errors.New("StartWork after Fail did not fail")
				}
				if err := u.AddArtifact(c, a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("x")}}); !errors.Is(err, ErrTaskClosed) {
					return Result{}, errors.New("AddArtifact after Fail did not fail")
				}
				return Result{}, nil
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "status:TASK_STATE_FAILED"},
			wantState: a2a.TaskStateFailed,
		},
		{
			name: "artifacts and chunks",
			handler: func(c *Context) (Result, error) {
				u := c.Updater()
				if err := u.AddArtifact(c, a2a.Artifact{Parts: []a2a.Part{a2a.TextPart("whole")}}); err != nil {
					return Result{}, err
				}
				art := a2a.Artifact{ArtifactID: "stream", Parts: []a2a.Part{a2a.TextPart("a")}}
				if err := u.AppendArtifact(c, art, false); err != nil {
					return Result{}, err
				}
				art.Parts = []a2a.Part{a2a.TextPart("b")}
				if err := u.AppendArtifact(c, art, true); err != nil {
					return Result{}, err
				}
				if err := u.AppendArtifact(c, a2a.Artifact{Parts: art.Parts}, true); err == nil {
					return Result{}, errors.New("AppendArtifact without id did not fail")
				}
				return Result{}, nil
			},
			wantOps:   []string{"status:TASK_STATE_WORKING", "artifact", "artifact", "artifact", "status:TASK_STATE_COMPLETED"},
			wantState: a2a.TaskStateCompleted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := run(t, oneSkill(tt.handler), request("x"))
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if diff := cmp.Diff(tt.wantOps, f.ops()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			final := f.final()
			if final.State != tt.wantState || !strings.Contains(text(final.Msg), tt.wantText) {
				t.Errorf("final = %v %q, want %v containing %q", final.State, text(final.Msg), tt.wantState, tt.wantText)
			}
		})
	}
}

func TestChunkFlags(t *testing.T) {
	a := oneSkill(func(c *Context) (Result, error) {
		u := c.Updater()
		for i, w := range []string{"one ", "two ", "three"} {
			if err := u.AppendArtifact(c, a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart(w)}}, i == 2); err != nil {
				return Result{}, err
			}
		}
		return Result{}, nil
	})
	f, err := run(t, a, request("x"))
	if err != nil {
		t.Fatal(err)
	}
	type flags struct{ Append, Last bool }
	var got []flags
	for _, c := range f.recorded() {
		if c.Op == "artifact" {
			got = append(got, flags{c.Append, c.LastChunk})
		}
	}
	want := []flags{{false, false}, {true, false}, {true, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunk flags (-want +got):\n%s", diff)
	}
	if txt := a2a.PartsText(f.Task().Artifacts[0].Parts); txt != "one \ntwo \nthree" {
		t.Errorf("stored artifact text = %q", txt)
	}
}

func TestReply(t *testing.T) {
	a := New("replier", "1", nil)
	a.MustRegister(Skill{ID: "r", MayReply: true, Handler: func(c *Context) (Result, error) {
		u := c.Updater()
		if err := u.Reply(c, u.NewMessage(a2a.TextPart("direct answer"))); err != nil {
			return Result{}, err
		}
		return Result{Output: "not written"}, nil
	}})
	f, err := run(t, a, request("x"))
	if err != nil {
		t.Fatal(err)
	}
	calls := f.recorded()
	if len(calls) != 1 || calls[0].Op != "reply" || text(calls[0].Msg) != "direct answer" {
		t.Fatalf("calls = %+v, want one reply", calls)
	}

	// Without MayReply the task is already WORKING, so a reply is refused
	// and the handler's error fails the task.
	b := New("replier", "1", nil)
	b.MustRegister(Skill{ID: "r", Handler: func(c *Context) (Result, error) {
		return Result{}, c.Updater().Reply(c, c.Updater().NewMessage(a2a.TextPart("x")))
	}})
	f, err = run(t, b, request("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.final().State; got != a2a.TaskStateFailed {
		t.Errorf("reply after WORKING: final = %v, want FAILED", got)
	}
}

func TestCancellation(t *testing.T) {
	t.Run("CancelTask", func(t *testing.T) {
		started := make(chan struct{})
		sawCancel := make(chan bool, 1)
		a := oneSkill(func(c *Context) (Result, error) {
			if c.IsCancelled() {
				t.Error("IsCancelled before cancellation")
			}
			close(started)
			<-c.Done()
			sawCancel <- c.IsCancelled()
			return Result{}, c.Err()
		})
		ctx, cancel := context.WithCancelCause(context.Background())
		f := &fakeUpdater{}
		done := make(chan error, 1)
		go func() { done <- a.Execute(ctx, request("x"), f) }()
		<-started
		cancel(a2asrv.ErrCanceled)
		err := <-done
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Execute = %v, want context.Canceled", err)
		}
		if !<-sawCancel {
			t.Error("IsCancelled = false after CancelTask")
		}
		if diff := cmp.Diff([]string{"status:TASK_STATE_WORKING"}, f.ops()); diff != "" {
			t.Errorf("writes after cancellation (-want +got):\n%s", diff)
		}
	})
	t.Run("superseded is not CancelTask", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(a2asrv.ErrSuperseded)
		var cancelled bool
		a := oneSkill(func(c *Context) (Result, error) {
			cancelled = c.IsCancelled()
			return Result{Output: "late"}, nil
		})
		f := &fakeUpdater{}
		err := a.Execute(ctx, request("x"), f)
		if cancelled {
			t.Error("IsCancelled = true for a superseded execution")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Execute = %v, want the context's error", err)
		}
		if diff := cmp.Diff([]string{"status:TASK_STATE_WORKING"}, f.ops()); diff != "" {
			t.Errorf("an interrupted execution wrote its result (-want +got):\n%s", diff)
		}
	})
	t.Run("own cancellation is returned unchanged", func(t *testing.T) {
		own := context.Canceled
		a := oneSkill(func(c *Context) (Result, error) {
			sub, stop := context.WithCancel(c)
			stop()
			<-sub.Done()
			return Result{}, sub.Err()
		})
		f, err := run(t, a, request("x"))
		if err != own {
			t.Errorf("Execute = %v, want context.Canceled unchanged", err)
		}
		if diff := cmp.Diff([]string{"status:TASK_STATE_WORKING"}, f.ops()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
	t.Run("wrapped own cancellation", func(t *testing.T) {
		wrapped := errors.Join(errors.New("fetch"), context.Canceled)
		a := oneSkill(func(c *Context) (Result, error) { return Result{}, wrapped })
		_, err := run(t, a, request("x"))
		if err != wrapped {
			t.Errorf("Execute = %v, want the skill's error unchanged", err)
		}
	})
}

func TestUpdaterErrorsPropagate(t *testing.T) {
	a := oneSkill(func(c *Context) (Result, error) { t.Error("handler ran although WORKING failed"); return Result{}, nil })
	f := &fakeUpdater{fail: errors.New("store down")}
	err := a.Execute(context.Background(), request("x"), f)
	if err == nil || !strings.Contains(err.Error(), "store down") {
		t.Errorf("Execute = %v, want the store error", err)
	}
}

func TestRegister(t *testing.T) {
	a := New("r", "1", nil)
	h := func(c *Context) (Result, error) { return Result{}, nil }
	if err := a.Register(Skill{Name: "Greet", Handler: h}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		skill Skill
		want  error
	}{
		{"duplicate id", Skill{ID: "Greet", Handler: h}, ErrDuplicateSkill},
		{"no id or name", Skill{Handler: h}, ErrInvalidSkill},
		{"no handler", Skill{ID: "x"}, ErrInvalidSkill},
	}
	for _, tt := range tests {
		if err := a.Register(tt.skill); !errors.Is(err, tt.want) {
			t.Errorf("%s: Register = %v, want %v", tt.name, err, tt.want)
		}
	}
	if got := a.Card().Skills; len(got) != 1 || got[0].ID != "Greet" || got[0].Name != "Greet" {
		t.Errorf("skills = %+v, want one with id and name Greet", got)
	}
}

func TestCard(t *testing.T) {
	ext := a2a.AgentExtension{URI: "https://example.com/ext/cost/v1", Description: "cost"}
	a := New("carded", "2.1.0", &Options{
		Description:       "does things",
		Provider:          &a2a.AgentProvider{Organization: "Example", URL: "https://example.com"},
		DocumentationURL:  "https://example.com/docs",
		Extensions:        []a2a.AgentExtension{ext},
		PushNotifications: true,
	})
	h := func(c *Context) (Result, error) { return Result{}, nil }
	a.MustRegister(Skill{ID: "b", Name: "Bee", Description: "second", Tags: []string{"t"}, Examples: []string{"e"}, OutputModes: []string{"image/png"}, Handler: h})
	a.MustRegister(Skill{ID: "a", Handler: h})
	doc := "https://example.com/docs"
	want := &a2a.AgentCard{
		Name: "carded", Description: "does things", Version: "2.1.0",
		SupportedInterfaces: []a2a.AgentInterface{},
		Provider:            &a2a.AgentProvider{Organization: "Example", URL: "https://example.com"},
		DocumentationURL:    &doc,
		Capabilities: a2a.AgentCapabilities{
			Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(true),
			Extensions: []a2a.AgentExtension{ext},
		},
		DefaultInputModes:  DefaultInputModes,
		DefaultOutputModes: DefaultOutputModes,
		Skills: []a2a.AgentSkill{
			{ID: "b", Name: "Bee", Description: "second", Tags: []string{"t"}, Examples: []string{"e"}, OutputModes: []string{"image/png"}},
			{ID: "a", Name: "a", Tags: []string{}},
		},
	}
	got := a.Card()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("card (-want +got):\n%s", diff)
	}
	// Every advertised skill id routes.
	for _, s := range got.Skills {
		f, err := run(t, a, withSkill(request("x"), s.ID))
		if err != nil || f.final().State != a2a.TaskStateCompleted {
			t.Errorf("card skill %q does not route: %v %v", s.ID, err, f.final().State)
		}
	}
	got.Skills[0].Tags[0] = "changed"
	if a.Card().Skills[0].Tags[0] != "t" {
		t.Error("changing a returned card changed the agent")
	}
	b := New("plain", "1", &Options{DisableStreaming: true})
	if c := b.Card(); *c.Capabilities.Streaming || *c.Capabilities.PushNotifications || c.Skills == nil {
		t.Errorf("capabilities = %+v, skills %v", c.Capabilities, c.Skills)
	}
}

func TestMaskOutputPII(t *testing.T) {
	for _, mask := range []bool{false, true} {
		a := New("pii", "1", &Options{MaskOutputPII: mask})
		a.MustRegister(Skill{ID: "s", Handler: func(c *Context) (Result, error) {
			u := c.Updater()
			if err := u.AddArtifact(c, a2a.Artifact{Name: "for jane@example.com", Parts: []a2a.Part{a2a.TextPart("call 555-123-4567")}}); err != nil {
				return Result{}, err
			}
			return Result{
				Output:   "mail jane@example.com",
				Metadata: map[string]any{"ssn": "123-45-6789", "note": "card 4111 1111 1111 1111"},
			}, nil
		}})
		f, err := run(t, a, request("x"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(f.Task())
		if err != nil {
			t.Fatal(err)
		}
		raw2, _ := json.Marshal(f.final().Msg)
		all := string(raw) + string(raw2)
		leaked := strings.Contains(all, "jane@example.com") || strings.Contains(all, "555-123-4567") ||
			strings.Contains(all, "123-45-6789") || strings.Contains(all, "4111")
		if mask && leaked {
			t.Errorf("MaskOutputPII: PII leaked: %s", all)
		}
		if !mask && !leaked {
			t.Errorf("masking applied although MaskOutputPII is off: %s", all)
		}
		if mask && !strings.Contains(all, "[EMAIL]") {
			t.Errorf("MaskOutputPII: no mask placeholder in %s", all)
		}
	}
}
