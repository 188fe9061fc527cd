package delivery

import "sync"

// watchers wake the waits on an agent's stream: each agent has at most
// one channel, closed (and dropped) when events are appended to its
// stream, so a wait costs nothing but the channel while it waits.
type watchers struct {
	mu      sync.Mutex
	byAgent map[string]chan struct{}
}

func newWatchers() *watchers { return &watchers{byAgent: map[string]chan struct{}{}} }

// wait returns a channel closed at the agent's next news. Take it before
// reading the stream, so that news between the read and the wait is not
// missed.
func (w *watchers) wait(agentID string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.byAgent[agentID]
	if !ok {
		ch = make(chan struct{})
		w.byAgent[agentID] = ch
	}
	return ch
}

// notify wakes the waits on agentID's stream; "" wakes every wait (the
// store's news may have been lost).
func (w *watchers) notify(agentID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if agentID == "" {
		for id, ch := range w.byAgent {
			close(ch)
			delete(w.byAgent, id)
		}
		return
	}
	if ch, ok := w.byAgent[agentID]; ok {
		close(ch)
		delete(w.byAgent, agentID)
	}
}
