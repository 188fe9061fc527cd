// Package a2aclient calls A2A v1.0 agents over the JSON-RPC binding: one
// Client per agent, built from its card (New), from the URL its card is
// published under (NewFromURL, through a caching Resolver) or from a bare
// endpoint URL (NewForURL).
//
//	c, err := a2aclient.NewFromURL(ctx, "http://127.0.0.1:8080/agents/echo", nil)
//	if err != nil { … }
//	for frame, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest("hi", "", "")) {
//		if err != nil { … } // a JSON-RPC error, or a stream that ended early
//		fmt.Println(frame.TaskID())
//	}
//
// Every call sends `A2A-Version: 1.0`, the extensions in force as
// `A2A-Extensions`, and the selected interface's tenant in its params
// (unless the request names one). Interceptors see every call before it is
// sent and its outcome after; an AuthProvider (Bearer, APIKey, SessionAuth
// over a CredentialStore) adds credentials. Unary calls are bounded by
// Options.Timeout, or WithTimeout for one call.
//
// Errors: a JSON-RPC error answered by the agent is a *CallError that
// unwraps to the *a2a.Error, so errors.Is(err, a2a.ErrTaskNotFound) works;
// codes without a sentinel match ErrClassA2A, ErrClassJSONRPC or
// ErrClassApplication by range. A transport failure or an HTTP 404 matches
// ErrUnreachable; HTTP 401 (or code -31401), 403 and 429 match
// ErrUnauthenticated, ErrForbidden and ErrRateLimited. SendMessageSafe
// returns a Result instead of an error.
//
// Streams are iter.Seq2 iterators with two guarantees the reference SDKs
// lack. A stream that closes before a terminal or interrupted state (or a
// message) is never a success: it is resumed with SubscribeToTask (capped
// exponential backoff), and if that fails the iterator yields an error
// matching ErrStreamIncomplete. A resumed stream loses and repeats nothing
// when the server numbers its frames (the SSE id is the task's sequence
// number, as NovaOS's server does): frames at or below the last sequence
// seen are skipped, and the opening snapshot is yielded only when newer.
// With a server that does not number frames, the snapshot is always
// yielded and may repeat what an earlier frame said.
package a2aclient
