package a2agrpc

import (
	"time"

	"google.golang.org/protobuf/proto"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2apb"
)

// This file holds the exported conversions: one pair for every request and
// response message of the eleven methods. A nil input converts like its
// zero value; ToPB fails only on values the JSON encoders would fail on
// too (or on a oneof with two members set), FromPB on what the JSON reader
// refuses at the model level (see the package doc).

// SendMessageRequestToPB converts SendMessage and SendStreamingMessage
// params.
func SendMessageRequestToPB(r *a2a.SendMessageRequest) (*a2apb.SendMessageRequest, error) {
	if r == nil {
		r = &a2a.SendMessageRequest{}
	}
	msg, err := messageToPB(r.Message)
	if err != nil {
		return nil, wrap(at("message", err))
	}
	out := &a2apb.SendMessageRequest{Tenant: validString(r.Tenant), Message: msg}
	if c := r.Configuration; c != nil {
		out.Configuration = &a2apb.SendMessageConfiguration{
			AcceptedOutputModes:        validStrings(c.AcceptedOutputModes),
			TaskPushNotificationConfig: pushConfigToPB(c.TaskPushNotificationConfig),
			HistoryLength:              c.HistoryLength,
			ReturnImmediately:          c.ReturnImmediately,
		}
	}
	if out.Metadata, err = structToPB(r.Metadata); err != nil {
		return nil, wrap(at("metadata", err))
	}
	return out, nil
}

// SendMessageRequestFromPB converts SendMessage and SendStreamingMessage
// params.
func SendMessageRequestFromPB(r *a2apb.SendMessageRequest) (*a2a.SendMessageRequest, error) {
	msg, err := messageFromPB(r.GetMessage())
	if err != nil {
		return nil, wrap(at("message", err))
	}
	out := &a2a.SendMessageRequest{Tenant: r.GetTenant(), Message: msg}
	if c := r.GetConfiguration(); c != nil {
		out.Configuration = &a2a.SendMessageConfiguration{
			AcceptedOutputModes: emptyToNil(c.GetAcceptedOutputModes()),
			HistoryLength:       c.HistoryLength,
			ReturnImmediately:   c.GetReturnImmediately(),
		}
		if p := c.GetTaskPushNotificationConfig(); p != nil {
			out.Configuration.TaskPushNotificationConfig = pushConfigFromPB(p)
		}
	}
	if out.Metadata, err = structFromPB(r.GetMetadata()); err != nil {
		return nil, wrap(at("metadata", err))
	}
	return out, nil
}

// SendMessageResponseToPB converts a SendMessage result; setting both a
// task and a message is an error.
func SendMessageResponseToPB(r *a2a.SendMessageResponse) (*a2apb.SendMessageResponse, error) {
	out := &a2apb.SendMessageResponse{}
	if r == nil {
		return out, nil
	}
	switch {
	case r.Task != nil && r.Message != nil:
		return nil, wrap(ErrOneof)
	case r.Task != nil:
		t, err := taskToPB(r.Task)
		if err != nil {
			return nil, wrap(at("task", err))
		}
		out.Payload = &a2apb.SendMessageResponse_Task{Task: t}
	case r.Message != nil:
		m, err := messageToPB(r.Message)
		if err != nil {
			return nil, wrap(at("message", err))
		}
		out.Payload = &a2apb.SendMessageResponse_Message{Message: m}
	}
	return out, nil
}

// SendMessageResponseFromPB converts a SendMessage result.
func SendMessageResponseFromPB(r *a2apb.SendMessageResponse) (*a2a.SendMessageResponse, error) {
	out := &a2a.SendMessageResponse{}
	var err error
	switch p := r.GetPayload().(type) {
	case *a2apb.SendMessageResponse_Task:
		if out.Task, err = taskFromPB(orEmpty(p.Task)); err != nil {
			return nil, wrap(at("task", err))
		}
	case *a2apb.SendMessageResponse_Message:
		if out.Message, err = messageFromPB(orEmpty(p.Message)); err != nil {
			return nil, wrap(at("message", err))
		}
	}
	return out, nil
}

