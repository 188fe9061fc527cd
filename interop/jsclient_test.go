package interop

import (
	"testing"

	"novaos.dev/novaos/a2a"
)

// TestJSClient runs the @a2a-js/sdk client scenario against our server and,
// as references, against a2a-js's and a2a-go's servers. Where the servers
// differ the table says so; our server's column is the spec's.
func TestJSClient(t *testing.T) {
	servers := []struct {
		name  string
		start func(*testing.T) string
		// Codes the server answers with where the peers disagree.
		sendToTerminal, subscribeTerminal int
	}{
		{
			name:              "novaos",
			start:             func(t *testing.T) string { return startOurServer(t).URL },
			sendToTerminal:    a2a.CodeUnsupportedOperation,
			subscribeTerminal: a2a.CodeUnsupportedOperation,
		},
		{
			name:              "a2a-js",
			start:             startJSPeer,
			sendToTerminal:    a2a.CodeUnsupportedOperation,
			subscribeTerminal: a2a.CodeUnsupportedOperation,
		},
		{
			// Deviations: a2a-go answers a message to a terminal task with
			// -32602 and a subscription to one with -32001 inside the stream
			// (or, racing its own cleanup, with just the task snapshot; see
			// TestGoServer_Deviation_SubscribeTerminalTask).
			name:              "a2a-go",
			start:             func(t *testing.T) string { return startGoPeer(t).URL },
			sendToTerminal:    a2a.CodeInvalidParams,
			subscribeTerminal: a2a.CodeTaskNotFound,
		},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			rep := runJSClient(t, srv.start(t))
			checkJSReport(t, rep, srv.sendToTerminal, srv.subscribeTerminal)
		})
	}
}

// TestJSClientHTTPJSON runs the same scenario with the a2a-js client
// preferring HTTP+JSON, and checks that every call our server saw came over
// that binding.
func TestJSClientHTTPJSON(t *testing.T) {
	srv := startOurServer(t)
	rep := runJSClientOver(t, a2a.BindingHTTPJSON, srv.URL)
	checkJSReport(t, rep, a2a.CodeUnsupportedOperation, a2a.CodeUnsupportedOperation)
	seen, _ := servedBindings.Load(srv.URL)
	if only, got := seen.(*bindingsSeen).only(a2a.BindingHTTPJSON); !only {
		t.Errorf("calls came over %v, want HTTP+JSON only", got)
	}
}

