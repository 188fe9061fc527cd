package a2asrv_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
)

func ExampleNewHandler() {
	card := &a2a.AgentCard{
		Name: "greeter", Description: "Says hello.", Version: "1.0.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []a2a.AgentSkill{{ID: "greet", Name: "greet", Description: "Greets.", Tags: []string{"demo"}}},
	}
	exec := a2asrv.ExecutorFunc(func(ctx context.Context, req *a2asrv.RequestContext, u a2asrv.Updater) error {
		art := a2a.Artifact{ArtifactID: "greeting", Parts: []a2a.Part{a2a.TextPart("Hello, " + req.Message.Text() + "!")}}
		if err := u.AddArtifact(ctx, art, false, true, nil); err != nil {
			return err
		}
		return u.UpdateStatus(ctx, a2a.TaskStateCompleted, nil, nil)
	})
	h := a2asrv.NewHandler(card, exec, nil)
	defer h.Shutdown(context.Background())
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"Ada"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r, _ := a2a.DecodeResponse(raw)
	var out a2a.SendMessageResponse
	_ = a2a.Unmarshal(r.Result, &out)
	fmt.Println(out.Task.Status.State, a2a.PartsText(out.Task.Artifacts[0].Parts))
	// Output: TASK_STATE_COMPLETED Hello, Ada!
}
