package grpcclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2aclient"
	"novaos.dev/novaos/a2a/a2agrpc"
	"novaos.dev/novaos/a2a/a2apb"
)

// Options tune the transports a Factory builds; nil means defaults.
type Options struct {
	// Credentials secure the connection; nil means TLS for an https://
	// interface URL, plaintext for an http:// one, and for a bare target
	// (host:port) plaintext on loopback and TLS elsewhere.
	Credentials credentials.TransportCredentials
	// TLSConfig is the client TLS configuration used when the transport
	// chooses TLS itself (no Credentials): its RootCAs are the authorities
	// trusted. Nil means the system's roots.
	TLSConfig *tls.Config
	// DialOptions are added to the connection's (interceptors, keep-alive).
	// A context dialer among them replaces the one that applies
	// a2aclient's Options.ConnectGuard.
	DialOptions []grpc.DialOption
}

// Factory returns the TransportFactory of the gRPC binding.
func Factory(opts *Options) a2aclient.TransportFactory {
	var o Options
	if opts != nil {
		o = *opts
	}
	return func(cfg *a2aclient.TransportConfig) (a2aclient.Transport, error) {
		if cfg.Interface.URL == "" {
			return nil, errors.New("grpcclient: the interface has no URL")
		}
		target, secure, err := parseTarget(cfg.Interface.URL)
		if err != nil {
			return nil, err
		}
		creds := o.Credentials
		if creds == nil {
			if secure {
				creds = credentials.NewTLS(o.TLSConfig)
			} else {
				creds = insecure.NewCredentials()
			}
		}
		dial := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
		if g := cfg.ConnectGuard; g != nil {
			// The dialer sees the resolved address: a name that resolves
			// to a refused address is refused before connecting.
			d := g.Dialer(nil)
			dial = append(dial, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return d.DialContext(ctx, "tcp", addr)
			}))
		}
		dial = append(dial, o.DialOptions...)
		if cfg.MaxResponseBytes > 0 {
			dial = append(dial, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(min(cfg.MaxResponseBytes, int64(^uint32(0)>>1))))))
		}
		conn, err := grpc.NewClient(target, dial...)
		if err != nil {
			return nil, fmt.Errorf("grpcclient: %w", err)
		}
		return &transport{conn: conn, c: a2apb.NewA2AServiceClient(conn)}, nil
	}
}

