package a2asrv

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"novaos.dev/novaos/a2a"
)

// Call is one A2A request as every binding hands it to the core: which
// method, over which binding, with which service parameters, and (once
// the core has identified it) for whom. Interceptors receive it; they may
// read every field and must not change Header.
type Call struct {
	// Method is the A2A method name (a2a.MethodSendMessage, …), the same on
	// every binding.
	Method string
	// Binding is the protocol binding the request came over
	// (a2a.BindingJSONRPC, a2a.BindingHTTPJSON or a2a.BindingGRPC).
	Binding string
	// Header holds the request's service parameters under canonical
	// header names: the HTTP headers, or the gRPC metadata.
	Header http.Header
	// Tenant is the request's tenant, from its params or a REST path
	// prefix; set by the core before Options.Identify runs.
	Tenant string
	// Scope is who the request acts for (Options.Identify), set before the
	// first interceptor runs.
	Scope Scope
	// Extensions are the extension URIs active for this request, set
	// before the first interceptor runs.
	Extensions []string
	// Identity is what Options.Identify learned of the caller, for the
	// interceptors and the executor (RequestContext.Identity): a verified
	// token's claims, say. Identify sets it; nil when it learned nothing.
	Identity any
}

// A StreamSink receives the frames of a streaming method (SendStreaming
// Message, SubscribeToTask) in order. Each binding writes them its own way:
// SSE events for JSON-RPC and HTTP+JSON, stream messages for gRPC.
//
// The core calls Send for each frame, then Flush once per batch of frames
// that were ready together, so a binding that buffers pays one write per
// batch. An error from any method ends the stream: the core returns
// without sending more.
type StreamSink interface {
	// Send queues one frame. version is the task's store version after the
	// write the frame reports (0 for a message-only answer).
	Send(version Version, resp *a2a.StreamResponse) error
	// Flush delivers what Send queued.
	Flush() error
	// KeepAlive tells an idle caller the stream is still open.
	KeepAlive() error
}

// StreamResult is what an interceptor's After receives as the response of
// a streaming method: how many frames the core sent.
type StreamResult struct {
	Frames int
}

// An Interceptor sees every call on every binding. Before runs once the
// call is admitted (its version and extensions negotiated, its identifiers
// checked and its caller identified, so Call.Scope is set) and before the
// method; After runs once the method has answered, or for a stream once the
// stream has ended.
//
// Interceptors run in the order of Options.Interceptors: every Before in
// that order, then the method, then the After of each interceptor whose
// Before admitted the call, in reverse order. A Before that returns an
// error refuses the call: the method does not run, no later Before runs,
// and the caller receives the error (an *a2a.Error as it is, any other
// error as an internal error, its text logged, not sent). The context a
// Before returns is passed on to the later interceptors and the method.
//
// req is the method's typed request: *a2a.SendMessageRequest (SendMessage,
// SendStreamingMessage), *a2a.GetTaskRequest, *a2a.ListTasksRequest,
// *a2a.CancelTaskRequest, *a2a.SubscribeToTaskRequest,
// *a2a.TaskPushNotificationConfig (CreateTaskPushNotificationConfig),
// *a2a.GetTaskPushNotificationConfigRequest,
// *a2a.ListTaskPushNotificationConfigsRequest,
// *a2a.DeleteTaskPushNotificationConfigRequest or
// *a2a.GetExtendedAgentCardRequest. resp is the method's typed response
// (nil for DeleteTaskPushNotificationConfig and on error), *StreamResult
// for a stream: a stream that ended with an error after sending frames
// has both, so an interceptor can tell a refused stream (nil) from one
// that broke off. Neither may be modified.
type Interceptor interface {
	Before(ctx context.Context, call *Call, req any) (context.Context, error)
	After(ctx context.Context, call *Call, resp any, err error)
}

