package a2agrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2agrpc"
)

// errorInfo returns the status's ErrorInfo detail, or nil.
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info
		}
	}
	return nil
}

// TestStatus holds the A2A v1.0.1 gRPC code table (§5.4) and the
// ErrorInfo every answer carries.
func TestStatus(t *testing.T) {
	tests := []struct {
		code   int
		grpc   codes.Code
		reason string
		// back is the code read back when it is not code: a code
		// without a reason of its own comes back as what its gRPC
		// code means.
		back int
	}{
		{a2a.CodeTaskNotFound, codes.NotFound, "TASK_NOT_FOUND", 0},
		{a2a.CodeTaskNotCancelable, codes.FailedPrecondition, "TASK_NOT_CANCELABLE", 0},
		{a2a.CodePushNotificationNotSupported, codes.FailedPrecondition, "PUSH_NOTIFICATION_NOT_SUPPORTED", 0},
		{a2a.CodeUnsupportedOperation, codes.FailedPrecondition, "UNSUPPORTED_OPERATION", 0},
		{a2a.CodeContentTypeNotSupported, codes.InvalidArgument, "CONTENT_TYPE_NOT_SUPPORTED", 0},
		{a2a.CodeInvalidAgentResponse, codes.Internal, "INVALID_AGENT_RESPONSE", 0},
		{a2a.CodeExtendedAgentCardNotConfigured, codes.FailedPrecondition, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 0},
		{a2a.CodeExtensionSupportRequired, codes.FailedPrecondition, "EXTENSION_SUPPORT_REQUIRED", 0},
		{a2a.CodeVersionNotSupported, codes.FailedPrecondition, "VERSION_NOT_SUPPORTED", 0},
		{a2a.CodeParseError, codes.InvalidArgument, "PARSE_ERROR", 0},
		{a2a.CodeInvalidRequest, codes.InvalidArgument, "INVALID_REQUEST", 0},
		{a2a.CodeMethodNotFound, codes.Unimplemented, "METHOD_NOT_FOUND", 0},
		{a2a.CodeInvalidParams, codes.InvalidArgument, "INVALID_PARAMS", 0},
		{a2a.CodeInternalError, codes.Internal, "INTERNAL_ERROR", 0},
		{-31401, codes.Unauthenticated, "UNAUTHENTICATED", 0},
		{-32050, codes.Internal, "A2A_ERROR", a2a.CodeInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			in := &a2a.Error{Code: tt.code, Message: "what went wrong", Metadata: map[string]string{"taskId": "t-1"}}
			st := a2agrpc.Status(fmt.Errorf("get task: %w", in))
			if st.Code() != tt.grpc || st.Message() != "what went wrong" {
				t.Errorf("status = %v %q, want %v %q", st.Code(), st.Message(), tt.grpc, "what went wrong")
			}
			info := errorInfo(st)
			if info == nil {
				t.Fatalf("status %v has no ErrorInfo", st.Proto())
			}
			if info.GetReason() != tt.reason || info.GetDomain() != "a2a-protocol.org" || info.GetMetadata()["taskId"] != "t-1" {
				t.Errorf("ErrorInfo = %v, want reason %s, domain a2a-protocol.org, metadata taskId=t-1", info, tt.reason)
			}

			// and back, through the bytes a client reads
			wire, err := proto.Marshal(st.Proto())
			if err != nil {
				t.Fatal(err)
			}
			want := tt.code
			if tt.back != 0 {
				want = tt.back
			}
			got := a2agrpc.Error(statusFromWire(t, wire).Err())
			if got.Code != want || got.Message != "what went wrong" || got.Metadata["taskId"] != "t-1" {
				t.Errorf("Error(Status(e)) = %+v, want code %d and the same message and metadata", got, want)
			}
			if !errors.Is(got, &a2a.Error{Code: want}) {
				t.Errorf("errors.Is does not match code %d", want)
			}
			var data []map[string]any
			if err := json.Unmarshal(got.Data, &data); err != nil || len(data) != 1 ||
				data[0]["@type"] != a2a.ErrorInfoType || data[0]["reason"] != tt.reason {
				t.Errorf("Data = %s (%v), want the ErrorInfo as ProtoJSON", got.Data, err)
			}
		})
	}
}

func statusFromWire(t *testing.T, wire []byte) *status.Status {
	t.Helper()
	st := status.New(codes.OK, "")
	p := st.Proto()
	if err := proto.Unmarshal(wire, p); err != nil {
		t.Fatal(err)
	}
	return status.FromProto(p)
}

