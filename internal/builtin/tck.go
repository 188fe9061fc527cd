package builtin

import (
	"encoding/json"
	"strings"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/agent"
)

// DefaultStreamingTimeout is the TCK's own default TCK_STREAMING_TIMEOUT.
const DefaultStreamingTimeout = 2 * time.Second

// TCKOptions tune the TCK agent; nil means defaults.
type TCKOptions struct {
	// StreamingTimeout must match the kit's TCK_STREAMING_TIMEOUT: the
	// delayed and resubscribe scenarios wait a multiple of it.
	StreamingTimeout time.Duration
}

// TCK returns the conformance-kit agent with default options.
func TCK() *agent.Agent { return NewTCK(nil) }

// NewTCK returns the agent the A2A TCK drives. Its one skill reacts to the
// prefix of the message id, as the kit's scenarios/*.feature define:
//
//	tck-complete-task            complete with the message "Hello from TCK"
//	tck-delayed-complete         working, wait 1x timeout, complete
//	tck-artifact-text/-file/-file-url/-data  add that artifact, complete
//	tck-message-response         answer with a message, no task
//	tck-input-required           pause in INPUT_REQUIRED
//	tck-reject-task              reject with the message "rejected"
//	tck-stream-001/-003, tck-stream-ordering-001, tck-stream-artifact-text/-file
//	                             working, one artifact, complete
//	tck-stream-002               complete
//	tck-stream-artifact-chunked  working, two chunks (append, lastChunk), complete
//	test-resubscribe-message-id  working, wait 2x timeout, complete
//
// Any other message completes with a message naming its id.
func NewTCK(opts *TCKOptions) *agent.Agent {
	timeout := DefaultStreamingTimeout
	if opts != nil && opts.StreamingTimeout > 0 {
		timeout = opts.StreamingTimeout
	}
	a := agent.New("tck", Version, &agent.Options{
		Description: "System under test for the A2A Technology Compatibility Kit: behaves as the kit's scenarios define for each messageId prefix.",
	})
	t := &tck{timeout: timeout}
	a.MustRegister(agent.Skill{
		ID:          "tck",
		Name:        "TCK conformance",
		Description: "Handles A2A TCK conformance test messages.",
		Tags:        []string{"tck", "conformance"},
		MayReply:    true,
		Handler:     t.handle,
	})
	return a
}

type tck struct {
	timeout time.Duration
}

type scenario struct {
	prefix string
	run    func(t *tck, c *agent.Context, u *agent.Updater) error
}

// scenarios are matched in order, so a prefix that extends another
// (tck-artifact-file-url, tck-artifact-file) comes first.
var scenarios = []scenario{
	{"tck-complete-task", func(t *tck, c *agent.Context, u *agent.Updater) error {
		return u.Complete(c, u.NewMessage(a2a.TextPart("Hello from TCK")))
	}},
	{"tck-delayed-complete", func(t *tck, c *agent.Context, u *agent.Updater) error {
		if err := u.StartWork(c, nil); err != nil {
			return err
		}
		if err := sleep(c, t.timeout); err != nil {
			return err
		}
		return u.Complete(c, u.NewMessage(a2a.TextPart("Done after delay")))
	}},
	{"tck-artifact-text", artifactThenComplete(false, a2a.TextPart("Generated text content"))},
	{"tck-artifact-file-url", artifactThenComplete(false, a2a.URLPart("https://example.com/output.txt", "output.txt", "text/plain"))},
	{"tck-artifact-file", artifactThenComplete(false, a2a.RawPart([]byte("tck file content"), "output.txt", "text/plain"))},
	{"tck-artifact-data", artifactThenComplete(false, a2a.Part{Kind: a2a.PartData, Data: json.RawMessage(`{"key":"value","count":42}`), MediaType: "application/json"})},
	{"tck-message-response", func(t *tck, c *agent.Context, u *agent.Updater) error {
		return u.Reply(c, u.NewMessage(a2a.TextPart("Direct message response")))
	}},
	{"tck-input-required", func(t *tck, c *agent.Context, u *agent.Updater) error {
		return u.RequiresInput(c, u.NewMessage(a2a.TextPart("Input required")))
	}},
	{"tck-reject-task", func(t *tck, c *agent.Context, u *agent.Updater) error {
		return u.Reject(c, u.NewMessage(a2a.TextPart("rejected")))
	}},
	{"tck-stream-artifact-chunked", func(t *tck, c *agent.Context, u *agent.Updater) error {
		if err := u.StartWork(c, nil); err != nil {
			return err
		}
		id := a2a.NewID()
		if err := u.AppendArtifact(c, a2a.Artifact{ArtifactID: id, Parts: []a2a.Part{a2a.TextPart("chunk-1 ")}}, false); err != nil {
			return err
		}
		if err := u.AppendArtifact(c, a2a.Artifact{ArtifactID: id, Parts: []a2a.Part{a2a.TextPart("chunk-2")}}, true); err != nil {
			return err
		}
		return u.Complete(c, nil)
	}},
	{"tck-stream-artifact-text", artifactThenComplete(true, a2a.TextPart("Streamed text content"))},
	{"tck-stream-artifact-file", artifactThenComplete(true, a2a.RawPart([]byte("tck file content"), "output.txt", "text/plain"))},
	{"tck-stream-ordering-001", artifactThenComplete(true, a2a.TextPart("Ordered output"))},
	{"tck-stream-001", artifactThenComplete(true, a2a.TextPart("Stream hello from TCK"))},
	{"tck-stream-002", func(t *tck, c *agent.Context, u *agent.Updater) error {
		return u.Complete(c, nil)
	}},
	{"tck-stream-003", artifactThenComplete(true, a2a.TextPart("Stream task lifecycle"))},
	{"test-resubscribe-message-id", func(t *tck, c *agent.Context, u *agent.Updater) error {
		if err := u.StartWork(c, nil); err != nil {
			return err
		}
		if err := sleep(c, 2*t.timeout); err != nil {
			return err
		}
		return u.Complete(c, nil)
	}},
}

// artifactThenComplete adds one artifact holding part and completes; with
// working, the task is marked WORKING first (the streaming scenarios).
func artifactThenComplete(working bool, part a2a.Part) func(*tck, *agent.Context, *agent.Updater) error {
	return func(t *tck, c *agent.Context, u *agent.Updater) error {
		if working {
			if err := u.StartWork(c, nil); err != nil {
				return err
			}
		}
		if err := u.AddArtifact(c, a2a.Artifact{Parts: []a2a.Part{part}}); err != nil {
			return err
		}
		return u.Complete(c, nil)
	}
}

func (t *tck) handle(c *agent.Context) (agent.Result, error) {
	u := c.Updater()
	id := ""
	if m := c.Message(); m != nil {
		id = m.MessageID
	}
	for _, s := range scenarios {
		if strings.HasPrefix(id, s.prefix) {
			return agent.Result{}, s.run(t, c, u)
		}
	}
	return agent.Result{}, u.Complete(c, u.NewMessage(a2a.TextPart("Handled message "+id)))
}

// sleep waits d or until the execution is cancelled.
func sleep(c *agent.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-c.Done():
		return c.Err()
	}
}