// StreamResponseToPB converts one stream frame or push-notification body;
// setting more than one member is an error.
func StreamResponseToPB(r *a2a.StreamResponse) (*a2apb.StreamResponse, error) {
	out := &a2apb.StreamResponse{}
	if r == nil {
		return out, nil
	}
	n := 0
	for _, set := range []bool{r.Task != nil, r.Message != nil, r.StatusUpdate != nil, r.ArtifactUpdate != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, wrap(ErrOneof)
	}
	switch {
	case r.Task != nil:
		t, err := taskToPB(r.Task)
		if err != nil {
			return nil, wrap(at("task", err))
		}
		out.Payload = &a2apb.StreamResponse_Task{Task: t}
	case r.Message != nil:
		m, err := messageToPB(r.Message)
		if err != nil {
			return nil, wrap(at("message", err))
		}
		out.Payload = &a2apb.StreamResponse_Message{Message: m}
	case r.StatusUpdate != nil:
		e, err := statusUpdateToPB(r.StatusUpdate)
		if err != nil {
			return nil, wrap(at("statusUpdate", err))
		}
		out.Payload = &a2apb.StreamResponse_StatusUpdate{StatusUpdate: e}
	case r.ArtifactUpdate != nil:
		e, err := artifactUpdateToPB(r.ArtifactUpdate)
		if err != nil {
			return nil, wrap(at("artifactUpdate", err))
		}
		out.Payload = &a2apb.StreamResponse_ArtifactUpdate{ArtifactUpdate: e}
	}
	return out, nil
}

// StreamResponseFromPB converts one stream frame or push-notification body.
// A member set to an empty message reads as an empty value, not as absent.
func StreamResponseFromPB(r *a2apb.StreamResponse) (*a2a.StreamResponse, error) {
	out := &a2a.StreamResponse{}
	var err error
	switch p := r.GetPayload().(type) {
	case *a2apb.StreamResponse_Task:
		if out.Task, err = taskFromPB(orEmpty(p.Task)); err != nil {
			return nil, wrap(at("task", err))
		}
	case *a2apb.StreamResponse_Message:
		if out.Message, err = messageFromPB(orEmpty(p.Message)); err != nil {
			return nil, wrap(at("message", err))
		}
	case *a2apb.StreamResponse_StatusUpdate:
		if out.StatusUpdate, err = statusUpdateFromPB(p.StatusUpdate); err != nil {
			return nil, wrap(at("statusUpdate", err))
		}
	case *a2apb.StreamResponse_ArtifactUpdate:
		if out.ArtifactUpdate, err = artifactUpdateFromPB(p.ArtifactUpdate); err != nil {
			return nil, wrap(at("artifactUpdate", err))
		}
	}
	return out, nil
}

// orEmpty makes a oneof member holding a nil message (which protobuf
// writes as an empty one) read as the empty message it is on the wire.
func orEmpty[T any, P interface {
	*T
	proto.Message
}](m P) P {
	if m == nil {
		return P(new(T))
	}
	return m
}

// TaskToPB converts a task (the result of GetTask and CancelTask).
func TaskToPB(t *a2a.Task) (*a2apb.Task, error) {
	if t == nil {
		t = &a2a.Task{}
	}
	out, err := taskToPB(t)
	return out, wrap(err)
}

// TaskFromPB converts a task (the result of GetTask and CancelTask).
func TaskFromPB(t *a2apb.Task) (*a2a.Task, error) {
	out, err := taskFromPB(orEmpty(t))
	return out, wrap(err)
}

// GetTaskRequestToPB converts GetTask params.
func GetTaskRequestToPB(r *a2a.GetTaskRequest) *a2apb.GetTaskRequest {
	if r == nil {
		return &a2apb.GetTaskRequest{}
	}
	return &a2apb.GetTaskRequest{Tenant: validString(r.Tenant), Id: validString(r.ID), HistoryLength: r.HistoryLength}
}

// GetTaskRequestFromPB converts GetTask params.
func GetTaskRequestFromPB(r *a2apb.GetTaskRequest) *a2a.GetTaskRequest {
	return &a2a.GetTaskRequest{Tenant: r.GetTenant(), ID: r.GetId(), HistoryLength: r.HistoryLength}
}

