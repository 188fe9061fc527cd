package delivery

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// contextItem is a message of a run context before it is numbered.
type contextItem struct {
	at  time.Time
	msg delivery.ContextMessage
}

// RunContext is what the run works from: its input as the trigger (with
// its attachments: the text of text files, the others listed), and the
// thread before and around it — the inputs of the same caller's earlier
// runs in the thread (authorized), their answers (self when they were
// this agent's, else unverified), a person's follow-up of the current
// turn (authorized), and the messages agents sent to the thread (self
// when this agent's). ThreadSeq numbers the messages of this window in
// time order; at most Options.ContextMessages besides the trigger are
// kept, the newest, and TruncatedBeforeSeq says where the rest was cut.
func (s *Service) RunContext(ctx context.Context, a Agent, runID, tok string) (delivery.RunContext, error) {
	run, _, err := s.runFor(ctx, a, runID, tok)
	if err != nil {
		return delivery.RunContext{}, err
	}
	if err := active(run); err != nil {
		return delivery.RunContext{}, err
	}
	limit := s.o.ContextMessages
	thread := threadOf(&run)
	person := personOf(run.Caller)
	self := delivery.Author{DisplayName: a.Instance.Name, Handle: a.ID, Kind: "agent"}
	trigger := contextItem{at: run.CreatedAt, msg: delivery.ContextMessage{ID: messageID(run.ID, 1), Author: person, Role: "user",
		Trust: delivery.TrustTrigger, CreatedAt: run.CreatedAt, ContentMD: run.Input, Attachments: s.attachments(run)}}
	var items []contextItem
	truncated := false
	if run.ThreadID != "" {
		earlier, err := s.runs.ListRuns(ctx, gateway.RunFilter{TenantID: run.TenantID, ThreadID: run.ThreadID, UserID: run.Caller.UserID,
			AfterCreated: run.CreatedAt, AfterID: run.ID, Limit: limit + 1})
		if err != nil {
			return delivery.RunContext{}, err
		}
		truncated = len(earlier) > limit
		for _, r := range earlier {
			if r.Caller != run.Caller {
				continue
			}
			mine := r.InstanceID == a.ID
			items = append(items, contextItem{at: r.CreatedAt, msg: delivery.ContextMessage{ID: messageID(r.ID, 1), Author: person,
				Role: "user", Trust: delivery.TrustAuthorized, CreatedAt: r.CreatedAt, ContentMD: r.Input,
				AlreadyDelivered: mine && starts(&r) > 0}})
			if r.Output == "" {
				continue
			}
			answer := delivery.ContextMessage{ID: r.ID + "/output", Role: "agent", Trust: delivery.TrustUnverified,
				Author: delivery.Author{DisplayName: r.InstanceID, Kind: "agent"}, CreatedAt: cmp.Or(r.EndedAt, r.UpdatedAt), ContentMD: r.Output}
			if mine {
				answer.Trust, answer.Author = delivery.TrustSelf, self
			}
			items = append(items, contextItem{at: answer.CreatedAt, msg: answer})
		}
	}
	if run.Turn > 1 && len(run.PendingInput) > 0 {
		var pi struct {
			Message *struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"message"`
		}
		if json.Unmarshal(run.PendingInput, &pi) == nil && pi.Message != nil {
			var texts []string
			for _, p := range pi.Message.Parts {
				if p.Text != "" {
					texts = append(texts, p.Text)
				}
			}
			items = append(items, contextItem{at: run.UpdatedAt, msg: delivery.ContextMessage{ID: messageID(run.ID, run.Turn), Author: person,
				Role: "user", Trust: delivery.TrustAuthorized, CreatedAt: run.UpdatedAt, ContentMD: strings.Join(texts, "\n")}})
		}
	}
	sent, err := s.store.ThreadMessages(ctx, run.TenantID, thread, limit+1)
	if err != nil {
		return delivery.RunContext{}, err
	}
	truncated = truncated || len(sent) > limit
	for _, m := range sent {
		msg := delivery.ContextMessage{ID: m.ID, Role: "agent", Trust: delivery.TrustUnverified,
			Author: delivery.Author{DisplayName: m.AgentID, Kind: "agent"}, CreatedAt: m.CreatedAt, ContentMD: m.ContentMD}
		if m.AgentID == a.ID {
			msg.Trust, msg.Author = delivery.TrustSelf, self
		}
		items = append(items, contextItem{at: m.CreatedAt, msg: msg})
	}
	all := append(items, trigger)
	slices.SortStableFunc(all, func(x, y contextItem) int { return x.at.Compare(y.at) })
	out := delivery.RunContext{RunID: run.ID, ThreadID: thread}
	var rest []delivery.ContextMessage
	for i := range all {
		all[i].msg.ThreadSeq = int64(i + 1)
		if all[i].msg.Trust == delivery.TrustTrigger && all[i].msg.ID == trigger.msg.ID {
			m := all[i].msg
			out.Trigger = &m
			continue
		}
		rest = append(rest, all[i].msg)
	}
	if len(rest) > limit {
		rest, truncated = rest[len(rest)-limit:], true
	}
	if truncated && len(rest) > 0 {
		out.TruncatedBeforeSeq = rest[0].ThreadSeq
	}
	out.ThreadContext = rest
	return out, nil
}

// personOf is the author of a run's input.
func personOf(c gateway.Caller) delivery.Author {
	name := cmp.Or(c.UserID, c.Subject, "unknown")
	if c.Service {
		return delivery.Author{DisplayName: name, Kind: "system"}
	}
	return delivery.Author{DisplayName: name, Handle: c.UserID, Kind: "person"}
}

// attachments lists a run's files: the text of a text file that came
// with its bytes (at most Options.AttachmentText of it), the others by
// name, type and size.
func (s *Service) attachments(run gateway.Run) []delivery.ContextAttachment {
	var out []delivery.ContextAttachment
	for i, at := range run.Attachments {
		ca := delivery.ContextAttachment{FileID: run.ID + "/files/" + strconv.Itoa(i+1), Name: at.Name, MIMEType: at.Type, Size: int64(len(at.Data))}
		if ca.Name == "" {
			ca.Name = "attachment-" + strconv.Itoa(i+1)
		}
		if isText(at.Type) && utf8.Valid(at.Data) {
			text := at.Data
			if len(text) > s.o.AttachmentText {
				text = text[:s.o.AttachmentText]
				for len(text) > 0 && !utf8.Valid(text) {
					text = text[:len(text)-1]
				}
			}
			ca.Text = string(text)
		}
		out = append(out, ca)
	}
	return out
}

func isText(mime string) bool {
	mime = strings.ToLower(strings.TrimSpace(strings.SplitN(mime, ";", 2)[0]))
	return strings.HasPrefix(mime, "text/") || mime == "application/json" || mime == "application/xml" || strings.HasSuffix(mime, "+json")
}
