// Package a2asrv serves one agent over A2A v1.0.1.
//
// A [Handler] is an http.Handler serving two bindings at one URL: a POST to
// its root runs a JSON-RPC method, the HTTP+JSON binding's resources
// (POST /message:send, GET /tasks/{id}, …, each also under a /{tenant}
// prefix) sit beside it, and GET /.well-known/agent-card.json returns the
// agent card (with ETag and Cache-Control). Every method of the spec is
// served: SendMessage (blocking,
// or returnImmediately), SendStreamingMessage, GetTask, ListTasks, CancelTask,
// SubscribeToTask, the four TaskPushNotificationConfig methods and
// GetExtendedAgentCard. The agent itself is an [Executor]; it reports
// progress through an [Updater], and every update is persisted in the
// [TaskStore] before it is streamed.
//
//	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
//		art := a2a.Artifact{ArtifactID: "answer", Parts: []a2a.Part{a2a.TextPart("hi")}}
//		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
//			return err
//		}
//		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
//	})
//	http.Handle("/agents/hello/", http.StripPrefix("/agents/hello", a2asrv.NewHandler(card, exec, nil)))
//
// # One core, several bindings
//
// The eleven methods are implemented once, by the [Core], against typed
// requests (the a2a package's request types) and, for the two streaming
// methods, a [StreamSink]; nothing in it knows HTTP. A binding is a thin
// type of its own holding the Core: it only turns its wire form into a
// [Call] and a typed request and writes back what the core answers. The
// JSON-RPC binding (with A2A 0.3's dialect) and the HTTP+JSON binding are
// in this package, and the Handler routes between them and the card; the
// gRPC binding (package a2agrpc/grpcsrv) calls the Core's exported methods
// ([Core.SendMessage], [Core.GetTask], …) through [Handler.Core], which
// take the same path. That path, for every call on every binding, is:
//
//  1. the binding decodes the request (its envelope, body, path, query);
//  2. A2A-Version is checked and A2A-Extensions negotiated (from the HTTP
//     headers or the gRPC metadata);
//  3. identifiers are checked (see below) and the tenant taken from the
//     request;
//  4. Options.Identify says who the call acts for ([Call.Scope]);
//  5. the Before of each [Interceptor], in the order of
//     Options.Interceptors; a refusal stops here;
//  6. the method;
//  7. the After of each interceptor that admitted the call, in reverse
//     order, with the response or the error (for a stream, once it ended).
//
// Identity, metering, audit and the governance gate plug in at 4 and 5:
// they see every call whatever its binding.
//
// # Interruptions
//
// Three things can cut an execution short, and the task store answers each
// truthfully:
//
//  1. CancelTask writes TASK_STATE_CANCELED first, then cancels the
//     execution's context with cause [ErrCanceled]; whatever the execution
//     writes afterwards is refused with [ErrRevoked].
//  2. An execution that ends in a cancellation nobody asked for writes
//     nothing: the task keeps its last state, a SendMessage answers with that
//     non-terminal snapshot and a stream closes with no terminal frame.
//  3. A caller that disconnects does not stop the execution: it runs on,
//     detached, and SubscribeToTask re-attaches (snapshot first). A new
//     message naming a task whose execution is live supersedes it (cause
//     [ErrSuperseded]), so one task never has two writers.
//
// # Crash and shutdown recovery
//
// A task whose execution was running when its process died would stay
// SUBMITTED or WORKING forever. A durable store that implements [Recoverer]
// (store/sqlite and store/postgres do) leases each process's claim on the
// tasks it writes; [Recover] settles the tasks of processes whose lease has
// lapsed: FAILED, with an agent status message ([RestartedText]) also
// appended to the history, at the stored version plus [RecoveryVersionGap].
// Orphans are not re-run: the executor may have had side effects before the
// crash, and nothing tells whether repeating them is safe. INPUT_REQUIRED and
// AUTH_REQUIRED tasks wait for their user, not for a process, and are left
// as they are. The memory store loses everything in a crash, so it needs no
// recovery.
//
// Handler.Shutdown does the same for what it cuts off at the end of its
// grace period, right away: each execution still running is cancelled
// (cause [ErrShutdown]) and its task settled FAILED with [ShutdownText],
// through the ordinary versioned write; a blocking SendMessage or a stream
// still waiting on it is answered with a JSON-RPC error
// ([CodeShuttingDown], -32603, "server shutting down; the task was left in
// state …", the task id and state in the ErrorInfo metadata), as an SSE
// error event on a stream, before Shutdown returns.
//
// # Streams and sequence numbers
//
// Each SSE event carries an id: the task's store version after the write the
// frame reports. Versions grow by one per write and survive restarts, so a
// client that lost its stream knows exactly which frames it saw; it
// resubscribes and receives a Task snapshot (whose id is the version it
// reflects) followed by every later frame. A task settled by crash recovery
// jumps [RecoveryVersionGap] versions instead of one. Message-only answers
// carry no id.
// Frames are fanned out in write order to every stream on the task. Idle
// streams get ": keep-alive" comments; responses carry Cache-Control:
// no-cache and X-Accel-Buffering: no.
//
// # Write path
//
// Every write reaches the [TaskStore] as cheaply as its visibility allows:
//
//   - A status update is stored before it is streamed, as an appended event
//     ([TaskStore.Append]): the store keeps the event, not a rewrite of the
//     task, so its cost is the event's size.
//   - Artifact updates (a stream of chunks) are streamed at once and stored
//     as appended events in batches: with the next status update, after
//     Options.ArtifactFlushInterval (default 50ms), or every 512 chunks,
//     whichever comes first, and always before the execution's end is
//     announced. A crash can lose at most the last interval of chunks of a
//     task that was not final; such a task is settled as failed when the
//     server starts again, so no answered task loses output. GetTask and
//     ListTasks may lag a stream by up to the interval; a stream and
//     SubscribeToTask in this process never do.
//   - A blocking SendMessage that starts a new task keeps the task in
//     memory until it is final or interrupted and then stores it once,
//     whole: before the answer nobody but the caller can know the task's
//     id, so no reader can tell. A task still running after a second is
//     stored as it stands, so long executions show up in listings.
//   - Whole-task writes (CancelTask, the first write of a continuation, the
//     final write of a task with many stored events) replace the stored
//     body and the events with it.
//
// Work is linear in the output: the server applies events to its cached
// task in place and never copies the task per write (readers get copies),
// and no write re-encodes what was stored before it.
//
// What each copy in a stored task is for: the caller's messages are in the
// history; the agent's latest status message is in status.message only,
// and moves into the history when a later status replaces it, so the
// history reads as the conversation; outputs are in artifacts. An agent
// that puts its output in both an artifact and its status message (the
// agent SDK's default, so a caller reading either finds it) stores it
// twice; agent.Result.Message avoids that.
//
// # Replicas
//
// Several processes may serve one agent from one store (replicas of
// novaos serve on one PostgreSQL). A task's execution runs in the process
// that received its message; any process may answer GetTask, ListTasks,
// SubscribeToTask, CancelTask or a continuation of it. With
// Options.TaskFeed (store/postgres's LISTEN/NOTIFY feed, or
// MemoryTaskStore.Feed for handlers in one process), each process hears
// of the writes the others commit:
//
//   - A stream on a process that does not run the task (SubscribeToTask, or
//     a client resuming its stream elsewhere) gets the snapshot, then every
//     later write with the version the executing process gave it: no gap, no
//     duplicate. Appended events arrive as the frames the executing process
//     streamed; a whole-task write as a status update when it changed the
//     status alone (CancelTask), else as the whole task (a continuation, a
//     settlement by crash recovery). Without an execution in this process a
//     non-final task's stream stays open until a final frame: another
//     process runs it, or crash recovery settles it once that one is dead.
//   - CancelTask on any process writes CANCELED; the executing process hears
//     of it and cancels its execution's context with cause [ErrCanceled]. A
//     newer message to another process supersedes the execution
//     ([ErrSuperseded]) the same way.
//   - A feed that may have missed writes (a dropped connection) tells every
//     watcher, which catches up from the store by version
//     (TaskFeed.CatchUp), as it does for a write too large to announce.
//
// What a process sees of another's execution is what that one has stored:
// status updates at once; artifact chunks within
// Options.ArtifactFlushInterval (the executing process streams them to its
// own subscribers at once); a blocking SendMessage's new task not before it
// is final or a second old (see Write path), which is before anyone but its
// caller can name it. A cancel from another process that overtakes chunks
// the executing process streamed but had not stored yet drops them (they
// are logged), as a crash would; only that process's own subscribers can
// have seen them, and their numbers are reused by the writes that follow.
// Without a feed, a Handler assumes it is its tasks' only writer: a stream
// then sees only the writes of executions in its own process.
//
// # Decisions where the spec is silent or inconsistent
//
//   - A2A-Version is required: absent or empty means 0.3, served through
//     the 0.3 layer for 0.3's methods (or -32009 with RefuseV03); any
//     version other than 1.0 or 0.3 is -32009 (patch numbers are
//     ignored). A call read as 0.3 whose method 0.3 lacks is answered for
//     what it most likely is: a v1 method name without the header is
//     -32009 naming the missing header, a v1 name with an explicit 0.3
//     -32601 (-32009 with RefuseV03), a name neither version has -32601.
//     Otherwise the version is checked before the method, after the
//     envelope; under 1.0, 0.3 method names (message/send) are -32601.
//     It is read from the header
//     only: the JSON-RPC binding carries service parameters in headers
//     (§9.2); the ?A2A-Version= query parameter of §3 serves bindings that
//     have no body, and taking it here would let a page on another origin
//     run methods with a request it may send without a CORS preflight.
//   - A POST whose Content-Type is not a JSON type (application/json,
//     application/a2a+json or any application/*+json, charset UTF-8 if
//     given) is answered HTTP 415 with a -32600 error and a null id,
//     before its body is read. A missing Content-Type is refused too: the
//     requests a browser sends cross-site without a preflight are
//     text/plain, form-encoded, multipart or typeless, and none may run a
//     method. The spec names application/json (§9.1) but no error for
//     another type.
//   - The envelope and params are read strictly (see the a2a package):
//     keys match exactly, so "METHOD" is an unknown member, not the method;
//     a key repeated in the envelope is -32600 and one repeated anywhere in
//     params, free-form metadata and data parts included, is -32602, both
//     naming the key (and, in params, where it is).
//   - A request without an id member is a notification (JSON-RPC 2.0 §4.1):
//     it is answered HTTP 204 with no body and not executed, whatever its
//     method. A2A defines no notifications, and a SendMessage whose answer
//     nobody can read would only do unasked work. "id": null is a request
//     (JSON-RPC discourages it but does not make it a notification) and is
//     answered with a null id. A malformed envelope without an id is still
//     answered with its error, as JSON-RPC 2.0 §5 asks.
//   - Identifiers (message, task, context and push-config ids,
//     referenceTaskIds, the tenant) holding a control character (C0, DEL
//     or C1) or longer than Options.MaxIDBytes (default 256 bytes) are
//     -32602 naming the field (also in the ErrorInfo metadata "field"); a
//     JSON-RPC id longer than that, as written, is -32600 with a null id.
//   - A2A-Extensions may list at most Options.MaxExtensions distinct URIs
//     (default 64) of at most Options.MaxExtensionURIBytes (default 1024);
//     beyond is -32600 (an invalid request, not ExtensionSupportRequired,
//     which says the agent requires an extension the client did not ask
//     for). The header is read in time linear in its size.
//   - Blocking SendMessage waits for a terminal or interrupted state (the
//     §3.2.2 wording, not §3.1.1's); streams close at either.
//   - A task is stored at the executor's first write, so an executor may
//     answer with a message (Updater.Reply) and leave no task behind. With
//     returnImmediately the task is stored as SUBMITTED before the executor
//     runs, and a Reply then completes it with that message.
//   - The first frame of every task stream is the whole Task (§3.1.2), also
//     when a message continues an existing task.
//   - A message that continues an INPUT_REQUIRED or AUTH_REQUIRED task is
//     the input it waited for: the task is WORKING again from that message
//     on (unless the executor's first write sets another state), so a
//     blocking call or a stream about the continuation runs to the agent's
//     answer instead of ending on the stale interrupted state.
//   - SubscribeToTask on a task with no execution running in this process
//     sends the snapshot and closes: nothing here will change it. Terminal
//     tasks are refused with -32004.
//   - A streaming call refused before its stream starts is answered with one
//     SSE error event when the caller accepts text/event-stream (a2a-go's
//     client reads nothing else on a streaming call), otherwise with a plain
//     JSON-RPC error response (what a2a-js and curl expect).
//   - Errors use the v1.0.1 codes with a google.rpc.ErrorInfo detail and HTTP
//     200, except a body over the limit (413, -32600), a body that is not
//     JSON by its Content-Type (415, -32600) and a caller that
//     Options.Identify rejects (401, -31401, the code a2a-go uses).
//   - HTTP+JSON errors are the google.rpc.Status body of spec §11.6,
//     {"error":{"code","status","message","details":[ErrorInfo]}}, with
//     the v1.0.1 HTTP status of the code (§5.4); 413 and 415 as above;
//     -31401 is 401 UNAUTHENTICATED. Answers are application/a2a+json;
//     DeleteTaskPushNotificationConfig answers {} (google.protobuf.Empty).
//   - HTTP+JSON paths are matched as they are first and only then with
//     their first segment taken as the tenant, so a tenant named like a
//     resource ("tasks", "message:send") cannot be addressed by prefix;
//     the request body's tenant, when given, must match the prefix. Path
//     segments are unescaped one by one, so a task id may hold a "/"
//     written %2F; a ":" in an id is part of it unless the segment ends in
//     :cancel or :subscribe.
//   - SubscribeToTask over HTTP+JSON takes POST (the spec's text) and GET
//     (its proto). GET methods take their parameters from the query, with
//     the spec's camelCase names; unknown parameters are ignored and a
//     known one given twice is -32602. A GET may carry A2A-Version in the
//     query (§3.2.6) when it has no header; requests with a body may not,
//     for the cross-site reason above.
//   - A streaming call refused before its stream starts gets a plain error
//     response on HTTP+JSON (a client checks the status first); an error
//     after the stream started is an SSE event named "error" whose data is
//     the error body.
//   - referenceTaskIds resolve only within the message's contextId; others
//     are passed to the executor as unresolved, never leaked.
//   - Push configs are stored and served (credentials are write-only and
//     never returned). Delivering webhooks is not this handler's job: a
//     store that keeps an outbox (PushOutbox; MemoryTaskStore.PushOutbox,
//     or a database's) queues every task write's notifications in the
//     write, and package a2a/a2apush delivers them, at least once and in
//     order per config. Storing a config queues the task as it then
//     stands first (A2A says nothing of a config's first notification).
//     Without a PushConfigStore the four methods answer -32003.
//   - A webhook URL is checked when it is stored, by CreateTaskPushNotification
//     Config and inline in SendMessage's configuration, against
//     Options.PushURLPolicy (a netguard.Policy): an absolute http(s) URL of
//     at most 2048 bytes, standard host spelling, port 1-65535, and by
//     default a public host only, so loopback, private, link-local and
//     metadata addresses (also inside IPv6 forms such as NAT64 or 6to4) are
//     refused with -32602. nil is the strict default because the handler
//     cannot know where it listens; a server on loopback may pass
//     AllowLoopback. Names are not resolved here: a2apush resolves them
//     at every delivery and checks each address it would dial.
//   - Task ids of other callers (Options.Identify's Scope) are "not found"
//     on every path, checked inside the store.
package a2asrv