// ListTasksRequestToPB converts ListTasks params. StatusTimestampAfter,
// a string in the wire model, must be an RFC 3339 time.
func ListTasksRequestToPB(r *a2a.ListTasksRequest) (*a2apb.ListTasksRequest, error) {
	if r == nil {
		r = &a2a.ListTasksRequest{}
	}
	out := &a2apb.ListTasksRequest{
		Tenant:        validString(r.Tenant),
		ContextId:     validString(r.ContextID),
		Status:        stateToPB(r.Status),
		PageSize:      r.PageSize,
		PageToken:     validString(r.PageToken),
		HistoryLength: r.HistoryLength,
	}
	if r.StatusTimestampAfter != "" {
		t, err := a2a.ParseTimestamp(r.StatusTimestampAfter)
		if err != nil {
			return nil, wrap(at("statusTimestampAfter", err))
		}
		if out.StatusTimestampAfter, err = timeToPB(t); err != nil {
			return nil, wrap(at("statusTimestampAfter", err))
		}
	}
	if r.IncludeArtifacts {
		out.IncludeArtifacts = proto.Bool(true)
	}
	return out, nil
}

// ListTasksRequestFromPB converts ListTasks params. The wire model keeps
// StatusTimestampAfter as a string: it gets RFC 3339 in UTC with as many
// fraction digits as needed. An explicit include_artifacts=false reads as
// false, which the wire model cannot tell from unset.
func ListTasksRequestFromPB(r *a2apb.ListTasksRequest) (*a2a.ListTasksRequest, error) {
	status, err := stateFromPB(r.GetStatus())
	if err != nil {
		return nil, wrap(at("status", err))
	}
	out := &a2a.ListTasksRequest{
		Tenant:           r.GetTenant(),
		ContextID:        r.GetContextId(),
		Status:           status,
		PageSize:         r.PageSize,
		PageToken:        r.GetPageToken(),
		HistoryLength:    r.HistoryLength,
		IncludeArtifacts: r.GetIncludeArtifacts(),
	}
	if ts := r.GetStatusTimestampAfter(); ts != nil {
		t, err := timeFromPB(ts)
		if err != nil {
			return nil, wrap(at("statusTimestampAfter", err))
		}
		out.StatusTimestampAfter = t.Format(time.RFC3339Nano)
	}
	return out, nil
}

// ListTasksResponseToPB converts a ListTasks result.
func ListTasksResponseToPB(r *a2a.ListTasksResponse) (*a2apb.ListTasksResponse, error) {
	if r == nil {
		r = &a2a.ListTasksResponse{}
	}
	out := &a2apb.ListTasksResponse{NextPageToken: validString(r.NextPageToken), PageSize: r.PageSize, TotalSize: r.TotalSize}
	if len(r.Tasks) > 0 {
		out.Tasks = make([]*a2apb.Task, len(r.Tasks))
		for i := range r.Tasks {
			var err error
			if out.Tasks[i], err = taskToPB(&r.Tasks[i]); err != nil {
				return nil, wrap(atIndex("tasks", i, err))
			}
		}
	}
	return out, nil
}

// ListTasksResponseFromPB converts a ListTasks result.
func ListTasksResponseFromPB(r *a2apb.ListTasksResponse) (*a2a.ListTasksResponse, error) {
	// tasks is a required member: an empty page is [] in the model's JSON,
	// as the server's own answer writes it.
	out := &a2a.ListTasksResponse{NextPageToken: r.GetNextPageToken(), PageSize: r.GetPageSize(), TotalSize: r.GetTotalSize(),
		Tasks: make([]a2a.Task, len(r.GetTasks()))}
	if len(r.GetTasks()) > 0 {
		for i, t := range r.GetTasks() {
			task, err := taskFromPB(orEmpty(t))
			if err != nil {
				return nil, wrap(atIndex("tasks", i, err))
			}
			out.Tasks[i] = *task
		}
	}
	return out, nil
}

// CancelTaskRequestToPB converts CancelTask params.
func CancelTaskRequestToPB(r *a2a.CancelTaskRequest) (*a2apb.CancelTaskRequest, error) {
	if r == nil {
		r = &a2a.CancelTaskRequest{}
	}
	md, err := structToPB(r.Metadata)
	if err != nil {
		return nil, wrap(at("metadata", err))
	}
	return &a2apb.CancelTaskRequest{Tenant: validString(r.Tenant), Id: validString(r.ID), Metadata: md}, nil
}

