package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gateway"
)

// EventAgentMessage is the run event that shows a message the agent
// sent in the run's thread: {"message_id", "thread_id", "kind",
// "content"}.
const EventAgentMessage = "agent.message"

var (
	clientMsgID = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._:-]{0,127}$`)
	plainID     = clientMsgID
	// messageRef is a message an agent's message answers: a stored
	// message's id, or the id of the message that triggered a run's turn
	// (run id "/" turn, as tokens and events name it).
	messageRef = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z._:-]{0,127}(/[0-9]{1,9})?$`)
)

// checkMessage refuses a message whose fields break their rules.
func (s *Service) checkMessage(m delivery.MessageCreate) error {
	var errs []delivery.FieldError
	bad := func(ptr, detail string) {
		errs = append(errs, delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: ptr, Detail: detail})
	}
	if !clientMsgID.MatchString(m.ClientMsgID) {
		bad("/client_msg_id", "required: an id of letters, digits, . _ : - (a UUIDv7)")
	}
	if !plainID.MatchString(m.ThreadID) {
		bad("/thread_id", "required: the thread's id")
	}
	if m.RunID != "" && !plainID.MatchString(m.RunID) {
		bad("/run_id", "a run id")
	}
	if m.ReplyToMessageID != "" && !messageRef.MatchString(m.ReplyToMessageID) {
		bad("/reply_to_message_id", "a message id")
	}
	if !utf8.ValidString(m.ContentMD) || utf8.RuneCountInString(m.ContentMD) > s.o.MaxMessageChars {
		bad("/content_md", "at most "+strconv.Itoa(s.o.MaxMessageChars)+" characters of UTF-8")
	}
	switch m.Kind {
	case "", delivery.MessageText:
		if m.ContentMD == "" {
			bad("/content_md", "a text message has content")
		}
		if len(m.Components) > 0 {
			bad("/components", "components come with a card (kind card)")
		}
	case delivery.MessageCard:
		if len(m.Components) == 0 && m.ContentMD == "" {
			bad("/components", "a card has content or components")
		}
	default:
		bad("/kind", "kind is text or card")
	}
	if len(m.Components) > s.o.MaxComponents {
		bad("/components", "at most "+strconv.Itoa(s.o.MaxComponents)+" components")
	}
	if errs != nil {
		return validationFailed("the message breaks "+strconv.Itoa(len(errs))+" rule(s)", errs...)
	}
	return nil
}

// CreateMessage stores a message the agent sends to a thread, once per
// client_msg_id: a repeat answers the stored message (created false).
// A message of a run (run_id) must be in the run's thread, with the
// run's token when the request carries one, and is shown on the run's
// event stream while the run has not ended.
func (s *Service) CreateMessage(ctx context.Context, a Agent, tok string, m delivery.MessageCreate) (delivery.Message, bool, error) {
	if err := s.checkMessage(m); err != nil {
		return delivery.Message{}, false, err
	}
	var run gateway.Run
	if m.RunID != "" {
		var err error
		if tok != "" {
			run, _, err = s.runFor(ctx, a, m.RunID, tok)
		} else {
			run, err = s.agentRun(ctx, a, m.RunID)
		}
		if err != nil {
			return delivery.Message{}, false, err
		}
		if threadOf(&run) != m.ThreadID {
			return delivery.Message{}, false, validationFailed("the message is not in its run's thread",
				delivery.FieldError{Code: delivery.CodeInvalidValue, Pointer: "/thread_id"})
		}
	}
	kind := m.Kind
	if kind == "" {
		kind = delivery.MessageText
	}
	var components json.RawMessage
	if len(m.Components) > 0 {
		components, _ = json.Marshal(m.Components)
	}
	stored, created, err := s.store.CreateMessage(ctx, delivery.StoredMessage{ID: a2a.NewID(), TenantID: a.TenantID, AgentID: a.ID,
		ThreadID: m.ThreadID, RunID: m.RunID, ClientMsgID: m.ClientMsgID, ReplyTo: m.ReplyToMessageID, Kind: kind,
		ContentMD: m.ContentMD, Components: components, CreatedAt: s.o.Now()})
	if err != nil {
		return delivery.Message{}, false, err
	}
	if created && m.RunID != "" && !run.Status.Terminal() {
		payload, _ := json.Marshal(map[string]string{"message_id": stored.ID, "thread_id": stored.ThreadID, "kind": kind, "content": stored.ContentMD})
		written, err := s.writeRun(ctx, run, func(r *gateway.Run, now time.Time) ([]gateway.Event, error) {
			if r.Status.Terminal() {
				return nil, errRunMovedOn
			}
			s.alive(r, now) // a message in the run is a sign of life of it
			return []gateway.Event{{Type: EventAgentMessage, Payload: payload}}, nil
		})
		if err == nil {
			s.noted(written)
		}
		if err != nil && !errors.Is(err, errRunMovedOn) {
			// The message is stored; its showing on the run is not worth
			// failing (and a repeat would not show it either).
			s.log.WarnContext(ctx, "delivery: a message could not be shown on its run", "run_id", m.RunID, "message_id", stored.ID, "err", err)
		}
	}
	return delivery.Message{ID: stored.ID, ThreadID: stored.ThreadID, RunID: stored.RunID, ClientMsgID: stored.ClientMsgID,
		CreatedAt: stored.CreatedAt}, created, nil
}
