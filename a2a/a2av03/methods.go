package a2av03

import (
	"encoding/json"
	"errors"
	"fmt"

	"novaos.dev/novaos/a2a"
)

// JSON-RPC method names of A2A 0.3.
const (
	MethodSendMessage                  = "message/send"
	MethodStreamMessage                = "message/stream"
	MethodGetTask                      = "tasks/get"
	MethodCancelTask                   = "tasks/cancel"
	MethodResubscribe                  = "tasks/resubscribe"
	MethodSetPushConfig                = "tasks/pushNotificationConfig/set"
	MethodGetPushConfig                = "tasks/pushNotificationConfig/get"
	MethodListPushConfigs              = "tasks/pushNotificationConfig/list"
	MethodDeletePushConfig             = "tasks/pushNotificationConfig/delete"
	MethodGetAuthenticatedExtendedCard = "agent/getAuthenticatedExtendedCard"
)

// methodNames pairs each 0.3 method with its v1 method. ListTasks has no
// 0.3 JSON-RPC method (0.3 listed tasks over gRPC and REST only).
var methodNames = [...][2]string{
	{MethodSendMessage, a2a.MethodSendMessage},
	{MethodStreamMessage, a2a.MethodSendStreamingMessage},
	{MethodGetTask, a2a.MethodGetTask},
	{MethodCancelTask, a2a.MethodCancelTask},
	{MethodResubscribe, a2a.MethodSubscribeToTask},
	{MethodSetPushConfig, a2a.MethodCreateTaskPushNotificationConfig},
	{MethodGetPushConfig, a2a.MethodGetTaskPushNotificationConfig},
	{MethodListPushConfigs, a2a.MethodListTaskPushNotificationConfigs},
	{MethodDeletePushConfig, a2a.MethodDeleteTaskPushNotificationConfig},
	{MethodGetAuthenticatedExtendedCard, a2a.MethodGetExtendedAgentCard},
}

// V1Method returns the v1 name of a 0.3 method; ok is false for a name
// that is not a 0.3 method (v1 names included: the two sets are
// disjoint, so a server can tell a 0.3 call by its method alone).
func V1Method(method string) (v1 string, ok bool) {
	for _, m := range methodNames {
		if m[0] == method {
			return m[1], true
		}
	}
	return "", false
}

// MethodFromV1 returns the 0.3 name of a v1 method; ok is false for
// ListTasks, which 0.3's JSON-RPC binding lacks, and for unknown names.
func MethodFromV1(v1 string) (method string, ok bool) {
	for _, m := range methodNames {
		if m[1] == v1 {
			return m[0], true
		}
	}
	return "", false
}

// Streaming reports whether a 0.3 method answers with an SSE stream.
func Streaming(method string) bool {
	return method == MethodStreamMessage || method == MethodResubscribe
}

// DecodeRequest reads the params of a 0.3 call as the v1 request of the
// method it maps to, for a server that runs v1 methods. req is:
//
//	message/send, message/stream          *a2a.SendMessageRequest
//	tasks/get                             *a2a.GetTaskRequest
//	tasks/cancel                          *a2a.CancelTaskRequest
//	tasks/resubscribe                     *a2a.SubscribeToTaskRequest
//	tasks/pushNotificationConfig/set      *a2a.TaskPushNotificationConfig
//	tasks/pushNotificationConfig/get      *a2a.GetTaskPushNotificationConfigRequest
//	tasks/pushNotificationConfig/list     *a2a.ListTaskPushNotificationConfigsRequest
//	tasks/pushNotificationConfig/delete   *a2a.DeleteTaskPushNotificationConfigRequest
//	agent/getAuthenticatedExtendedCard    *a2a.GetExtendedAgentCardRequest
//
// An unknown method is -32601; params that do not decode or convert are
// -32602. Required v1 fields (ids) are left for the v1 method to check.
func DecodeRequest(method string, params json.RawMessage) (v1Method string, req any, e *a2a.Error) {
	v1Method, ok := V1Method(method)
	if !ok {
		return "", nil, a2a.NewError(a2a.CodeMethodNotFound, "method %q not found", truncate(method))
	}
	req, err := decodeRequest(method, params)
	if err != nil {
		if e, ok := errors.AsType[*a2a.Error](err); ok {
			return "", nil, e
		}
		return "", nil, a2a.NewError(a2a.CodeInvalidParams, "invalid params: %s", describe(err))
	}
	return v1Method, req, nil
}

