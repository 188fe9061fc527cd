package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/auth"
	mem "novaos.dev/novaos/memory"
)

// maxRecordedBytes bounds the copies of a request and of a SendMessage
// answer kept to read the turn from; a larger one is passed through
// unrecorded (a turn of conversation is far smaller).
const maxRecordedBytes = 1 << 20

// turnRecorder writes the turns of hosted agents' conversations to the
// memory store's live messages, which novaos.memory.assemble returns: the
// text of each message a caller sends with SendMessage or
// SendStreamingMessage and, for SendMessage, the text of the agent's
// answer (its message, or its task's status message and artifacts).
//
// Only calls carrying a valid execution token are recorded, under its
// tenant and its conversation (the message's context id when the token
// names none): without a token there is no tenant to scope them to.
// Streamed answers are not recorded. Recording never fails a call: an
// error is logged.
type turnRecorder struct {
	store  mem.Store
	issuer *auth.Issuer
	log    *slog.Logger
	now    func() time.Time
}

func (t *turnRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Authorization") == "" {
			next.ServeHTTP(w, r)
			return
		}
		claims, err := t.issuer.VerifyRequest(r)
		if err != nil {
			next.ServeHTTP(w, r) // the agent answers for its own auth
			return
		}
		// The agent reads the body after this copy of its start, which
		// passes it on whole, however long.
		head, err := io.ReadAll(io.LimitReader(r.Body, maxRecordedBytes+1))
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		if err != nil || len(head) > maxRecordedBytes {
			next.ServeHTTP(w, r)
			return
		}
		var call struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		var req a2a.SendMessageRequest
		if json.Unmarshal(head, &call) != nil || (call.Method != a2a.MethodSendMessage && call.Method != a2a.MethodSendStreamingMessage) ||
			a2a.Unmarshal(call.Params, &req) != nil || req.Message == nil {
			next.ServeHTTP(w, r)
			return
		}
		conv := claims.ConversationID
		if conv == "" {
			conv = req.Message.ContextID
		}
		tenant, userMsg := claims.TenantID, req.Message
		if call.Method == a2a.MethodSendStreamingMessage {
			t.record(r.Context(), tenant, conv, userMsg, "user")
			next.ServeHTTP(w, r)
			return
		}
		rec := &replyCopy{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		reply := rec.reply()
		if conv == "" && reply != nil {
			conv = reply.ContextID // a new conversation: the agent named it
		}
		t.record(r.Context(), tenant, conv, userMsg, "user")
		if reply != nil {
			t.record(r.Context(), tenant, conv, reply, "assistant")
		}
	})
}

// record records m's text, if it has any, as a live message of conv.
func (t *turnRecorder) record(ctx context.Context, tenant, conv string, m *a2a.Message, role string) {
	text := messageText(m)
	if conv == "" || text == "" {
		return
	}
	// The caller's cancellation must not lose a turn the agent answered.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := t.store.AppendMessage(ctx, tenant, conv, mem.LiveMessage{MessageID: m.MessageID, Role: role, Content: text,
		Timestamp: t.now()}); err != nil {
		t.log.WarnContext(ctx, "app: recording a conversation turn failed", "err", err)
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

// replyCopy passes a SendMessage answer through and keeps a copy of its
// first maxRecordedBytes.
type replyCopy struct {
	http.ResponseWriter
	buf      bytes.Buffer
	overflow bool
}

func (c *replyCopy) Write(p []byte) (int, error) {
	if !c.overflow {
		if c.buf.Len()+len(p) > maxRecordedBytes {
			c.overflow = true
			c.buf = bytes.Buffer{}
		} else {
			c.buf.Write(p)
		}
	}
	return c.ResponseWriter.Write(p)
}

func (c *replyCopy) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// reply is the agent's answer in the copied JSON-RPC response, as one
// message: the message itself, or the task's status message with the
// text of its artifacts appended.
func (c *replyCopy) reply() *a2a.Message {
	if c.overflow || c.buf.Len() == 0 {
		return nil
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	var res a2a.SendMessageResponse
	if json.Unmarshal(c.buf.Bytes(), &resp) != nil || len(resp.Result) == 0 || a2a.Unmarshal(resp.Result, &res) != nil {
		return nil
	}
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