// CancelTaskRequestFromPB converts CancelTask params.
func CancelTaskRequestFromPB(r *a2apb.CancelTaskRequest) (*a2a.CancelTaskRequest, error) {
	md, err := structFromPB(r.GetMetadata())
	if err != nil {
		return nil, wrap(at("metadata", err))
	}
	return &a2a.CancelTaskRequest{Tenant: r.GetTenant(), ID: r.GetId(), Metadata: md}, nil
}

// SubscribeToTaskRequestToPB converts SubscribeToTask params.
func SubscribeToTaskRequestToPB(r *a2a.SubscribeToTaskRequest) *a2apb.SubscribeToTaskRequest {
	if r == nil {
		return &a2apb.SubscribeToTaskRequest{}
	}
	return &a2apb.SubscribeToTaskRequest{Tenant: validString(r.Tenant), Id: validString(r.ID)}
}

// SubscribeToTaskRequestFromPB converts SubscribeToTask params.
func SubscribeToTaskRequestFromPB(r *a2apb.SubscribeToTaskRequest) *a2a.SubscribeToTaskRequest {
	return &a2a.SubscribeToTaskRequest{Tenant: r.GetTenant(), ID: r.GetId()}
}

// ---------------------------------------------------------------- push notification configs

func pushConfigToPB(c *a2a.TaskPushNotificationConfig) *a2apb.TaskPushNotificationConfig {
	if c == nil {
		return nil
	}
	out := &a2apb.TaskPushNotificationConfig{
		Tenant: validString(c.Tenant), Id: validString(c.ID), TaskId: validString(c.TaskID),
		Url: validString(c.URL), Token: validString(c.Token),
	}
	if a := c.Authentication; a != nil {
		out.Authentication = &a2apb.AuthenticationInfo{Scheme: validString(a.Scheme), Credentials: validString(a.Credentials)}
	}
	return out
}

func pushConfigFromPB(c *a2apb.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	out := &a2a.TaskPushNotificationConfig{
		Tenant: c.GetTenant(), ID: c.GetId(), TaskID: c.GetTaskId(), URL: c.GetUrl(), Token: c.GetToken(),
	}
	if a := c.GetAuthentication(); a != nil {
		out.Authentication = &a2a.AuthenticationInfo{Scheme: a.GetScheme(), Credentials: a.GetCredentials()}
	}
	return out
}

// TaskPushNotificationConfigToPB converts a push config: the params of
// CreateTaskPushNotificationConfig and the result of it and of
// GetTaskPushNotificationConfig.
func TaskPushNotificationConfigToPB(c *a2a.TaskPushNotificationConfig) *a2apb.TaskPushNotificationConfig {
	if c == nil {
		return &a2apb.TaskPushNotificationConfig{}
	}
	return pushConfigToPB(c)
}

// TaskPushNotificationConfigFromPB converts a push config.
func TaskPushNotificationConfigFromPB(c *a2apb.TaskPushNotificationConfig) *a2a.TaskPushNotificationConfig {
	return pushConfigFromPB(c)
}

// GetTaskPushNotificationConfigRequestToPB converts
// GetTaskPushNotificationConfig params.
func GetTaskPushNotificationConfigRequestToPB(r *a2a.GetTaskPushNotificationConfigRequest) *a2apb.GetTaskPushNotificationConfigRequest {
	if r == nil {
		return &a2apb.GetTaskPushNotificationConfigRequest{}
	}
	return &a2apb.GetTaskPushNotificationConfigRequest{Tenant: validString(r.Tenant), TaskId: validString(r.TaskID), Id: validString(r.ID)}
}

// GetTaskPushNotificationConfigRequestFromPB converts
// GetTaskPushNotificationConfig params.
func GetTaskPushNotificationConfigRequestFromPB(r *a2apb.GetTaskPushNotificationConfigRequest) *a2a.GetTaskPushNotificationConfigRequest {
	return &a2a.GetTaskPushNotificationConfigRequest{Tenant: r.GetTenant(), TaskID: r.GetTaskId(), ID: r.GetId()}
}

// DeleteTaskPushNotificationConfigRequestToPB converts
// DeleteTaskPushNotificationConfig params.
func DeleteTaskPushNotificationConfigRequestToPB(r *a2a.DeleteTaskPushNotificationConfigRequest) *a2apb.DeleteTaskPushNotificationConfigRequest {
	if r == nil {
		return &a2apb.DeleteTaskPushNotificationConfigRequest{}
	}
	return &a2apb.DeleteTaskPushNotificationConfigRequest{Tenant: validString(r.Tenant), TaskId: validString(r.TaskID), Id: validString(r.ID)}
}