func decodeRequest(method string, params json.RawMessage) (any, error) {
	switch method {
	case MethodSendMessage, MethodStreamMessage:
		var p MessageSendParams
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		return p.V1()
	case MethodGetTask:
		var p TaskQueryParams
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		return &a2a.GetTaskRequest{ID: p.ID, HistoryLength: p.HistoryLength}, nil
	case MethodCancelTask, MethodResubscribe:
		var p TaskIDParams
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		if method == MethodResubscribe {
			return &a2a.SubscribeToTaskRequest{ID: p.ID}, nil
		}
		return &a2a.CancelTaskRequest{ID: p.ID, Metadata: p.Metadata}, nil
	case MethodSetPushConfig:
		var p TaskPushNotificationConfig
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		return p.V1(), nil
	case MethodGetPushConfig:
		var p GetTaskPushNotificationConfigParams
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		// Without a config id, 0.3 means the task's default config, whose
		// id 0.3 servers (and TaskPushNotificationConfig.V1) make the
		// task's own.
		id := p.PushNotificationConfigID
		if id == "" {
			id = p.ID
		}
		return &a2a.GetTaskPushNotificationConfigRequest{TaskID: p.ID, ID: id}, nil
	case MethodListPushConfigs:
		var p ListTaskPushNotificationConfigParams
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		return &a2a.ListTaskPushNotificationConfigsRequest{TaskID: p.ID}, nil
	case MethodDeletePushConfig:
		var p DeleteTaskPushNotificationConfigParams
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		if p.PushNotificationConfigID == "" {
			return nil, errors.New(`"pushNotificationConfigId" is required`)
		}
		return &a2a.DeleteTaskPushNotificationConfigRequest{TaskID: p.ID, ID: p.PushNotificationConfigID}, nil
	case MethodGetAuthenticatedExtendedCard:
		// 0.3 defines no params; whatever is sent is ignored, but it must
		// still be well-formed.
		var p struct{}
		if e := DecodeParams(params, &p); e != nil {
			return nil, e
		}
		return &a2a.GetExtendedAgentCardRequest{}, nil
	}
	return nil, fmt.Errorf("a2av03: no decoder for %s", method)
}

