// Package a2av03 is the A2A 0.3 JSON-RPC wire model and its v1 conversion.
//
// It converts to and from the v1 model in package a2a, so a v1 server can
// answer 0.3 clients and a v1 client can call a 0.3 agent. It depends on
// package a2a and the standard library only.
//
// A server answers a 0.3 call by running the v1 method it maps to:
//
//	v1Method, req, e := a2av03.DecodeRequest(rpc.Method, rpc.Params) // -32601 / -32602 on failure
//	resp, err := ... run v1Method with req ...
//	result, err := a2av03.EncodeResult(resp) // each stream frame too
//	out = a2a.AppendResult(out, rpc.ID, result)
//
// A client calling a 0.3 agent does the reverse:
//
//	card, _ := a2av03.ParseCard(body) // either version; a 0.3 card's interfaces say "0.3.0"
//	method, params, _ := a2av03.EncodeRequest(a2a.MethodGetTask, &a2a.GetTaskRequest{ID: id})
//	v, _ := a2av03.DecodeResult(a2a.MethodGetTask, result) // *a2a.Task
//
// # Methods
//
//	0.3 method                            v1 method                          0.3 params → v1 request
//	message/send                          SendMessage                        MessageSendParams → SendMessageRequest
//	message/stream                        SendStreamingMessage               MessageSendParams → SendMessageRequest
//	tasks/get                             GetTask                            TaskQueryParams → GetTaskRequest
//	tasks/cancel                          CancelTask                         TaskIdParams → CancelTaskRequest
//	tasks/resubscribe                     SubscribeToTask                    TaskIdParams → SubscribeToTaskRequest
//	tasks/pushNotificationConfig/set      CreateTaskPushNotificationConfig   TaskPushNotificationConfig → TaskPushNotificationConfig
//	tasks/pushNotificationConfig/get      GetTaskPushNotificationConfig      {id, pushNotificationConfigId?} → {taskId, id}
//	tasks/pushNotificationConfig/list     ListTaskPushNotificationConfigs    {id} → {taskId}
//	tasks/pushNotificationConfig/delete   DeleteTaskPushNotificationConfig   {id, pushNotificationConfigId} → {taskId, id}
//	agent/getAuthenticatedExtendedCard    GetExtendedAgentCard               none → {}
//	(none: 0.3 lists tasks over gRPC/REST only)  ListTasks                   EncodeRequest: -32004
//
// The two name sets are disjoint, so a server can tell a 0.3 call by its
// method alone ([V1Method]); 0.3 clients send no A2A-Version header. Results
// map back: Task ↔ Task (kind "task"); SendMessageResponse ↔ Task or
// Message (kind "message"); StreamResponse ↔ Task, Message,
// TaskStatusUpdateEvent (kind "status-update") or TaskArtifactUpdateEvent
// (kind "artifact-update"); TaskPushNotificationConfig ↔ {taskId,
// pushNotificationConfig}; ListTaskPushNotificationConfigsResponse ↔ a bare
// array; Delete's empty result ↔ null; AgentCard ↔ the 0.3 card. JSON-RPC
// error objects have the same shape and codes in both versions (-32001 to
// -32007 mean the same; -32008 and -32009 are v1's own) and need no
// conversion.
//
// # Fields
//
//	0.3                                       v1
//	role "user" / "agent"                     ROLE_USER / ROLE_AGENT (other roles: ROLE_UNSPECIFIED ↔ "")
//	state "submitted" … "auth-required"       TASK_STATE_SUBMITTED … TASK_STATE_AUTH_REQUIRED
//	state "unknown" (and any other value)     TASK_STATE_UNSPECIFIED (written back as "unknown")
//	{kind: text, text}                        {text}
//	{kind: file, file: {bytes, mimeType, name}}   {raw, mediaType, filename}
//	{kind: file, file: {uri, mimeType, name}}     {url, mediaType, filename}
//	{kind: data, data: {…}}                   {data: {…}}
//	{kind: data, data: {value: v}, metadata: {data_part_compat: true}}   {data: v} (v not an object)
//	status.timestamp (ISO 8601)               status.timestamp (written as UTC with milliseconds)
//	status-update final                       dropped; written as state.Final(): terminal, input- or auth-required
//	configuration.blocking                    returnImmediately = (blocking == false); absent = blocking
//	configuration.pushNotificationConfig      configuration.taskPushNotificationConfig (taskId = message.taskId)
//	authentication.schemes[]                  authentication.scheme (the first)
//	AgentCard url + preferredTransport        supportedInterfaces[0] (protocolVersion = the card's)
//	AgentCard additionalInterfaces            further supportedInterfaces
//	supportsAuthenticatedExtendedCard         capabilities.extendedAgentCard
//	security / skills[].security              securityRequirements (scopes in {list})
//	securitySchemes {type: apiKey|http|oauth2|openIdConnect|mutualTLS, …}   the oneof member of that type
//
// # Decisions
//
//   - Decoding ([Unmarshal], [DecodeParams]) refuses a repeated key at any
//     depth, metadata and data included, through a2a.CheckKeys, and fills a
//     field only from its exact JSON name: "KIND" is an unknown key, not the
//     kind, so a peer cannot make this reader and a JavaScript one see
//     different parts. Unknown keys are ignored. snake_case names are not
//     read: the 0.3 JSON-RPC binding is a JSON schema, not ProtoJSON.
//     Bodies and SSE frames are bounded by the caller (the server's body
//     limit, a2a.EventReader's frame limit) before they reach this package;
//     nesting is bounded by encoding/json's limit.
//   - kind is required where it picks the type (a part; an Event: the
//     message/send result and every stream frame) and must match where the
//     position already says the type; a message in params without kind is
//     accepted.
//   - A file must carry exactly one of bytes and uri; bytes must be base64
//     (standard alphabet; URL-safe and unpadded are tolerated).
//   - data: the 0.3 schema allows only an object. A v1 value that is not
//     an object (array, string, number, bool, null) goes out wrapped as
//     {"value": v} with metadata data_part_compat: true, and such a part is
//     unwrapped on the way in: the marker a2a-go and a2a-js use, so the
//     value survives a trip through either of them (TestJSServer03/Parts).
//     A 0.3 data value that is not an object is accepted as it is.
//   - A timestamp without an offset ("2025-04-02T16:59:25.331844", as in
//     the 0.3 specification's own examples) is read as UTC; anything not
//     ISO 8601 date-time is an invalid-params error.
//   - final on a status update is true when the v1 stream ends there:
//     terminal states and input-required/auth-required. 0.3 clients stop
//     reading at final, and a v1 stream ends at an interrupted state too.
//     a2a-js 1.3.0's compat layer sets final for terminal states only.
//   - Push config ids: 0.3 servers give a config set without an id the
//     task's id, and tasks/pushNotificationConfig/get without
//     pushNotificationConfigId means that config. The conversion does the
//     same explicitly (id = taskId on set, on an inline config of a message
//     that names its task, and on get), so a v1 server that keeps a
//     client's id behaves as a 0.3 server. delete requires the id, as the
//     0.3 schema does.
//   - tasks/cancel's metadata goes to CancelTaskRequest.metadata; the
//     metadata of tasks/get, tasks/resubscribe and the push-config params
//     has no v1 field and is dropped.
//   - The 0.3 card ([CardFromV1]) takes its url from the first JSON-RPC
//     interface that states protocol version 0.3, else the first JSON-RPC
//     interface; additionalInterfaces lists that interface first, then the
//     other JSON-RPC interfaces and any interface that states 0.3. A v1-only
//     HTTP+JSON or gRPC interface is left out: a 0.3 client would call it
//     with 0.3's REST paths (/v1/message:send) or 0.3's gRPC service, which a
//     v1 server does not serve.
//   - Cards a 0.3 client reads: a server cannot tell a 0.3 client's card
//     fetch by anything but a missing A2A-Version header, and a2a-go's v1
//     resolver sends none either (only a2a-js 1.3.0's ClientFactory sends
//     "1.0"). So a card served without A2A-Version should be one both read:
//     [HybridCard] adds the 0.3 members to the v1 card's JSON (they never
//     collide), and a card fetch with A2A-Version 1.0 may get the plain v1
//     card (add Vary: A2A-Version). a2a-js 1.3.0 and 0.3.14, a2a-go v2.3.1
//     and our a2a.Unmarshal all read the hybrid (interop TestHybridCard);
//     a2a-go fails on skill securityRequirements in any v1 card. A signed
//     card must be signed as served: the hybrid's extra members change
//     what the signature covers, and CardFromV1 drops v1 signatures.
//   - [ParseCard] reads a document with a non-empty supportedInterfaces as
//     v1 (a hybrid card included) and anything else as 0.3.
//
// # What is lost
//
// v1 → 0.3: every tenant; a text or data part's filename and mediaType; a
// data part's mediaType; the card's per-interface protocol versions and tenants,
// its signatures, deviceCode OAuth flows and v1-only non-JSON-RPC
// interfaces; ListTasks; the pagination of ListTaskPushNotificationConfigs
// (0.3 returns one array: a server should return every config). An inline
// push config on a message that starts a new task gets the server's id,
// not the task's, so a later get without pushNotificationConfigId finds
// nothing.
//
// 0.3 → v1: final (recomputed on the way out); authentication schemes past
// the first; metadata of tasks/get, tasks/resubscribe and the push-config
// methods; capabilities.stateTransitionHistory; an unknown role or state
// (read as unspecified).
package a2av03
