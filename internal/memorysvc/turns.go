package memorysvc

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/memory"
)

// maxRecordedBytes bounds the text of one recorded turn; a longer message
// or answer is not recorded (a turn of conversation is far smaller).
const maxRecordedBytes = 1 << 20

// turnRecorder writes the turns of hosted agents' conversations to the
// memory store's live messages, which novaos.memory.assemble returns. It
// is an a2asrv.Interceptor, so it sees every binding (JSON-RPC, A2A 0.3,
// HTTP+JSON, gRPC) and the request and answer as the agent read and wrote
// them: the text of the message a caller sends with SendMessage or
// SendStreamingMessage and, for SendMessage, the text of the agent's
// answer (its message, or its task's status message and artifacts).
//
// A turn is recorded only when all of these hold:
//   - the call carries an execution token the host verified (its
//     a2asrv.Options.Identify left an identity.Verified as the call's
//     Identity: the token is checked once, for the agent and every
//     interceptor);
//   - the token names a conversation (conversation_id): turns go into that
//     conversation, under the token's tenant, whatever contextId the
//     message names, so no caller writes into a conversation its token
//     does not name (and a token naming none records nothing, as it could
//     not read the turns back);
//   - the token grants a memory write scope (memory:write:run, task,
//     agent, user or tenant);
//   - the agent accepted the call: a SendMessage answered without an
//     error and with a task that is not rejected, or a stream that sent at
//     least one frame.
//
// Streamed answers are not recorded. Recording never fails a call: an
// error is logged.
type turnRecorder struct {
	store memory.Store
	log   *slog.Logger
	now   func() time.Time
}

var _ a2asrv.Interceptor = (*turnRecorder)(nil)

// turnKey keys the pending turn in a call's context.
type turnKey struct{}

// pendingTurn is a message Before found worth recording, waiting for the
// agent's answer.
type pendingTurn struct {
	tenant, conv string
	msg          *a2a.Message
}

// Before notes the message to record once the agent has answered. It
// never refuses a call.
func (t *turnRecorder) Before(ctx context.Context, call *a2asrv.Call, req any) (context.Context, error) {
	if call.Method != a2a.MethodSendMessage && call.Method != a2a.MethodSendStreamingMessage {
		return ctx, nil
	}
	send, ok := req.(*a2a.SendMessageRequest)
	if !ok || send.Message == nil {
		return ctx, nil
	}
	v, ok := call.Identity.(identity.Verified)
	if !ok || v.Claims == nil {
		return ctx, nil
	}
	claims := v.Claims
	if claims.ConversationID == "" || !mayRecord(claims) {
		return ctx, nil
	}
	return context.WithValue(ctx, turnKey{}, &pendingTurn{tenant: claims.TenantID, conv: claims.ConversationID, msg: send.Message}), nil
}

// mayRecord reports whether c grants a memory write scope.
func mayRecord(c *identity.Claims) bool { return grantsMemoryWrite(c.HasScope) }

// After records the turn Before noted if the agent accepted the call.
func (t *turnRecorder) After(ctx context.Context, call *a2asrv.Call, resp any, err error) {
	p, _ := ctx.Value(turnKey{}).(*pendingTurn)
	if p == nil {
		return
	}
	switch r := resp.(type) {
	case *a2asrv.StreamResult:
		// A stream that sent a frame was accepted, even if it broke off
		// later (the caller went away); one that sent none was refused.
		if r != nil && r.Frames > 0 {
			t.record(ctx, p, p.msg, "user")
		}
	case *a2a.SendMessageResponse:
		if err != nil || r == nil || (r.Task != nil && r.Task.Status.State == a2a.TaskStateRejected) {
			return
		}
		t.record(ctx, p, p.msg, "user")
		if reply := replyOf(r); reply != nil {
			t.record(ctx, p, reply, "assistant")
		}
	}
}

// record records m's text, if it has any, as a live message of p's
// conversation.
func (t *turnRecorder) record(ctx context.Context, p *pendingTurn, m *a2a.Message, role string) {
	text := messageText(m)
	if text == "" || len(text) > maxRecordedBytes {
		return
	}
	// The caller's cancellation must not lose a turn the agent answered.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := t.store.AppendMessage(ctx, p.tenant, p.conv, memory.LiveMessage{MessageID: m.MessageID, Role: role, Content: text,
		Timestamp: t.now()}); err != nil {
		t.log.WarnContext(ctx, "memory: recording a conversation turn failed", "err", err)
	}
}

// messageText joins m's text parts; data and file parts are not
// conversation text.
func messageText(m *a2a.Message) string {
	var parts []string
	for _, p := range m.Parts {
		if p.Kind == a2a.PartText && strings.TrimSpace(p.Text) != "" {
			parts = append(parts, p.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// replyOf is the agent's answer as one message: the message itself, or
// the task's status message with the text of its artifacts appended.
func replyOf(res *a2a.SendMessageResponse) *a2a.Message {
	if res.Message != nil {
		return res.Message
	}
	task := res.Task
	if task == nil {
		return nil
	}
	out := &a2a.Message{MessageID: "task-" + task.ID, Role: a2a.RoleAgent, ContextID: task.ContextID, TaskID: task.ID}
	if m := task.Status.Message; m != nil {
		out.MessageID = m.MessageID
		out.Parts = append(out.Parts, m.Parts...)
	}
	for _, a := range task.Artifacts {
		out.Parts = append(out.Parts, a.Parts...)
	}
	return out
}
