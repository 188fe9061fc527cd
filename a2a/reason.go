package a2a

// CodeForReason returns the code whose ErrorInfo reason is reason
// (TASK_NOT_FOUND → CodeTaskNotFound), the inverse of [Error.Reason] for
// the codes this package knows. Bindings whose status codes are shared by
// several errors (gRPC's FAILED_PRECONDITION, HTTP's 400) read the code
// back from the reason.
func CodeForReason(reason string) (code int, ok bool) {
	for c, info := range codes {
		if info.reason == reason {
			return c, true
		}
	}
	return 0, false
}
