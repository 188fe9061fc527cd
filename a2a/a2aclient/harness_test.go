package a2aclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

// agent is an in-process a2asrv server with a scripted executor.
type agent struct {
	srv     *httptest.Server
	h       *a2asrv.Handler
	card    *a2a.AgentCard
	release chan struct{} // "hold" executions wait for it
	chunked chan struct{} // a "hold" execution has written its chunks (buffered: one per execution)
	headers chan http.Header
}

type agentOptions struct {
	tenant   string
	push     bool
	extended bool
	wrap     func(http.Handler) http.Handler
}

var clock = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newAgent(t testing.TB, o *agentOptions) *agent {
	t.Helper()
	if o == nil {
		o = &agentOptions{}
	}
	a := &agent{release: make(chan struct{}), chunked: make(chan struct{}, 16), headers: make(chan http.Header, 100)}
	var handler atomic.Pointer[http.Handler]
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case a.headers <- r.Header.Clone():
		default:
		}
		(*handler.Load()).ServeHTTP(w, r)
	}))
	var mu sync.Mutex
	n := 0
	opts := &a2asrv.Options{
		Now: func() time.Time { return clock },
		NewID: func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("id-%03d", n)
		},
		KeepAlive: time.Hour,
	}
	if o.push {
		opts.PushConfigStore = a2asrv.NewMemoryPushConfigStore(nil)
	}
	a.card = &a2a.AgentCard{
		Name: "scripted", Description: "Test agent", Version: "1.0.0",
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: a.srv.URL + "/grpc", ProtocolBinding: "GRPC", ProtocolVersion: "1.0"},
			{URL: a.srv.URL, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion, Tenant: o.tenant},
		},
		Capabilities: a2a.AgentCapabilities{
			Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(o.push),
			Extensions: []a2a.AgentExtension{{URI: "https://example.com/ext/trace/v1"}},
		},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "script", Name: "script", Description: "Runs a script.", Tags: []string{"test"}}},
	}
	if o.extended {
		ext := *a.card
		ext.Description = "Extended card"
		opts.ExtendedCard = &ext
	}
	a.h = a2asrv.NewHandler(a.card, a2asrv.ExecutorFunc(a.execute), opts)
	var hh http.Handler = a.h
	if o.wrap != nil {
		hh = o.wrap(hh)
	}
	handler.Store(&hh)
	t.Cleanup(func() {
		a.srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = a.h.Shutdown(ctx)
	})
	return a
}

func agentMsg(u a2asrv.Updater, suffix, text string) *a2a.Message {
	return &a2a.Message{MessageID: u.TaskID() + "-" + suffix, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// execute runs the script named by the message's first word.
func (a *agent) execute(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
	word, rest, _ := strings.Cut(req.Message.Text(), " ")
	if req.Task != nil && req.Task.Status.State.Interrupted() {
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, agentMsg(u, "answer", "answer: "+req.Message.Text()), nil)
	}
	switch word {
	case "reply":
		return u.Reply(ctx, agentMsg(u, "reply", "You said: "+rest))
	case "ask":
		return u.UpdateStatus(ctx, a2a.TaskStateInputRequired, agentMsg(u, "ask", "which one?"), nil)
	case "slow":
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	case "steps", "hold":
		// steps N: N artifact chunks, then completed. hold N: the same,
		// but waits for a.release before completing.
		n, _ := strconv.Atoi(rest)
		if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
			return err
		}
		for i := range n {
			art := a2a.Artifact{ArtifactID: "out", Parts: []a2a.Part{a2a.TextPart(fmt.Sprintf("chunk %d;", i))}}
			if err := u.AddArtifact(ctx, art, i > 0, false, nil); err != nil {
				return err
			}
		}
		if word == "hold" {
			select {
			case a.chunked <- struct{}{}:
			default:
			}
			select {
			case <-a.release:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, agentMsg(u, "done", "done"), nil)
	}
	if err := u.UpdateStatus(ctx, a2a.TaskStateWorking, nil, nil); err != nil {
		return err
	}
	art := a2a.Artifact{ArtifactID: "echo", Parts: []a2a.Part{a2a.TextPart(req.Message.Text())}}
	if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
		return err
	}
	return u.UpdateStatus(ctx, a2a.TaskStateCompleted, agentMsg(u, "done", "done"), nil)
}

// msgReq is a SendMessageRequest with a fixed message id.
func msgReq(id, text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: &a2a.Message{MessageID: id, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}}
}
