package a2asrv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2av03"
)

// A2A 0.3 clients on the JSON-RPC binding. A call whose method is one of
// 0.3's (message/send, tasks/get, …) and whose A2A-Version is absent or
// 0.3 is converted to its v1 request (package a2av03), runs the same core
// path as every other call (identification, interceptors, the method;
// Call.Method is the v1 name, Call.Binding JSON-RPC), and is answered in
// 0.3's shapes. The names of the two versions never overlap, so nothing a
// v1 client sends is read as 0.3.

// v03Call reports whether a JSON-RPC request is a 0.3 call to serve.
func (b *rpcBinding) v03Call(method string, hd http.Header) (v1 string, ok bool) {
	if b.core.opts.RefuseV03 {
		return "", false
	}
	v1, ok = a2av03.V1Method(method)
	if !ok {
		return "", false
	}
	switch v := strings.TrimSpace(hd.Get(a2a.HeaderVersion)); {
	case v == "", v == "0.3", strings.HasPrefix(v, "0.3."):
		return v1, true
	}
	return "", false
}

// notV03 answers a JSON-RPC call that names no A2A version other than
// 0.3 (no A2A-Version, which means 0.3, or 0.3 itself) and a method 0.3
// does not have, for what it most likely is: a v1 method without the
// header is a v1 client that forgot it (-32009, naming the header), and a
// name neither version has is -32601, whatever the version. nil leaves
// the call to the version check and the method table.
func (b *rpcBinding) notV03(method string, hd http.Header) *a2a.Error {
	v := strings.TrimSpace(hd.Get(a2a.HeaderVersion))
	if v != "" && v != "0.3" && !strings.HasPrefix(v, "0.3.") {
		return nil // a version was named: negotiate answers for it
	}
	if _, ok := a2av03.V1Method(method); ok {
		return nil // a 0.3 method: served, or refused as 0.3 when RefuseV03
	}
	if _, v1 := b.methods[method]; !v1 {
		return a2a.NewError(a2a.CodeMethodNotFound, "method %q not found", truncate(method, 64))
	}
	if v != "" {
		if b.core.opts.RefuseV03 {
			return nil // 0.3 itself is refused
		}
		return a2a.NewError(a2a.CodeMethodNotFound, "method %q is not an A2A 0.3 method; A2A %s methods need the header %s: %s",
			method, a2a.ProtocolVersion, a2a.HeaderVersion, a2a.ProtocolVersion)
	}
	e := a2a.CheckVersion("")
	e.Message = fmt.Sprintf("the A2A-Version header is missing: a request without it is A2A 0.3, which has no method %q; "+
		"send %s: %s", method, a2a.HeaderVersion, a2a.ProtocolVersion)
	return e
}

// v03HeaderExtensions is the header 0.3 clients list extensions in.
const v03HeaderExtensions = "X-A2A-Extensions"

// serve03 answers a JSON-RPC call in A2A 0.3's dialect: the request is
// converted to its v1 form, runs through the core like any other, and the
// answer is converted back.
func (b *rpcBinding) serve03(rc *rpcCall, method, v1 string, params json.RawMessage) {
	// a2a-js 0.3's client reads nothing but an event stream on a streaming
	// call: its refusals go as one SSE error event whatever it accepts.
	rc.sse = a2av03.Streaming(method)
	rc.call.Method = v1
	values := append(rc.r.Header.Values(v03HeaderExtensions), rc.r.Header.Values(a2a.HeaderExtensions)...)
	if e := b.core.negotiateExtensions(&rc.call, values); e != nil {
		rpcFail(rc, e)
		return
	}
	if active := rc.call.Extensions; len(active) > 0 {
		rc.w.Header().Set(v03HeaderExtensions, strings.Join(active, ", "))
	}
	_, req, e := a2av03.DecodeRequest(method, params)
	if e != nil {
		rpcFail(rc, e)
		return
	}
	ctx := rc.r.Context()
	co := b.core
	var resp any
	switch r := req.(type) {
	case *a2a.SendMessageRequest:
		if rc.sse {
			runRPCStream(b, rc, r, co.tasks.sendStreamingMessage, appendEvent03)
			return
		}
		resp, e = invoke(ctx, co, &rc.call, r, co.tasks.sendMessage)
	case *a2a.SubscribeToTaskRequest:
		runRPCStream(b, rc, r, co.tasks.subscribeToTask, appendEvent03)
		return
	case *a2a.GetTaskRequest:
		resp, e = invoke(ctx, co, &rc.call, r, co.tasks.getTask)
	case *a2a.CancelTaskRequest:
		resp, e = invoke(ctx, co, &rc.call, r, co.tasks.cancelTask)
	case *a2a.TaskPushNotificationConfig:
		resp, e = invoke(ctx, co, &rc.call, r, co.push.createConfig)
	case *a2a.GetTaskPushNotificationConfigRequest:
		if v1 == a2a.MethodDeleteTaskPushNotificationConfig {
			_, e = invoke(ctx, co, &rc.call, r, co.push.deleteConfig)
			resp = nil
		} else {
			resp, e = invoke(ctx, co, &rc.call, r, co.push.getConfig)
		}
	case *a2a.ListTaskPushNotificationConfigsRequest:
		resp, e = invoke(ctx, co, &rc.call, r, allPushConfigs03(co.push))
	case *a2a.GetExtendedAgentCardRequest:
		resp, e = invoke(ctx, co, &rc.call, r, co.extendedCard)
	default:
		e = a2a.NewError(a2a.CodeMethodNotFound, "method %q not found", truncate(method, 64))
	}
	if e != nil {
		rpcFail(rc, e)
		return
	}
	out, err := a2av03.EncodeResult(resp)
	if err != nil {
		co.log.ErrorContext(ctx, "a2asrv: encode a 0.3 result", "err", err)
		rpcFail(rc, a2a.NewError(a2a.CodeInternalError, "could not encode the result"))
		return
	}
	body := a2a.AppendResult(nil, rc.id, out)
	hd := rc.w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", itoa(len(body)))
	_, _ = rc.w.Write(body)
}

// allPushConfigs03 lists every config of a task: 0.3 answers one array,
// with no pages.
func allPushConfigs03(pm *pushMethods) unaryMethod[a2a.ListTaskPushNotificationConfigsRequest, *a2a.ListTaskPushNotificationConfigsResponse] {
	return func(ctx context.Context, c *Call, req *a2a.ListTaskPushNotificationConfigsRequest) (*a2a.ListTaskPushNotificationConfigsResponse, *a2a.Error) {
		all := &a2a.ListTaskPushNotificationConfigsResponse{}
		page := *req
		size := int32(maxPageSize)
		page.PageSize = &size
		for {
			resp, e := pm.listConfigs(ctx, c, &page)
			if e != nil {
				return nil, e
			}
			all.Configs = append(all.Configs, resp.Configs...)
			if resp.NextPageToken == "" || len(resp.Configs) == 0 {
				return all, nil
			}
			page.PageToken = resp.NextPageToken
		}
	}
}

// appendEvent03 writes a stream frame as its 0.3 event.
func appendEvent03(b []byte, resp *a2a.StreamResponse) ([]byte, error) {
	ev, err := a2av03.EncodeResult(resp)
	if err != nil {
		return nil, err
	}
	return append(b, ev...), nil
}
