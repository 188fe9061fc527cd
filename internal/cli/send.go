package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/hitl"
)

func runSend(ctx context.Context, args []string, e *env) int {
	fs := newFlags("send", `send <url-or-agent-name> "text" [flags]`, e)
	stream := fs.Bool("stream", false, "stream the agent's updates (SendStreamingMessage) and print each frame as it arrives")
	taskID := fs.String("task", "", "continue the task with this `id` (e.g. one waiting in INPUT_REQUIRED)")
	contextID := fs.String("context", "", "send within this context `id`")
	server := serverFlag(fs)
	asJSON := fs.Bool("json", false, "print each frame (or the result) as one line of raw JSON")
	timeout := fs.Duration("timeout", a2aclient.DefaultTimeout, "bound a non-streaming call (streams run until the task stops or Ctrl-C)")
	// Flags may follow the arguments: novaos send echo "hi" --stream.
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(fs, "want an agent URL or name and the message text, got %d arguments", len(pos))
	}
	target, err := agentEndpoint(ctx, pos[0], *server)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	c, err := a2aclient.NewFromURL(ctx, target, &a2aclient.Options{Timeout: *timeout})
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
		return exitFail
	}
	req := a2aclient.TextRequest(pos[1], *taskID, *contextID)
	p := &printer{w: e.stdout, json: *asJSON}
	if !*stream {
		res, err := c.SendMessage(ctx, req)
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
			return exitFail
		}
		p.frame(&a2a.StreamResponse{Task: res.Task, Message: res.Message})
		return exitOK
	}
	for f, err := range c.SendStreamingMessage(ctx, req) {
		if err != nil {
			fmt.Fprintf(e.stderr, "novaos send: %v\n", err)
			return exitFail
		}
		p.frame(f)
	}
	return exitOK
}

// printer writes frames, one line each.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) frame(f *a2a.StreamResponse) {
	if p.json {
		b, err := a2a.AppendStreamResponse(nil, f)
		if err != nil {
			b, _ = json.Marshal(f)
		}
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintln(p.w, describe(f))
}

// describe renders a frame as one human-readable line.
func describe(f *a2a.StreamResponse) string {
	var b strings.Builder
	switch {
	case f.Task != nil:
		t := f.Task
		fmt.Fprintf(&b, "task %s %s (context %s)", t.ID, stateName(t.Status.State), t.ContextID)
		for _, a := range t.Artifacts {
			fmt.Fprintf(&b, " | artifact %s: %s", a.ArtifactID, oneLine(a2a.PartsText(a.Parts)))
		}
		if t.Status.Message != nil {
			fmt.Fprintf(&b, " | %s", oneLine(t.Status.Message.Text()))
		}
	case f.Message != nil:
		fmt.Fprintf(&b, "message from %s: %s", roleName(f.Message.Role), oneLine(f.Message.Text()))
	case f.StatusUpdate != nil:
		s := f.StatusUpdate
		fmt.Fprintf(&b, "status %s %s", s.TaskID, stateName(s.Status.State))
		if s.Status.Message != nil {
			fmt.Fprintf(&b, ": %s", oneLine(s.Status.Message.Text()))
		}
	case f.ArtifactUpdate != nil:
		u := f.ArtifactUpdate
		fmt.Fprintf(&b, "artifact %s %s", u.TaskID, u.Artifact.ArtifactID)
		if u.Append {
			b.WriteString(" +append")
		}
		if u.LastChunk {
			b.WriteString(" (last)")
		}
		fmt.Fprintf(&b, ": %s", oneLine(a2a.PartsText(u.Artifact.Parts)))
	}
	b.WriteString(conventions(hitl.FromFrame(f)))
	return b.String()
}

// conventions summarises the NovaOS message conventions a frame carries
// (a2a/hitl), so a pause says what it waits for.
func conventions(f hitl.Found) string {
	var b strings.Builder
	if h := f.HITL; h != nil {
		fmt.Fprintf(&b, " [%s", h.Type)
		for i, a := range h.Actions {
			sep := "|"
			if i == 0 {
				sep = ": "
			}
			fmt.Fprintf(&b, "%s%s", sep, a.ID)
		}
		b.WriteString("]")
	}
	if p := f.Progress; p != nil {
		fmt.Fprintf(&b, " [progress %s", p.Status)
		if p.Progress.Percent != nil {
			fmt.Fprintf(&b, " %g%%", *p.Progress.Percent)
		}
		b.WriteString("]")
	}
	if e := f.Error; e != nil {
		fmt.Fprintf(&b, " [error %s: %s]", e.Type, oneLine(e.Message))
	}
	if o := f.OAuthRequired; o != nil {
		fmt.Fprintf(&b, " [authorize %s at %s]", o.Connector, o.AuthURL)
	}
	if w := f.WriteConfirmation; w != nil {
		fmt.Fprintf(&b, " [confirm %s (call %s)]", w.ToolName, w.CallID)
	}
	return b.String()
}

func stateName(s a2a.TaskState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATE_"))
}

func roleName(r a2a.Role) string {
	return strings.ToLower(strings.TrimPrefix(r.String(), "ROLE_"))
}

// oneLine keeps a frame on one line.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`).Replace(s)
}