// InterceptorFuncs is an Interceptor from two functions, either of which
// may be nil.
type InterceptorFuncs struct {
	BeforeFunc func(ctx context.Context, call *Call, req any) (context.Context, error)
	AfterFunc  func(ctx context.Context, call *Call, resp any, err error)
}

// Before calls BeforeFunc, if set.
func (f InterceptorFuncs) Before(ctx context.Context, call *Call, req any) (context.Context, error) {
	if f.BeforeFunc == nil {
		return ctx, nil
	}
	return f.BeforeFunc(ctx, call, req)
}

// After calls AfterFunc, if set.
func (f InterceptorFuncs) After(ctx context.Context, call *Call, resp any, err error) {
	if f.AfterFunc != nil {
		f.AfterFunc(ctx, call, resp, err)
	}
}

// Core runs the eleven A2A methods on typed requests, the same for every
// binding. Each method negotiates the call's version and extensions from
// Call.Header, checks its identifiers, identifies the caller
// (Options.Identify), runs the interceptors and then the method; errors
// are *a2a.Error. A Call must be fresh for each call.
//
// The JSON-RPC and HTTP+JSON bindings of [Handler] call the core from
// inside this package; the gRPC binding (package a2agrpc/grpcsrv) calls
// these methods through [Handler.Core]. A Core is made by [NewHandler] and
// stops with its Handler's Shutdown.
type Core struct {
	card  *a2a.AgentCard
	opts  Options // with the defaults filled in
	log   *slog.Logger
	execs *executions
	tasks *taskMethods
	push  *pushMethods
}

// newCore builds the core over opts, whose defaults are filled in.
func newCore(card *a2a.AgentCard, exec Executor, opts Options, log *slog.Logger) *Core {
	clk := clock{nowFn: opts.Now, idFn: opts.NewID}
	execs := &executions{
		exec: exec, store: opts.TaskStore, push: opts.PushConfigStore, log: log, clock: clk,
		keepAlive: opts.KeepAlive, proposeID: opts.NewTaskID, workers: newWorkers(),
		hubs: hubs{store: opts.TaskStore, feed: opts.TaskFeed, log: log, flushEvery: opts.ArtifactFlushInterval},
	}
	return &Core{
		card: card, opts: opts, log: log, execs: execs,
		tasks: &taskMethods{
			store: opts.TaskStore, followsFeed: opts.TaskFeed != nil, execs: execs, log: log, clock: clk,
			streaming:     card != nil && card.Capabilities.Streaming != nil && *card.Capabilities.Streaming,
			historyLength: opts.DefaultHistoryLength, push: opts.PushConfigStore, pushURLs: opts.PushURLPolicy,
		},
		push: &pushMethods{configs: opts.PushConfigStore, tasks: opts.TaskStore, urls: opts.PushURLPolicy, log: log, clock: clk},
	}
}

// A unaryMethod is a unary method of the core, bound to what implements it.
type unaryMethod[Req, Resp any] func(context.Context, *Call, *Req) (Resp, *a2a.Error)

// A streamMethod is a streaming method of the core, bound likewise.
type streamMethod[Req any] func(context.Context, *Call, *Req, StreamSink) *a2a.Error

// negotiate checks the call's A2A-Version and activates the extensions it
// asks for; every binding does it before anything else about the method.
func (co *Core) negotiate(c *Call) *a2a.Error {
	if e := a2a.CheckVersion(c.Header.Get(a2a.HeaderVersion)); e != nil {
		return e
	}
	return co.negotiateExtensions(c, c.Header.Values(a2a.HeaderExtensions))
}

// negotiateExtensions activates the extensions values (header values)
// ask for, within the limits, refusing a call that lacks a required one.
func (co *Core) negotiateExtensions(c *Call, values []string) *a2a.Error {
	var declared []a2a.AgentExtension
	if co.card != nil {
		declared = co.card.Capabilities.Extensions
	}
	requested, e := a2a.ParseExtensionsLimit(values, co.opts.MaxExtensions, co.opts.MaxExtensionURIBytes)
	if e != nil {
		return e
	}
	active, e := a2a.NegotiateExtensions(requested, declared)
	if e != nil {
		return e
	}
	c.Extensions = active
	return nil
}

