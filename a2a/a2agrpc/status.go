package a2agrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"novaos.dev/novaos/a2a"
)

// codeUnauthenticated is a2asrv.CodeUnauthenticated (a2a-go's -31401),
// spelled here because a binding must not import the server.
const codeUnauthenticated = -31401

// grpcCode is the one mapping from A2A error codes to gRPC codes (A2A
// v1.0.1 §5.4, with the standard JSON-RPC codes after their meaning).
// Codes it does not know are INTERNAL.
func grpcCode(code int) codes.Code {
	switch code {
	case a2a.CodeTaskNotFound:
		return codes.NotFound
	case a2a.CodeTaskNotCancelable, a2a.CodePushNotificationNotSupported, a2a.CodeUnsupportedOperation,
		a2a.CodeExtendedAgentCardNotConfigured, a2a.CodeExtensionSupportRequired, a2a.CodeVersionNotSupported:
		return codes.FailedPrecondition
	case a2a.CodeContentTypeNotSupported, a2a.CodeInvalidParams, a2a.CodeParseError, a2a.CodeInvalidRequest:
		return codes.InvalidArgument
	case a2a.CodeMethodNotFound:
		return codes.Unimplemented
	case codeUnauthenticated:
		return codes.Unauthenticated
	}
	return codes.Internal
}

// a2aCode reads a gRPC code back when a status carries no ErrorInfo that
// names the error. FAILED_PRECONDITION stands for six A2A errors; without
// the reason it reads as the broadest, UnsupportedOperation. Codes with no
// A2A meaning (UNAVAILABLE, DEADLINE_EXCEEDED, …) read as internal errors:
// a caller that retries on them looks at the status code itself.
func a2aCode(c codes.Code) int {
	switch c {
	case codes.NotFound:
		return a2a.CodeTaskNotFound
	case codes.FailedPrecondition:
		return a2a.CodeUnsupportedOperation
	case codes.InvalidArgument:
		return a2a.CodeInvalidParams
	case codes.Unimplemented:
		return a2a.CodeMethodNotFound
	case codes.Unauthenticated:
		return codeUnauthenticated
	}
	return a2a.CodeInternalError
}

// Status converts a method's error into the gRPC status to answer with:
// the A2A code's gRPC code, the error's message, and a google.rpc.ErrorInfo
// detail with the reason the JSON-RPC binding puts in error.data (see
// [a2a.Error.Reason]), domain a2a-protocol.org and the error's metadata.
// An error with no *a2a.Error in its chain is answered as an internal
// error that does not reveal it, like the JSON-RPC binding does; a status
// error from gRPC itself, or a context's cancellation or deadline, keeps
// its own code. A nil error is OK.
func Status(err error) *status.Status {
	if err == nil {
		return status.New(codes.OK, "")
	}
	var e *a2a.Error
	if !errors.As(err, &e) {
		if s, ok := status.FromError(err); ok {
			return s
		}
		switch {
		case errors.Is(err, context.Canceled):
			return status.New(codes.Canceled, context.Canceled.Error())
		case errors.Is(err, context.DeadlineExceeded):
			return status.New(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
		e = a2a.AsError(err)
	}
	st := status.New(grpcCode(e.Code), validString(e.Text()))
	info := &errdetails.ErrorInfo{Reason: reason(e), Domain: a2a.ErrorDomain}
	if len(e.Metadata) > 0 {
		info.Metadata = make(map[string]string, len(e.Metadata))
		for k, v := range e.Metadata {
			info.Metadata[validString(k)] = validString(v)
		}
	}
	if with, err := st.WithDetails(info); err == nil {
		return with
	}
	return st
}

// Error converts the error of a gRPC call into an *a2a.Error, the error
// the JSON-RPC client returns for the same failure. The code comes from
// the ErrorInfo detail's reason when its domain is a2a-protocol.org (gRPC
// codes are shared by several A2A errors), else from the gRPC code; the
// message is the status message; Metadata is the ErrorInfo's; Data holds
// the status details as ProtoJSON, the JSON-RPC binding's error.data, so
// a proxy can pass them on. An error that is not a gRPC status is
// returned as [a2a.AsError] returns it. A nil error is nil.
func Error(err error) *a2a.Error {
	if err == nil {
		return nil
	}
	var e *a2a.Error
	if errors.As(err, &e) {
		return e
	}
	st, ok := status.FromError(err)
	if !ok {
		return a2a.AsError(err)
	}
	out := &a2a.Error{Code: a2aCode(st.Code()), Message: st.Message()}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != a2a.ErrorDomain {
			continue
		}
		if code, ok := codeForReason(info.GetReason()); ok {
			out.Code = code
		}
		if len(info.GetMetadata()) > 0 {
			out.Metadata = info.GetMetadata()
		}
		break
	}
	out.Data = detailsJSON(st)
	return out
}

// detailsJSON writes a status's details as a JSON array of ProtoJSON Any
// objects; a detail whose type this binary does not know is left out.
func detailsJSON(st *status.Status) []byte {
	details := st.Proto().GetDetails()
	if len(details) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteByte('[')
	n := 0
	for _, d := range details {
		j, err := protojson.Marshal(d)
		if err != nil {
			continue
		}
		var c bytes.Buffer
		if json.Compact(&c, j) != nil {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		b.Write(c.Bytes())
		n++
	}
	if n == 0 {
		return nil
	}
	b.WriteByte(']')
	return b.Bytes()
}

// reasonUnauthenticated is the ErrorInfo reason of codeUnauthenticated,
// which package a2a does not register yet.
const reasonUnauthenticated = "UNAUTHENTICATED"

func reason(e *a2a.Error) string {
	if e.Code == codeUnauthenticated {
		return reasonUnauthenticated
	}
	return e.Reason()
}

func codeForReason(r string) (int, bool) {
	if r == reasonUnauthenticated {
		return codeUnauthenticated, true
	}
	return a2a.CodeForReason(r)
}
