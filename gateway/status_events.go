package gateway

import "encoding/json"

// StatusEvent is the "status" event that records a run's move to st,
// with why: what every writer of a run appends with a lifecycle change,
// so that its event stream and the runs page show it.
func StatusEvent(st Status, reason string) Event {
	return Event{Type: EventStatus, Payload: mustJSON(StatusPayload{Status: st, Reason: reason})}
}

// EndEvents are the events that record a run's ending in st: the
// terminal status, then the end of a live stream (done for a completed
// run, error for a failed or cancelled one).
func EndEvents(st Status, reason string) []Event {
	end := EventDone
	if st.Failure() {
		end = EventError
	}
	return []Event{StatusEvent(st, reason), {Type: end, Payload: mustJSON(EndPayload{Status: st, Reason: reason, Content: reason})}}
}

// mustJSON encodes a payload of strings, which cannot fail.
func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