// invoke admits a negotiated call (identifiers, caller, interceptors) and
// runs method. It is the one path every method of every binding takes.
func invoke[Req, Resp any](ctx context.Context, co *Core, c *Call, req *Req, method unaryMethod[Req, Resp]) (Resp, *a2a.Error) {
	var zero Resp
	tenant, e := checkParams(req, co.opts.MaxIDBytes)
	if e != nil {
		return zero, e
	}
	c.Tenant = tenant
	if c.Scope, e = co.identify(ctx, c); e != nil {
		return zero, e
	}
	ics := co.opts.Interceptors
	admitted := 0
	for _, ic := range ics {
		next, err := ic.Before(ctx, c, req)
		if err != nil {
			e = co.refusal(ctx, c, err)
			break
		}
		if next != nil {
			ctx = next
		}
		admitted++
	}
	resp := zero
	if e == nil {
		resp, e = method(ctx, c, req)
	}
	if admitted > 0 {
		var out any = resp
		var err error
		if e != nil {
			out, err = nil, e
			if sr, ok := any(resp).(*StreamResult); ok && sr != nil && sr.Frames > 0 {
				out = sr // a stream that broke off still sent these
			}
		}
		if _, unit := out.(struct{}); unit {
			out = nil
		}
		for i := admitted - 1; i >= 0; i-- {
			ics[i].After(ctx, c, out, err)
		}
	}
	return resp, e
}

// refusal is the protocol error for an interceptor's refusal.
func (co *Core) refusal(ctx context.Context, c *Call, err error) *a2a.Error {
	var e *a2a.Error
	if errors.As(err, &e) {
		return e
	}
	co.log.ErrorContext(ctx, "a2asrv: interceptor refused a call", "method", c.Method, "err", err)
	return a2a.NewError(a2a.CodeInternalError, "internal error")
}

// identify says who c acts for: Options.Identify's Scope, with the
// request's tenant when Identify leaves it empty.
func (co *Core) identify(ctx context.Context, c *Call) (Scope, *a2a.Error) {
	if co.opts.Identify == nil {
		return Scope{Tenant: c.Tenant}, nil
	}
	s, err := co.opts.Identify(ctx, c)
	if err != nil {
		var e *a2a.Error
		if errors.As(err, &e) {
			return Scope{}, e
		}
		co.log.InfoContext(ctx, "a2asrv: caller not identified", "err", err)
		return Scope{}, a2a.NewError(CodeUnauthenticated, "unauthenticated")
	}
	if s.Tenant == "" {
		s.Tenant = c.Tenant
	}
	return s, nil
}

// asError turns the core's result into an error without the typed-nil
// trap: a nil *a2a.Error is a nil error.
func asError(e *a2a.Error) error {
	if e == nil {
		return nil
	}
	return e
}

// serve runs a unary method for a binding outside this package: negotiate,
// then invoke, counted as a call Shutdown waits for.
func serve[Req, Resp any](ctx context.Context, co *Core, c *Call, req *Req, method unaryMethod[Req, Resp]) (Resp, error) {
	leave := co.execs.shut.enter()
	defer leave()
	if e := co.negotiate(c); e != nil {
		var zero Resp
		return zero, e
	}
	resp, e := invoke(ctx, co, c, req, method)
	return resp, asError(e)
}

// serveStream is serve for a streaming method.
func serveStream[Req any](ctx context.Context, co *Core, c *Call, req *Req, sink StreamSink, method streamMethod[Req]) error {
	_, err := serve(ctx, co, c, req, countFrames(sink, method))
	return err
}