func checkJSReport(t *testing.T, rep *jsReport, sendToTerminal, subscribeTerminal int) {
	t.Helper()
	if rep.ProtocolVersion != "1.0" {
		t.Errorf("client protocol version %q, want 1.0", rep.ProtocolVersion)
	}
	card := jsResult[a2a.AgentCard](t, rep.step(t, "agentCard"))
	if len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].ProtocolBinding != a2a.BindingJSONRPC {
		t.Errorf("card interfaces = %+v", card.SupportedInterfaces)
	}

	sent := jsResult[a2a.SendMessageResponse](t, rep.step(t, "sendMessage"))
	task := sent.Task
	if task == nil || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("sendMessage = %+v, want a completed task", sent)
	}
	if len(task.Artifacts) != 1 || a2a.PartsText(task.Artifacts[0].Parts) != "echo: hello" {
		t.Errorf("sendMessage artifacts = %+v", task.Artifacts)
	}
	if len(task.History) == 0 || task.History[0].Role != a2a.RoleUser || task.History[0].Text() != "hello" {
		t.Errorf("sendMessage history = %+v", task.History)
	}

	reply := jsResult[a2a.SendMessageResponse](t, rep.step(t, "sendMessageReply"))
	if reply.Message == nil || reply.Message.Role != a2a.RoleAgent || reply.Message.Text() != "echo: message" {
		t.Errorf("sendMessageReply = %+v", reply)
	}

	stream := *jsResult[[]a2a.StreamResponse](t, rep.step(t, "sendMessageStream"))
	if len(stream) < 3 || stream[0].Task == nil || !stream[len(stream)-1].Final() || kind(&stream[len(stream)-1]) != "status:TASK_STATE_COMPLETED" {
		t.Errorf("sendMessageStream frames %v, want the task first and a completed status last", kindsOf(stream))
	} else {
		var artifact string
		for i := range stream {
			if stream[i].TaskID() != stream[0].Task.ID {
				t.Errorf("frame %d is about task %q, want %q", i, stream[i].TaskID(), stream[0].Task.ID)
			}
			if a := stream[i].ArtifactUpdate; a != nil {
				artifact = a2a.PartsText(a.Artifact.Parts)
			}
		}
		if artifact != "echo: stream me" {
			t.Errorf("streamed artifact %q", artifact)
		}
	}

	got := jsResult[a2a.Task](t, rep.step(t, "getTask"))
	if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted || len(got.History) > 1 {
		t.Errorf("getTask(historyLength 1) = id %q state %v history %d", got.ID, got.Status.State, len(got.History))
	}

	list := jsResult[a2a.ListTasksResponse](t, rep.step(t, "listTasks"))
	if len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID || len(list.Tasks[0].Artifacts) != 1 {
		t.Errorf("listTasks(context, includeArtifacts) = %+v", list)
	}
	again := jsResult[a2a.SendMessageResponse](t, rep.step(t, "sendMessageSameContext"))
	if again.Task == nil || again.Task.ContextID != task.ContextID {
		t.Errorf("sendMessageSameContext = %+v", again)
	}
	list = jsResult[a2a.ListTasksResponse](t, rep.step(t, "listTasksContext"))
	if len(list.Tasks) != 2 || again.Task == nil || list.Tasks[0].ID != again.Task.ID || list.Tasks[1].ID != task.ID {
		t.Errorf("listTasksContext = %d tasks, want the newer task first", len(list.Tasks))
	}
	for _, lt := range list.Tasks {
		if len(lt.Artifacts) != 0 {
			t.Errorf("listTasksContext: artifacts without includeArtifacts")
		}
	}

	if code := rep.step(t, "cancelCompletedTask").errCode(t); code != a2a.CodeTaskNotCancelable {
		t.Errorf("cancelCompletedTask code %d, want %d", code, a2a.CodeTaskNotCancelable)
	}
	if code := rep.step(t, "sendToTerminalTask").errCode(t); code != sendToTerminal {
		t.Errorf("sendToTerminalTask code %d, want %d", code, sendToTerminal)
	}
	if sub := rep.step(t, "subscribeTerminalTask"); subscribeTerminal == a2a.CodeTaskNotFound && sub.OK {
		if evs := *jsResult[[]a2a.StreamResponse](t, sub); len(evs) != 1 || kind(&evs[0]) != "task:TASK_STATE_COMPLETED" {
			t.Errorf("subscribeTerminalTask frames %v, want -32001 or only the completed task", kindsOf(evs))
		}
	} else if code := sub.errCode(t); code != subscribeTerminal {
		t.Errorf("subscribeTerminalTask code %d, want %d", code, subscribeTerminal)
	}
	if code := rep.step(t, "getUnknownTask").errCode(t); code != a2a.CodeTaskNotFound {
		t.Errorf("getUnknownTask code %d, want %d", code, a2a.CodeTaskNotFound)
	}

	created := jsResult[a2a.TaskPushNotificationConfig](t, rep.step(t, "createPushConfig"))
	if created.ID == "" || created.URL != "https://hooks.example.com/a2a" || created.Token != "tok-js" {
		t.Errorf("createPushConfig = %+v", created)
	}
	if cfg := jsResult[a2a.TaskPushNotificationConfig](t, rep.step(t, "getPushConfig")); cfg.ID != created.ID || cfg.URL != created.URL {
		t.Errorf("getPushConfig = %+v", cfg)
	}
	if cfgs := jsResult[a2a.ListTaskPushNotificationConfigsResponse](t, rep.step(t, "listPushConfigs")); len(cfgs.Configs) != 1 || cfgs.Configs[0].ID != created.ID {
		t.Errorf("listPushConfigs = %+v", cfgs)
	}
	if s := rep.step(t, "deletePushConfig"); !s.OK {
		t.Errorf("deletePushConfig: %+v", s.Error)
	}

	asked := jsResult[a2a.SendMessageResponse](t, rep.step(t, "askInput"))
	if asked.Task == nil || asked.Task.Status.State != a2a.TaskStateInputRequired || asked.Task.Status.Message.Text() != "what number?" {
		t.Errorf("askInput = %+v, want INPUT_REQUIRED with the question", asked)
	} else if answered := jsResult[a2a.SendMessageResponse](t, rep.step(t, "answerInput")); answered.Task == nil || answered.Task.ID != asked.Task.ID ||
		answered.Task.Status.State != a2a.TaskStateCompleted || len(answered.Task.Artifacts) == 0 ||
		a2a.PartsText(answered.Task.Artifacts[len(answered.Task.Artifacts)-1].Parts) != "answer: 42" {
		t.Errorf("answerInput = %+v", answered)
	}
	if evs := *jsResult[[]a2a.StreamResponse](t, rep.step(t, "askInputStream")); len(evs) == 0 || !evs[len(evs)-1].Final() ||
		!(kind(&evs[len(evs)-1]) == "status:TASK_STATE_INPUT_REQUIRED" || kind(&evs[len(evs)-1]) == "task:TASK_STATE_INPUT_REQUIRED") {
		t.Errorf("askInputStream frames %v, want the stream to end at INPUT_REQUIRED", kindsOf(evs))
	}

	slow := jsResult[a2a.SendMessageResponse](t, rep.step(t, "sendSlowReturnImmediately"))
	if slow.Task == nil || slow.Task.Status.State.Terminal() {
		t.Fatalf("sendSlowReturnImmediately = %+v, want a live task", slow)
	}
	type subscribeAndCancel struct {
		Events   []a2a.StreamResponse `json:"events"`
		Canceled a2a.Task             `json:"canceled"`
	}
	sub := jsResult[subscribeAndCancel](t, rep.step(t, "subscribeAndCancel"))
	if len(sub.Events) < 2 || sub.Events[0].Task == nil || sub.Events[0].Task.ID != slow.Task.ID {
		t.Errorf("subscribeAndCancel frames %v, want the task snapshot first", kindsOf(sub.Events))
	} else if last := &sub.Events[len(sub.Events)-1]; kind(last) != "status:TASK_STATE_CANCELED" {
		t.Errorf("subscribeAndCancel frames %v, want a canceled status last", kindsOf(sub.Events))
	}
	if sub.Canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("cancelTask state %v", sub.Canceled.Status.State)
	}
	if final := jsResult[a2a.Task](t, rep.step(t, "getCanceledTask")); final.Status.State != a2a.TaskStateCanceled {
		t.Errorf("getCanceledTask state %v", final.Status.State)
	}
}

func kindsOf(evs []a2a.StreamResponse) []string {
	out := make([]string, len(evs))
	for i := range evs {
		out[i] = kind(&evs[i])
	}
	return out
}