// DeleteTaskPushNotificationConfigRequestFromPB converts
// DeleteTaskPushNotificationConfig params.
func DeleteTaskPushNotificationConfigRequestFromPB(r *a2apb.DeleteTaskPushNotificationConfigRequest) *a2a.DeleteTaskPushNotificationConfigRequest {
	return &a2a.DeleteTaskPushNotificationConfigRequest{Tenant: r.GetTenant(), TaskID: r.GetTaskId(), ID: r.GetId()}
}

// ListTaskPushNotificationConfigsRequestToPB converts
// ListTaskPushNotificationConfigs params. page_size has no presence in the
// proto: an unset PageSize and a PageSize of 0 both send 0.
func ListTaskPushNotificationConfigsRequestToPB(r *a2a.ListTaskPushNotificationConfigsRequest) *a2apb.ListTaskPushNotificationConfigsRequest {
	if r == nil {
		return &a2apb.ListTaskPushNotificationConfigsRequest{}
	}
	out := &a2apb.ListTaskPushNotificationConfigsRequest{Tenant: validString(r.Tenant), TaskId: validString(r.TaskID), PageToken: validString(r.PageToken)}
	if r.PageSize != nil {
		out.PageSize = *r.PageSize
	}
	return out
}

// ListTaskPushNotificationConfigsRequestFromPB converts
// ListTaskPushNotificationConfigs params; a page_size of 0 reads as unset.
func ListTaskPushNotificationConfigsRequestFromPB(r *a2apb.ListTaskPushNotificationConfigsRequest) *a2a.ListTaskPushNotificationConfigsRequest {
	out := &a2a.ListTaskPushNotificationConfigsRequest{Tenant: r.GetTenant(), TaskID: r.GetTaskId(), PageToken: r.GetPageToken()}
	if n := r.GetPageSize(); n != 0 {
		out.PageSize = &n
	}
	return out
}

// ListTaskPushNotificationConfigsResponseToPB converts a
// ListTaskPushNotificationConfigs result.
func ListTaskPushNotificationConfigsResponseToPB(r *a2a.ListTaskPushNotificationConfigsResponse) *a2apb.ListTaskPushNotificationConfigsResponse {
	if r == nil {
		return &a2apb.ListTaskPushNotificationConfigsResponse{}
	}
	out := &a2apb.ListTaskPushNotificationConfigsResponse{NextPageToken: validString(r.NextPageToken)}
	if len(r.Configs) > 0 {
		out.Configs = make([]*a2apb.TaskPushNotificationConfig, len(r.Configs))
		for i := range r.Configs {
			out.Configs[i] = pushConfigToPB(&r.Configs[i])
		}
	}
	return out
}

// ListTaskPushNotificationConfigsResponseFromPB converts a
// ListTaskPushNotificationConfigs result.
func ListTaskPushNotificationConfigsResponseFromPB(r *a2apb.ListTaskPushNotificationConfigsResponse) *a2a.ListTaskPushNotificationConfigsResponse {
	out := &a2a.ListTaskPushNotificationConfigsResponse{NextPageToken: r.GetNextPageToken(),
		Configs: make([]a2a.TaskPushNotificationConfig, len(r.GetConfigs()))}
	if len(r.GetConfigs()) > 0 {
		for i, c := range r.GetConfigs() {
			out.Configs[i] = *pushConfigFromPB(c)
		}
	}
	return out
}

// GetExtendedAgentCardRequestToPB converts GetExtendedAgentCard params.
func GetExtendedAgentCardRequestToPB(r *a2a.GetExtendedAgentCardRequest) *a2apb.GetExtendedAgentCardRequest {
	if r == nil {
		return &a2apb.GetExtendedAgentCardRequest{}
	}
	return &a2apb.GetExtendedAgentCardRequest{Tenant: validString(r.Tenant)}
}

// GetExtendedAgentCardRequestFromPB converts GetExtendedAgentCard params.
func GetExtendedAgentCardRequestFromPB(r *a2apb.GetExtendedAgentCardRequest) *a2a.GetExtendedAgentCardRequest {
	return &a2a.GetExtendedAgentCardRequest{Tenant: r.GetTenant()}
}