// TestStatusOfOtherErrors: errors that are not *a2a.Error.
func TestStatusOfOtherErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    codes.Code
		message string
		reason  string
	}{
		{"nil", nil, codes.OK, "", ""},
		{"plain error is internal and hidden", errors.New("db password wrong at 10.0.0.3"), codes.Internal, "Internal error", "INTERNAL_ERROR"},
		{"canceled", fmt.Errorf("send: %w", context.Canceled), codes.Canceled, "context canceled", ""},
		{"deadline", context.DeadlineExceeded, codes.DeadlineExceeded, "context deadline exceeded", ""},
		{"gRPC status passes through", status.Error(codes.ResourceExhausted, "too many streams"), codes.ResourceExhausted, "too many streams", ""},
		{"a2a error wins over the context", errors.Join(context.Canceled, a2a.NewError(a2a.CodeTaskNotFound, "gone")), codes.NotFound, "gone", "TASK_NOT_FOUND"},
		{"sentinel without message gets the code's text", a2a.ErrTaskNotCancelable, codes.FailedPrecondition, "Task cannot be canceled", "TASK_NOT_CANCELABLE"},
		{"invalid UTF-8 in the message", &a2a.Error{Code: a2a.CodeInvalidParams, Message: "bad \xff", Metadata: map[string]string{"k\xff": "v\xfe"}}, codes.InvalidArgument, "bad \uFFFD", "INVALID_PARAMS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := a2agrpc.Status(tt.err)
			if st.Code() != tt.code || st.Message() != tt.message {
				t.Errorf("status = %v %q, want %v %q", st.Code(), st.Message(), tt.code, tt.message)
			}
			if got := errorInfo(st).GetReason(); got != tt.reason {
				t.Errorf("ErrorInfo reason = %q, want %q", got, tt.reason)
			}
			if _, err := proto.Marshal(st.Proto()); err != nil {
				t.Errorf("status does not marshal: %v", err)
			}
		})
	}
}

// TestError reads statuses a peer may send: the ErrorInfo reason decides
// among the errors that share a gRPC code, and statuses without one fall
// back to the code.
func TestError(t *testing.T) {
	withInfo := func(c codes.Code, msg, reason, domain string) error {
		st, err := status.New(c, msg).WithDetails(protoadapt.MessageV1Of(&errdetails.ErrorInfo{Reason: reason, Domain: domain}))
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"reason over a shared code", withInfo(codes.FailedPrecondition, "m", "TASK_NOT_CANCELABLE", "a2a-protocol.org"), a2a.CodeTaskNotCancelable},
		{"reason over a contradicting code", withInfo(codes.Internal, "m", "VERSION_NOT_SUPPORTED", "a2a-protocol.org"), a2a.CodeVersionNotSupported},
		{"reason of an unauthenticated call", withInfo(codes.Unauthenticated, "m", "UNAUTHENTICATED", "a2a-protocol.org"), -31401},
		{"reason from another domain is ignored", withInfo(codes.FailedPrecondition, "m", "TASK_NOT_FOUND", "example.com"), a2a.CodeUnsupportedOperation},
		{"unknown reason keeps the code", withInfo(codes.NotFound, "m", "SOMETHING_NEW", "a2a-protocol.org"), a2a.CodeTaskNotFound},
		{"NOT_FOUND alone", status.Error(codes.NotFound, "m"), a2a.CodeTaskNotFound},
		{"FAILED_PRECONDITION alone", status.Error(codes.FailedPrecondition, "m"), a2a.CodeUnsupportedOperation},
		{"INVALID_ARGUMENT alone", status.Error(codes.InvalidArgument, "m"), a2a.CodeInvalidParams},
		{"UNIMPLEMENTED alone", status.Error(codes.Unimplemented, "m"), a2a.CodeMethodNotFound},
		{"UNAUTHENTICATED alone", status.Error(codes.Unauthenticated, "m"), -31401},
		{"UNAVAILABLE", status.Error(codes.Unavailable, "m"), a2a.CodeInternalError},
		{"not a status", errors.New("m"), a2a.CodeInternalError},
		{"an *a2a.Error is itself", fmt.Errorf("x: %w", a2a.NewError(a2a.CodeTaskNotFound, "m")), a2a.CodeTaskNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a2agrpc.Error(tt.err)
			if got.Code != tt.code {
				t.Errorf("code = %d, want %d", got.Code, tt.code)
			}
		})
	}
	if a2agrpc.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	// A status message reaches the caller as the error's message.
	got := a2agrpc.Error(status.Error(codes.NotFound, "task t-9 not found"))
	if d := cmp.Diff(&a2a.Error{Code: a2a.CodeTaskNotFound, Message: "task t-9 not found"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