// EncodeResult writes a v1 method's result in its 0.3 form, for a
// server answering a 0.3 call:
//
//	*a2a.SendMessageResponse, *a2a.StreamResponse   the Task, Message or update event, with its kind
//	*a2a.Task                                       Task
//	*a2a.TaskPushNotificationConfig                 TaskPushNotificationConfig
//	*a2a.ListTaskPushNotificationConfigsResponse    an array of TaskPushNotificationConfig
//	*a2a.AgentCard                                  the 0.3 AgentCard ([CardFromV1])
//	nil (DeleteTaskPushNotificationConfig)          null
//
// Any other type is an error.
func EncodeResult(result any) (json.RawMessage, error) {
	v, err := resultFromV1(result)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func resultFromV1(result any) (any, error) {
	switch r := result.(type) {
	case nil:
		return nil, nil
	case *a2a.SendMessageResponse:
		switch {
		case r.Task != nil:
			return TaskFromV1(r.Task), nil
		case r.Message != nil:
			return MessageFromV1(r.Message), nil
		}
		return nil, errors.New("a2av03: empty SendMessage response")
	case *a2a.StreamResponse:
		return EventFromV1(r)
	case *a2a.Task:
		return TaskFromV1(r), nil
	case *a2a.TaskPushNotificationConfig:
		return PushConfigFromV1(r), nil
	case *a2a.ListTaskPushNotificationConfigsResponse:
		out := make([]TaskPushNotificationConfig, len(r.Configs))
		for i := range r.Configs {
			out[i] = *PushConfigFromV1(&r.Configs[i])
		}
		return out, nil
	case *a2a.AgentCard:
		return CardFromV1(r)
	}
	return nil, fmt.Errorf("a2av03: no 0.3 form for a result of type %T", result)
}

// EncodeRequest gives the 0.3 method and params for a v1 call, for a
// client talking to a 0.3 agent; req has the type DecodeRequest returns
// for the method. params is nil for GetExtendedAgentCard (0.3 sends
// none). ListTasks, which 0.3's JSON-RPC binding lacks, is an
// UnsupportedOperation error (-32004).
func EncodeRequest(v1Method string, req any) (method string, params any, err error) {
	method, ok := MethodFromV1(v1Method)
	if !ok {
		if v1Method == a2a.MethodListTasks {
			return "", nil, a2a.NewError(a2a.CodeUnsupportedOperation, "ListTasks has no A2A 0.3 JSON-RPC method")
		}
		return "", nil, fmt.Errorf("a2av03: unknown method %q", v1Method)
	}
	switch v1Method {
	case a2a.MethodSendMessage, a2a.MethodSendStreamingMessage:
		if r, ok := req.(*a2a.SendMessageRequest); ok {
			return method, SendParamsFromV1(r), nil
		}
	case a2a.MethodGetTask:
		if r, ok := req.(*a2a.GetTaskRequest); ok {
			return method, &TaskQueryParams{ID: r.ID, HistoryLength: r.HistoryLength}, nil
		}
	case a2a.MethodCancelTask:
		if r, ok := req.(*a2a.CancelTaskRequest); ok {
			return method, &TaskIDParams{ID: r.ID, Metadata: r.Metadata}, nil
		}
	case a2a.MethodSubscribeToTask:
		if r, ok := req.(*a2a.SubscribeToTaskRequest); ok {
			return method, &TaskIDParams{ID: r.ID}, nil
		}
	case a2a.MethodCreateTaskPushNotificationConfig:
		if r, ok := req.(*a2a.TaskPushNotificationConfig); ok {
			return method, PushConfigFromV1(r), nil
		}
	case a2a.MethodGetTaskPushNotificationConfig:
		if r, ok := req.(*a2a.GetTaskPushNotificationConfigRequest); ok {
			return method, &GetTaskPushNotificationConfigParams{ID: r.TaskID, PushNotificationConfigID: r.ID}, nil
		}
	case a2a.MethodDeleteTaskPushNotificationConfig:
		if r, ok := req.(*a2a.DeleteTaskPushNotificationConfigRequest); ok {
			return method, &DeleteTaskPushNotificationConfigParams{ID: r.TaskID, PushNotificationConfigID: r.ID}, nil
		}
	case a2a.MethodListTaskPushNotificationConfigs:
		if r, ok := req.(*a2a.ListTaskPushNotificationConfigsRequest); ok {
			return method, &ListTaskPushNotificationConfigParams{ID: r.TaskID}, nil
		}
	case a2a.MethodGetExtendedAgentCard:
		if _, ok := req.(*a2a.GetExtendedAgentCardRequest); ok {
			return method, nil, nil
		}
	}
	return "", nil, fmt.Errorf("a2av03: %s takes no request of type %T", v1Method, req)
}

// DecodeResult reads a 0.3 agent's result as the result of the v1 method
// the call maps to, for a client:
//
//	SendMessage                                  *a2a.SendMessageResponse
//	SendStreamingMessage, SubscribeToTask        *a2a.StreamResponse (one frame)
//	GetTask, CancelTask                          *a2a.Task
//	Create/GetTaskPushNotificationConfig         *a2a.TaskPushNotificationConfig
//	ListTaskPushNotificationConfigs              *a2a.ListTaskPushNotificationConfigsResponse
//	DeleteTaskPushNotificationConfig             nil
//	GetExtendedAgentCard                         *a2a.AgentCard
func DecodeResult(v1Method string, result json.RawMessage) (any, error) {
	switch v1Method {
	case a2a.MethodSendMessage:
		var e Event
		if err := Unmarshal(result, &e); err != nil {
			return nil, err
		}
		return e.SendResponse()
	case a2a.MethodSendStreamingMessage, a2a.MethodSubscribeToTask:
		var e Event
		if err := Unmarshal(result, &e); err != nil {
			return nil, err
		}
		return e.V1()
	case a2a.MethodGetTask, a2a.MethodCancelTask:
		var t Task
		if err := Unmarshal(result, &t); err != nil {
			return nil, err
		}
		return t.V1()
	case a2a.MethodCreateTaskPushNotificationConfig, a2a.MethodGetTaskPushNotificationConfig:
		var c TaskPushNotificationConfig
		if err := Unmarshal(result, &c); err != nil {
			return nil, err
		}
		return c.V1(), nil
	case a2a.MethodListTaskPushNotificationConfigs:
		var cs []TaskPushNotificationConfig
		if err := Unmarshal(result, &cs); err != nil {
			return nil, err
		}
		out := &a2a.ListTaskPushNotificationConfigsResponse{Configs: make([]a2a.TaskPushNotificationConfig, len(cs))}
		for i := range cs {
			out.Configs[i] = *cs[i].V1()
		}
		return out, nil
	case a2a.MethodDeleteTaskPushNotificationConfig:
		return nil, nil
	case a2a.MethodGetExtendedAgentCard:
		var c AgentCard
		if err := Unmarshal(result, &c); err != nil {
			return nil, err
		}
		return c.V1()
	}
	return nil, fmt.Errorf("a2av03: no 0.3 result for method %q", v1Method)
}
