// Package a2aclient calls A2A v1.0 agents over every binding their cards
// offer.
//
// There is one Client per agent, built from its card (New), from the URL its
// card is published under (NewFromURL, through a caching Resolver) or from a
// bare endpoint URL (NewForURL).
//
//	c, err := a2aclient.NewFromURL(ctx, "http://127.0.0.1:8080/agents/echo", nil)
//	if err != nil { … }
//	for frame, err := range c.SendStreamingMessage(ctx, a2aclient.TextRequest("hi", "", "")) {
//		if err != nil { … } // the agent's error, or a stream that ended early
//		fmt.Println(frame.TaskID())
//	}
//
// Bindings: the client speaks JSON-RPC and HTTP+JSON (REST) itself; other
// bindings (gRPC, a custom one) plug in as a Transport through
// Options.TransportFactories. A card lists its interfaces in the agent's
// order of preference; New calls the first one whose binding the client
// has a transport for, or, when Options.Transports is set, the first of
// those bindings (in the caller's order) that the card offers, and uses
// that interface's URL and tenant. Over HTTP+JSON each method has its own
// verb and path (POST /message:send, GET /tasks/{id}, …) under the
// interface URL, with a /{tenant} prefix when the call has a tenant;
// SubscribeToTask is sent as POST, as the spec's text says, and as GET
// from the first 405 on (the spec's proto says GET).
//
// Every call sends `A2A-Version: 1.0`, the extensions in force as
// `A2A-Extensions`, and the selected interface's tenant (unless the
// request names one): in the params over JSON-RPC, in the path over
// HTTP+JSON.
//
// A2A 0.3 agents are called transparently. ParseCard (and so the Resolver
// and NewFromURL) reads a 0.3 card (url, preferredTransport,
// additionalInterfaces) as interfaces stating protocol version 0.3.x, and
// a JSON-RPC interface of 0.3 is selected when the card offers no 1.x
// interface of an acceptable binding. The JSON-RPC transport then speaks
// 0.3 (package a2av03): 0.3 method names and params, no A2A-Version, the
// extensions in X-A2A-Extensions, results and stream frames converted to
// the v1 types the Client returns; tenants are not sent. ListTasks, which
// 0.3's JSON-RPC binding lacks, fails with a2a.ErrUnsupportedOperation
// without a request. Interceptors see every call, on every binding, before it is
// sent and its outcome after, and one that is a Finisher learns when the
// call is over (package a2a/a2aotel's span ends there); an AuthProvider (Bearer, APIKey,
// RequireAPIKey, SessionAuth over a CredentialStore, SchemeAuth over a
// CredentialService) adds credentials. SchemeAuth picks the credential by
// the card's security schemes: the schemes its securityRequirements name,
// in order, each sent in the shape the scheme declares, and the fallback
// provider when the service has none. Unary calls are
// bounded by Options.Timeout, or WithTimeout for one call.
//
// Skills: WithSkill sends the skill to run as message metadata
// SkillIDMetadataKey ("skillId"), which NovaOS agents (package agent) read.
//
// Trust: Options.ConnectGuard and ResolverOptions.ConnectGuard (a
// netguard.Policy, off by default so localhost works) check every
// connection's resolved address at dial time, redirects and the URL, to
// refuse DNS rebinding to loopback, private and metadata addresses.
// ResolverOptions.Verify checks each fetched card before it is cached;
// cardsig.Verifier verifies its signatures against keys the caller names. Resolver.Connect builds a
// client from a card that may come from a third party: it requires a host
// allow-list the card's interface URL must match, and turns the guard on.
//
// Errors: an error answered by the agent (a JSON-RPC error, or an
// HTTP+JSON google.rpc.Status body, read by its ErrorInfo reason, else by
// its HTTP status) is a *CallError that unwraps to the *a2a.Error, so
// errors.Is(err, a2a.ErrTaskNotFound) works whatever the binding;
// codes without a sentinel match ErrClassA2A, ErrClassJSONRPC or
// ErrClassApplication by range. A transport failure or an HTTP 404 matches
// ErrUnreachable; HTTP 401 (or code -31401), 403 and 429 match
// ErrUnauthenticated, ErrForbidden and ErrRateLimited; an answer with no
// A2A error in it is an *HTTPError whose Detail says what a plain-text or
// problem+json body said. SendMessageSafe returns a Result instead of an
// error.
//
// SendStreamingMessage opens no stream when the card says
// capabilities.streaming is false or Options.DisableStreaming is set: it
// calls SendMessage and yields the answer as its one frame.
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
//
// # Where this package differs from the NovaOS Python SDK
//
//   - A card that does not state capabilities.streaming streams; that SDK
//     reads a missing statement as false. The A2A field is optional, and
//     a card without it has not said the agent cannot stream (a client
//     with no card streams in both).
//   - Streaming off makes the SendMessage call unbounded by
//     Options.Timeout, as a stream is; ctx and WithTimeout bound it.
//   - The connect guard is a netguard.Policy, not two booleans: the
//     Python allow_private_ips skips the range check altogether, while
//     AllowLoopback and AllowPrivate never admit cloud metadata or
//     reserved addresses. The guard checks the very address each
//     connection is made to, after resolution, so there is no second
//     lookup to pin; it covers the HTTP bindings and is handed to other
//     transports in TransportConfig.ConnectGuard (package
//     a2a/a2agrpc/grpcclient's dialer applies it).
//   - Resolver.Connect's allow-list applies to the card's interface URL;
//     the card URL itself is the caller's. The guard it turns on is the
//     zero Policy (public addresses only) unless the caller gives one.
//   - Signatures are verified on the card as read into a2a.AgentCard,
//     which is what package a2a/cardsig canonicalizes (see there).
//   - SchemeAuth is an AuthProvider, not an interceptor: here every
//     AuthProvider already runs on every call. It tries each scheme the
//     card names until the service has a credential, where that SDK asks
//     for one scheme; its service returns a bare value formatted by the
//     scheme (a provider of one's own sets any header). An API key in the
//     query is refused, as a call has no URL to add it to.
//   - The API key is passed in: the package never reads the environment
//     (APIKeyEnv names the variable a program reads).
package a2aclient
