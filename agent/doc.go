// Package agent builds A2A agents out of skills: the Go form of the
// AgentBuilder SDK.
//
// An Agent is a named, versioned set of skills. Each Skill has card metadata
// (id, name, description, tags, examples, input and output media types) and
// a HandlerFunc. The Agent implements a2asrv.Executor, so it plugs straight
// into an a2asrv.Handler, and it generates its own AgentCard from the
// registered skills, so the card never advertises a skill the agent would
// reject.
//
//	a := agent.New("greeter", "1.0.0", &agent.Options{Description: "Says hello"})
//	a.MustRegister(agent.Skill{
//		ID: "greet", Description: "Greets the caller",
//		Handler: func(c *agent.Context) (agent.Result, error) {
//			return agent.Result{Output: "Hello, " + c.Input()}, nil
//		},
//	})
//	http.Handle("/agents/greeter/", http.StripPrefix("/agents/greeter", a.Handler("https://example.com/agents/greeter", nil)))
//
// # Routing
//
// A caller picks a skill with the message metadata key "skillId"
// (SkillIDMetadataKey); request metadata is read when the message has none,
// and a follow-up message on an existing task reuses the skill the task's
// first message named. An agent with a single skill runs it by default. A
// message naming an unknown skill, or naming none when there are several,
// gets a TASK_STATE_REJECTED task whose status message says why.
//
// # Context
//
// A handler receives a *Context. It is a context.Context: Done closes when
// the task is cancelled (IsCancelled then reports true), superseded by a
// newer message, or the server shuts down. Embedding the execution's
// context in a per-call value is deliberate here: the Context lives exactly
// as long as one handler call, and skills pass it to anything that takes a
// context.
//
// The Context also carries the platform's execution context. The platform
// sends it as a JSON object in SendMessage request metadata (or, for a
// hand-built message, message metadata) under the key "novaos.dev/context"
// (ContextMetadataKey); request metadata wins when both have one. Its fields
// (PlatformContext) are snake_case: run_id, tenant_id, user_id, agent_id,
// idempotency_key, conversation_id, gateway_url, trace_id, traceparent,
// history ([{role, content}], oldest first), config. Tenant and User prefer the server-verified scope
// over the platform's claims. TraceID and Traceparent come from the inbound
// traceparent header first. CustomHeaders filters out credentials,
// platform (X-NovaOS-*), protocol (A2A-*), trace-context and hop-by-hop
// headers.
//
// Context.Execution is the NovaOS Python SDK's ExecutionContext: the
// execution token (the platform context's execution_token, else the auth
// proxy's X-NovaOS-Execution-Token header) and the ids, with AuthHeaders
// (that SDK's to_auth_headers) for calling platform services as the agent. An
// agent that checks tokens itself serves its handler behind
// identity.Middleware; Execution then holds the verified claims. The
// token is a secret.Value: printing or logging the Context, its
// PlatformContext or the Execution never shows it.
//
// Execution is at-least-once: a skill with side effects should deduplicate
// on IdempotencyKey, never on RunID.
//
// A new task's id is the run id, as in the NovaOS Python SDK
// (Agent.NewTaskID, which Handler installs as a2asrv.Options.NewTaskID): a
// platform run and its task share one id. When the message names no task and
// the run id is unusable as an id (over 128 bytes, or a character outside
// letters, digits and "-_.:") or already names a task (a retry of the run, or
// any task live in the process), the task gets a fresh id instead; TaskID and
// RunID then differ, and nothing of the other task is read or changed.
//
// # Memory
//
// When a request's platform context carries a memory budget (the
// platform sends one for an instance that declares memory), the agent
// pre-fetches before the skill runs: one memory assemble (package memory,
// memory.Prefetch) with the turn's input as the query, under the budget.
// The skill reads the result with memory.Prefetched(c); it is nil when
// the request had no budget or the pre-fetch failed, which is logged and
// never fails the skill. Options.MemoryPrefetch configures the client;
// Options.NoMemoryPrefetch turns it off.
//
// # Structured output
//
// A caller may ask for output matching a JSON Schema (the platform
// context's output_schema; c.OutputSchema()). A skill that extracts
// structured data checks its result with c.ValidateOutput (or
// ValidateAgainstSchema for any schema) and gets one message per
// violation, "at /age: minimum: got -1, want 0"; none means valid. The
// agent does not check results itself: whether a mismatch fails the task,
// triggers a retry of the extraction or is returned as is is the skill's
// decision. The schema is the caller's input: a malformed one gives a
// message rather than an error, and a $ref out of it (a URL, a file) is
// refused, never fetched.
//
// # Tracing
//
// Every skill execution is a span, "skill <id>" (novaos.run_id,
// novaos.skill, novaos.skill.status, gen_ai.agent.name, a2a.task.id,
// a2a.context.id), made with Options.TracerProvider (default
// otel.GetTracerProvider()). Its parent is the span in the execution's
// context (the A2A server's, package a2a/a2aotel), else the request's
// Traceparent, so a skill lands in its run's trace either way. The
// handler's Context holds it: the spans of what the skill calls (package
// tools' tool calls) are its children, and carry its trace context on.
//
// # Results
//
// A handler returns a Result. Its Status speaks the skill vocabulary, mapped
// exactly:
//
//	COMPLETED (or "")  TASK_STATE_COMPLETED
//	FAILED, ERROR      TASK_STATE_FAILED
//	WAITING_USER       TASK_STATE_INPUT_REQUIRED
//	REJECTED           TASK_STATE_REJECTED
//	AUTH_REQUIRED      TASK_STATE_AUTH_REQUIRED
//	QUEUED             TASK_STATE_SUBMITTED (task left open)
//	RUNNING, IN_PROGRESS TASK_STATE_WORKING (task left open)
//
// Any other status fails the task with a message naming the value. Output
// becomes parts (string: text, []byte: raw, other values: JSON data);
// Metadata becomes a data part tagged SkillMetadataMediaType; both go into
// a "result" artifact and into the final status message. Error becomes a
// text part plus a data part tagged PlatformMediaType under "skill_error".
// Both markers are written as the Python SDK's AgentBuilder writes them, in the
// part's metadata ({"mediaType": "application/vnd.novaos.metadata+json"}
// for platform data, "application/vnd.novaos.skill-metadata+json" for
// skill metadata); PlatformMediaType is the marker package a2a/hitl uses
// for HITL requests, pauses, progress and errors, so one reader finds all
// NovaOS control data.
// A handler that returns an error or panics gives a FAILED task with the
// error's text ("panic: …" for a panic); the process never crashes.
//
// A handler may report progress before returning through c.Updater():
// StartWork, AddArtifact, AppendArtifact (chunked, with lastChunk),
// RequiresInput, RequiresAuth, and the terminal Complete, Fail and Reject.
// A terminal call made directly wins over the Result returned afterwards.
// A skill registered with MayReply may answer with a message and no task
// (Updater.Reply); for such skills the agent does not mark the task WORKING
// before the handler runs.
//
// # Extension data
//
// A skill reports the conventions-layer extensions (packages ext/toolcall,
// ext/cost, ext/confidence, ext/worldstate) through its Context:
// StartToolCall, then Complete or Fail on the call, emits tool-call-v1
// events at once, each on a WORKING status update's message metadata;
// ReportCost, ReportConfidence and ReportWorldstate are written into the
// metadata of the result artifact when the handler returns. Payloads are
// validated when reported. The agent must declare an extension
// (Options.Extensions, e.g. conventions.Declarations(nil)) to emit it, so
// the card always lists what the agent emits; a report for an undeclared
// one returns ErrNotDeclared. With Options.RequireExtensionActivation the
// data goes only to callers that activated the extension in A2A-Extensions.
//
// # Content types
//
// A message part whose media type the skill does not accept (Skill.InputModes,
// else Options.DefaultInputModes) and a request whose acceptedOutputModes
// share nothing with the skill's output modes are answered with the JSON-RPC
// error ContentTypeNotSupported (-32005) before any task is written.
// Context.OutputModes lists the negotiated modes.
//
// # Choices
//
//   - Options structs, not decorators: a skill is a value (Skill) with its
//     handler, registered with Register; ids default to names and must be
//     unique, so routing keys and card ids are the same strings.
//   - A Result's output goes into both the "result" artifact and the final
//     status message: clients that read artifacts and clients that read the
//     status both find it.
//   - A failed skill is described by its error's text (its type when the
//     text is empty) rather than "<type>: <message>": Go errors carry their
//     own context, and type names such as *errors.errorString say nothing.
//     Options.TypedFailures gives the "<type>: <message>" wording of the
//     NovaOS Python SDK, for callers that parse it; the type is the first
//     in the error's chain that is not a fmt.Errorf wrapper
//     ("*fs.PathError: load config: open …").
//   - Status spellings are matched exactly ("completed" is not COMPLETED),
//     as the vocabulary table lists them; use the Status constants.
//   - A skill whose last direct write was a pause and which returns an empty
//     Result keeps the pause, so RequiresInput needs no matching Result.
//
// # Logging
//
// Options.Logger receives the agent's logs; nil discards them (a library
// writes nowhere unasked, where the NovaOS Python SDK always writes to
// stdout). c.Logger() is that logger bound to the execution's run_id,
// agent_id, tenant_id, task_id and skill (an empty id is left out).
// NewLogHandler writes the NDJSON lines the platform's log pipeline and
// its Agent Log Panel read, with the field names the Python SDK uses:
//
//	a := agent.New("greeter", "1.0.0", &agent.Options{Logger: slog.New(agent.NewLogHandler(os.Stdout, nil))})
//	// c.Logger().Info("Tool call completed", "tool", "search") writes
//	// {"timestamp":"2026-07-25T14:00:00.123456Z","level":"info","message":"Tool call completed",
//	//  "run_id":"run-abc","agent_id":"agent-xyz","tenant_id":"t-1","task_id":"…","skill":"…","tool":"search"}
//
// # PII
//
// Every log record the agent writes goes through pii.Handler. With
// Options.MaskOutputPII, everything written to the task (results, messages,
// artifacts, metadata) is masked too; it is off by default because agents
// that confirm caller data would have it redacted.
//
// # Secrets
//
// The platform delivers a run's secrets sealed to the agent's recipient
// key (user-context/v1, package ext/usercontext). Give the agent its key
// ring in Options.KeyRing (usercontext.NewKeyRing over the mounted key
// directory); the card then declares the extension, and a skill calls
// c.GetSecret("SMTP_PASSWORD"). Each envelope must be bound to this
// request's tenant (verified scope first), instance_id, run_id and the
// secret's name, or it does not open. The value is a usercontext.Secret,
// redacted everywhere except Reveal. c.SecretNames lists what arrived.
package agent