// countFrames binds a streaming method to its sink, counting the frames
// for the interceptors' StreamResult.
func countFrames[Req any](sink StreamSink, method streamMethod[Req]) unaryMethod[Req, *StreamResult] {
	return func(ctx context.Context, c *Call, req *Req) (*StreamResult, *a2a.Error) {
		counted := &countingSink{StreamSink: sink}
		e := method(ctx, c, req, counted)
		return &StreamResult{Frames: counted.frames}, e
	}
}

type countingSink struct {
	StreamSink
	frames int
}

func (s *countingSink) Send(v Version, resp *a2a.StreamResponse) error {
	err := s.StreamSink.Send(v, resp)
	if err == nil {
		s.frames++
	}
	return err
}

// SendMessage answers with the task (or message) once it is final or
// interrupted, or at once with returnImmediately.
func (co *Core) SendMessage(ctx context.Context, c *Call, req *a2a.SendMessageRequest) (*a2a.SendMessageResponse, error) {
	return serve(ctx, co, c, req, co.tasks.sendMessage)
}

// SendStreamingMessage streams the task's updates to sink until it is final
// or interrupted.
func (co *Core) SendStreamingMessage(ctx context.Context, c *Call, req *a2a.SendMessageRequest, sink StreamSink) error {
	return serveStream(ctx, co, c, req, sink, co.tasks.sendStreamingMessage)
}

// SubscribeToTask streams a snapshot of the task, then its updates.
func (co *Core) SubscribeToTask(ctx context.Context, c *Call, req *a2a.SubscribeToTaskRequest, sink StreamSink) error {
	return serveStream(ctx, co, c, req, sink, co.tasks.subscribeToTask)
}

// GetTask returns a task of the caller.
func (co *Core) GetTask(ctx context.Context, c *Call, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	return serve(ctx, co, c, req, co.tasks.getTask)
}

// ListTasks lists the caller's tasks, newest status first.
func (co *Core) ListTasks(ctx context.Context, c *Call, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	return serve(ctx, co, c, req, co.tasks.listTasks)
}

// CancelTask cancels a task of the caller.
func (co *Core) CancelTask(ctx context.Context, c *Call, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	return serve(ctx, co, c, req, co.tasks.cancelTask)
}

// CreateTaskPushNotificationConfig stores a push config for a task.
func (co *Core) CreateTaskPushNotificationConfig(ctx context.Context, c *Call, req *a2a.TaskPushNotificationConfig) (*a2a.TaskPushNotificationConfig, error) {
	return serve(ctx, co, c, req, co.push.createConfig)
}

// GetTaskPushNotificationConfig returns one push config, without its
// credentials.
func (co *Core) GetTaskPushNotificationConfig(ctx context.Context, c *Call, req *a2a.GetTaskPushNotificationConfigRequest) (*a2a.TaskPushNotificationConfig, error) {
	return serve(ctx, co, c, req, co.push.getConfig)
}

// ListTaskPushNotificationConfigs lists a task's push configs.
func (co *Core) ListTaskPushNotificationConfigs(ctx context.Context, c *Call, req *a2a.ListTaskPushNotificationConfigsRequest) (*a2a.ListTaskPushNotificationConfigsResponse, error) {
	return serve(ctx, co, c, req, co.push.listConfigs)
}

// DeleteTaskPushNotificationConfig deletes a push config; deleting a
// missing one succeeds.
func (co *Core) DeleteTaskPushNotificationConfig(ctx context.Context, c *Call, req *a2a.DeleteTaskPushNotificationConfigRequest) error {
	_, err := serve(ctx, co, c, req, co.push.deleteConfig)
	return err
}

// GetExtendedAgentCard returns the extended card.
func (co *Core) GetExtendedAgentCard(ctx context.Context, c *Call, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return serve(ctx, co, c, req, co.extendedCard)
}

func (co *Core) extendedCard(_ context.Context, _ *Call, _ *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, *a2a.Error) {
	if co.opts.ExtendedCard == nil {
		return nil, a2a.NewError(a2a.CodeExtendedAgentCardNotConfigured, "no extended agent card is configured")
	}
	return co.opts.ExtendedCard, nil
}