// parseTarget reads an interface URL: an https:// or http:// URL (the
// form A2A names interfaces in) is its host:port, over TLS or not, the
// port defaulting to the scheme's; anything else is a grpc.NewClient
// target, over TLS unless it names this machine.
func parseTarget(raw string) (target string, secure bool, err error) {
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || (!strings.EqualFold(scheme, "https") && !strings.EqualFold(scheme, "http")) {
		return raw, !loopback(raw), nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		shown := "" // not raw: it may carry a password
		if err == nil {
			shown = fmt.Sprintf(" %q", u.Redacted())
		}
		return "", false, fmt.Errorf("grpcclient: interface URL%s: want %s://host[:port], the gRPC server's address", shown, scheme)
	}
	secure = strings.EqualFold(scheme, "https")
	port := u.Port()
	if port == "" {
		port = "80"
		if secure {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), secure, nil
}

// loopback reports whether target names this machine.
func loopback(target string) bool {
	host := target
	if h, _, err := net.SplitHostPort(target); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

type transport struct {
	conn *grpc.ClientConn
	c    a2apb.A2AServiceClient
}

var _ a2aclient.Transport = (*transport)(nil)

// outgoing puts the call's service parameters in the gRPC metadata.
func outgoing(ctx context.Context, call *a2aclient.Call) context.Context {
	md := metadata.MD{}
	for k, vs := range call.Header {
		k = strings.ToLower(k)
		if k == "content-type" || k == "accept" || k == "user-agent" {
			continue // HTTP's own, not service parameters
		}
		md[k] = append(md[k], vs...)
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// callErr maps a gRPC failure to the client's errors.
func callErr(ctx context.Context, method string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("grpcclient: %s: %w", method, context.Cause(ctx))
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("grpcclient: %s: %w: %w", method, a2aclient.ErrUnreachable, err)
	}
	switch st.Code() {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return fmt.Errorf("grpcclient: %s: %w: %s", method, a2aclient.ErrUnreachable, st.Message())
	case codes.ResourceExhausted:
		if strings.Contains(st.Message(), "message larger than max") {
			return fmt.Errorf("grpcclient: %s: %w", method, a2aclient.ErrResponseTooLarge)
		}
	}
	return &a2aclient.CallError{Method: method, Err: a2agrpc.Error(err)}
}

func invalid(method string, err error) error {
	return fmt.Errorf("grpcclient: %s: %w: %v", method, a2aclient.ErrInvalidResponse, err)
}

// request converts call.Params; a conversion failure is the caller's.
func request[T, P any](call *a2aclient.Call, to func(*T) (P, error)) (P, error) {
	var zero P
	req, ok := call.Params.(*T)
	if !ok {
		return zero, fmt.Errorf("grpcclient: %s: params are %T", call.Method, call.Params)
	}
	p, err := to(req)
	if err != nil {
		return zero, fmt.Errorf("grpcclient: %s: %w", call.Method, err)
	}
	return p, nil
}

func total[T, P any](f func(*T) P) func(*T) (P, error) {
	return func(t *T) (P, error) { return f(t), nil }
}

// answer converts a response into out, which must be the result's type.
func answer[R any](method string, out any, v *R, err error) error {
	if err != nil {
		return invalid(method, err)
	}
	if out == nil {
		return nil
	}
	dst, ok := out.(*R)
	if !ok {
		return fmt.Errorf("grpcclient: %s: result into %T", method, out)
	}
	*dst = *v
	return nil
}

func (t *transport) Unary(ctx context.Context, call *a2aclient.Call, out any) error {
	m := call.Method
	octx := outgoing(ctx, call)
	switch m {
	case a2a.MethodSendMessage:
		in, err := request(call, a2agrpc.SendMessageRequestToPB)
		if err != nil {
			return err
		}
		resp, err := t.c.SendMessage(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		v, err := a2agrpc.SendMessageResponseFromPB(resp)
		return answer(m, out, v, err)
	case a2a.MethodGetTask:
		in, err := request(call, total(a2agrpc.GetTaskRequestToPB))
		if err != nil {
			return err
		}
		resp, err := t.c.GetTask(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		v, err := a2agrpc.TaskFromPB(resp)
		return answer(m, out, v, err)
	case a2a.MethodListTasks:
		in, err := request(call, a2agrpc.ListTasksRequestToPB)
		if err != nil {
			return err
		}
		resp, err := t.c.ListTasks(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		v, err := a2agrpc.ListTasksResponseFromPB(resp)
		return answer(m, out, v, err)
	case a2a.MethodCancelTask:
		in, err := request(call, a2agrpc.CancelTaskRequestToPB)
		if err != nil {
			return err
		}
		resp, err := t.c.CancelTask(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		v, err := a2agrpc.TaskFromPB(resp)
		return answer(m, out, v, err)
	case a2a.MethodCreateTaskPushNotificationConfig:
		in, err := request(call, total(a2agrpc.TaskPushNotificationConfigToPB))
		if err != nil {
			return err
		}
		resp, err := t.c.CreateTaskPushNotificationConfig(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		return answer(m, out, a2agrpc.TaskPushNotificationConfigFromPB(resp), nil)
	case a2a.MethodGetTaskPushNotificationConfig:
		in, err := request(call, total(a2agrpc.GetTaskPushNotificationConfigRequestToPB))
		if err != nil {
			return err
		}
		resp, err := t.c.GetTaskPushNotificationConfig(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		return answer(m, out, a2agrpc.TaskPushNotificationConfigFromPB(resp), nil)
	case a2a.MethodListTaskPushNotificationConfigs:
		in, err := request(call, total(a2agrpc.ListTaskPushNotificationConfigsRequestToPB))
		if err != nil {
			return err
		}
		resp, err := t.c.ListTaskPushNotificationConfigs(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		return answer(m, out, a2agrpc.ListTaskPushNotificationConfigsResponseFromPB(resp), nil)
	case a2a.MethodDeleteTaskPushNotificationConfig:
		in, err := request(call, total(a2agrpc.DeleteTaskPushNotificationConfigRequestToPB))
		if err != nil {
			return err
		}
		if _, err := t.c.DeleteTaskPushNotificationConfig(octx, in); err != nil {
			return callErr(ctx, m, err)
		}
		return nil
	case a2a.MethodGetExtendedAgentCard:
		in, err := request(call, total(a2agrpc.GetExtendedAgentCardRequestToPB))
		if err != nil {
			return err
		}
		resp, err := t.c.GetExtendedAgentCard(octx, in)
		if err != nil {
			return callErr(ctx, m, err)
		}
		v, err := a2agrpc.AgentCardFromPB(resp)
		return answer(m, out, v, err)
	}
	return fmt.Errorf("grpcclient: method %q is not an A2A unary method", m)
}

func (t *transport) Stream(ctx context.Context, call *a2aclient.Call, activity func()) (a2aclient.FrameStream, error) {
	m := call.Method
	// The stream lives past this call: its context is cancelled on Close.
	sctx, cancel := context.WithCancel(ctx)
	octx := outgoing(sctx, call)
	var s grpc.ServerStreamingClient[a2apb.StreamResponse]
	var err error
	switch m {
	case a2a.MethodSendStreamingMessage:
		in, cerr := request(call, a2agrpc.SendMessageRequestToPB)
		if cerr != nil {
			cancel()
			return nil, cerr
		}
		s, err = t.c.SendStreamingMessage(octx, in)
	case a2a.MethodSubscribeToTask:
		in, cerr := request(call, total(a2agrpc.SubscribeToTaskRequestToPB))
		if cerr != nil {
			cancel()
			return nil, cerr
		}
		s, err = t.c.SubscribeToTask(octx, in)
	default:
		cancel()
		return nil, fmt.Errorf("grpcclient: method %q is not an A2A streaming method", m)
	}
	if err != nil {
		cancel()
		return nil, callErr(ctx, m, err)
	}
	fs := &frames{ctx: sctx, cancel: cancel, method: m, s: s, activity: activity}
	// A refusal before the first frame is an error of the call, as the
	// HTTP transports report it: read ahead one message.
	f, err := fs.recv()
	if err != nil && !errors.Is(err, io.EOF) {
		cancel()
		return nil, err
	}
	fs.first, fs.firstErr = f, err
	return fs, nil
}

// frames is an open gRPC stream. gRPC frames carry no sequence number, so
// Next reports 0 (the Client then resumes by snapshot).
type frames struct {
	ctx      context.Context
	cancel   context.CancelFunc
	method   string
	s        grpc.ServerStreamingClient[a2apb.StreamResponse]
	activity func()
	first    *a2a.StreamResponse
	firstErr error
	started  bool
}

func (f *frames) recv() (*a2a.StreamResponse, error) {
	m, err := f.s.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		return nil, callErr(f.ctx, f.method, err)
	}
	if f.activity != nil {
		f.activity()
	}
	r, err := a2agrpc.StreamResponseFromPB(m)
	if err != nil {
		return nil, invalid(f.method, err)
	}
	return r, nil
}

func (f *frames) Next() (*a2a.StreamResponse, int64, error) {
	if !f.started {
		f.started = true
		if f.first != nil || f.firstErr != nil {
			return f.first, 0, f.firstErr
		}
	}
	r, err := f.recv()
	return r, 0, err
}

func (f *frames) Close() error {
	f.cancel()
	return nil
}
