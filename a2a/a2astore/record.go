package a2astore

import (
	"encoding/json"
	"errors"
	"fmt"

	"novaos.dev/novaos/a2a"
)

// Errors for records no store can hold. Every store refuses the same
// values, because PostgreSQL cannot store text with NUL or invalid UTF-8.
var (
	ErrInvalidTask   = errors.New("task needs an id of 1 to 1024 bytes, and id, context id and scope of valid UTF-8 without NUL")
	ErrInvalidConfig = errors.New("config needs a task id and an id of 1 to 1024 bytes, and ids and scope of valid UTF-8 without NUL")
)

// EncodeTask checks that a task can be stored under the scope (tenant,
// owner) and returns the bytes stores keep for it.
func EncodeTask(tenant, owner string, t *a2a.Task) ([]byte, error) {
	if t == nil || !ValidID(t.ID) || !ValidText(t.ContextID, tenant, owner) {
		return nil, ErrInvalidTask
	}
	return a2a.AppendTask(nil, t)
}

// DecodeTask reads a task written by EncodeTask.
func DecodeTask(body []byte) (*a2a.Task, error) {
	var t a2a.Task
	if err := a2a.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("decode task: %w", err)
	}
	return &t, nil
}

// EncodeEvent returns the bytes stores keep for one event appended to a
// task (a2asrv.TaskStore.Append): a status or artifact update frame.
func EncodeEvent(ev *a2a.StreamResponse) ([]byte, error) {
	if ev == nil || (ev.StatusUpdate == nil && ev.ArtifactUpdate == nil) {
		return nil, errors.New("an appended event is a status or artifact update")
	}
	return a2a.AppendStreamResponse(nil, ev)
}

// EncodeAppend returns what a store keeps for an append to task id: the
// compacted task's body when compact is set (it must be task id), else one
// body per event.
func EncodeAppend(tenant, owner, id string, events []*a2a.StreamResponse, compact *a2a.Task) (body []byte, bodies [][]byte, err error) {
	if compact != nil {
		if compact.ID != id {
			return nil, nil, fmt.Errorf("compacted task has id %s", compact.ID)
		}
		body, err = EncodeTask(tenant, owner, compact)
		return body, nil, err
	}
	bodies = make([][]byte, len(events))
	for i, ev := range events {
		if bodies[i], err = EncodeEvent(ev); err != nil {
			return nil, nil, err
		}
	}
	return nil, bodies, nil
}

// DecodeEvent reads an event written by EncodeEvent.
func DecodeEvent(body []byte) (*a2a.StreamResponse, error) {
	var ev a2a.StreamResponse
	if err := a2a.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	return &ev, nil
}

// ValidConfig checks that a push config can be stored under the scope.
func ValidConfig(tenant, owner string, cfg *a2a.TaskPushNotificationConfig) error {
	if cfg == nil || !ValidID(cfg.TaskID) || !ValidID(cfg.ID) || !ValidText(tenant, owner) {
		return ErrInvalidConfig
	}
	return nil
}

// EncodeConfig checks a push config like ValidConfig and returns the bytes
// stores keep for it.
func EncodeConfig(tenant, owner string, cfg *a2a.TaskPushNotificationConfig) ([]byte, error) {
	if err := ValidConfig(tenant, owner, cfg); err != nil {
		return nil, err
	}
	return json.Marshal(cfg)
}

// DecodeConfig reads a push config written by EncodeConfig.
func DecodeConfig(body []byte) (*a2a.TaskPushNotificationConfig, error) {
	var c a2a.TaskPushNotificationConfig
	if err := a2a.Unmarshal(body, &c); err != nil {
		return nil, fmt.Errorf("decode push config: %w", err)
	}
	return &c, nil
}
