package bridge

import (
	"context"
	"errors"

	"novaos.dev/novaos/adapter"
	"novaos.dev/novaos/delivery"
)

// turn applies an agent's replies to a run, until one ends the turn.
type turn struct {
	run   *adapter.Run
	ended bool
}

// apply acts on one reply; it reports whether the turn ended.
func (t *turn) apply(ctx context.Context, r Reply) (bool, error) {
	switch r.Type {
	case "status":
		return false, t.run.Patch().SetStatusLine(clip(r.Text, delivery.MaxStatusLineChars))
	case "message":
		_, err := t.run.Reply(ctx, r.ContentMD)
		return false, err
	case "await_input":
		t.ended = true
		return true, t.run.AwaitInput(ctx, clip(r.StatusLine, delivery.MaxStatusLineChars))
	case "finish":
		t.ended = true
		return true, t.run.Finish(ctx, delivery.RunFinish{State: delivery.RunState(r.State), Reason: r.Reason, Summary: r.Summary})
	case "error":
		t.ended = true
		return true, &adapter.RuntimeFailure{Err: errors.New("the agent reported an error")}
	}
	return false, nil
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
