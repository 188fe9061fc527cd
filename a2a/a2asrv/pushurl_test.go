package a2asrv_test

import (
	"context"
	"strings"
	"testing"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/netguard"
)

// Webhook URLs are checked when stored, on both paths that store one.
func TestPushURLPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy *netguard.Policy
		url    string
		ok     bool
	}{
		{"public", nil, "https://hooks.example.com/a2a?x=1", true},
		{"public IPv4 with port", nil, "http://93.184.215.14:8443/hook", true},
		{"loopback", nil, "http://127.0.0.1:9000/hook", false},
		{"localhost", nil, "http://localhost:9000/hook", false},
		{"::1", nil, "http://[::1]:9000/hook", false},
		{"unspecified", nil, "http://0.0.0.0:9000/hook", false},
		{"mapped loopback", nil, "http://[::ffff:127.0.0.1]/", false},
		{"compatible loopback", nil, "http://[::127.0.0.1]/", false},
		{"NAT64 loopback", nil, "http://[64:ff9b::7f00:1]/", false},
		{"6to4 loopback", nil, "http://[2002:7f00:1::1]/", false},
		{"Teredo loopback", nil, "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", false},
		{"private", nil, "http://10.0.0.7/hook", false},
		{"site-local", nil, "http://[fec0::1]/hook", false},
		{"metadata", nil, "http://169.254.169.254/latest/meta-data/", false},
		{"metadata v6", nil, "http://[fd00:ec2::254]/", false},
		{"metadata name", nil, "http://metadata.google.internal/", false},
		{"octal", nil, "http://0177.0.0.1/", false},
		{"decimal", nil, "http://2130706433/", false},
		{"short", nil, "http://127.1/", false},
		{"port 0", nil, "https://hooks.example.com:0/", false},
		{"port 99999", nil, "https://hooks.example.com:99999/", false},
		{"user info", nil, "https://u:p@hooks.example.com/", false},
		{"not http", nil, "file:///etc/passwd", false},
		{"empty", nil, "", false},
		{"too long", nil, "https://hooks.example.com/" + strings.Repeat("a", 2048), false},
		{"loopback allowed", &netguard.Policy{AllowLoopback: true}, "http://127.0.0.1:9000/hook", true},
		{"private allowed", &netguard.Policy{AllowPrivate: true}, "http://10.0.0.7/hook", true},
		{"metadata never", &netguard.Policy{AllowLoopback: true, AllowPrivate: true}, "http://169.254.169.254/", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := a2asrv.NewMemoryPushConfigStore(nil)
			c, _ := newServer(t, a2asrv.ExecutorFunc(scripted), &a2asrv.Options{PushConfigStore: store, PushURLPolicy: tc.policy})
			var resp a2a.SendMessageResponse
			if err := c.call(a2a.MethodSendMessage, userMessage("complete it"), &resp); err != nil {
				t.Fatal(err)
			}
			check := func(how string, err *a2a.Error) {
				t.Helper()
				switch {
				case tc.ok && err != nil:
					t.Errorf("%s %q: %v, want it stored", how, tc.url, err)
				case !tc.ok && (err == nil || err.Code != a2a.CodeInvalidParams):
					t.Errorf("%s %q: %v, want -32602", how, tc.url, err)
				case !tc.ok && tc.url != "" && strings.Contains(err.Message, tc.url):
					t.Errorf("%s: the error repeats the URL: %s", how, err.Message)
				}
			}
			check("CreateTaskPushNotificationConfig", c.call(a2a.MethodCreateTaskPushNotificationConfig,
				map[string]any{"taskId": resp.Task.ID, "id": "create", "url": tc.url}, nil))

			inline := userMessage("complete inline")
			inline["configuration"] = map[string]any{"taskPushNotificationConfig": map[string]any{"id": "inline", "url": tc.url}}
			var sent a2a.SendMessageResponse
			err := c.call(a2a.MethodSendMessage, inline, &sent)
			check("SendMessage with an inline config", err)

			// A refused config is not stored on either path.
			want := 0
			if tc.ok {
				want = 1
			}
			for _, task := range []*a2a.Task{resp.Task, sent.Task} {
				if task == nil {
					continue
				}
				got, _, lerr := store.List(context.Background(), a2asrv.Scope{}, task.ID, 0, "")
				if lerr != nil {
					t.Fatal(lerr)
				}
				if len(got) != want {
					t.Errorf("task %s has %d configs stored, want %d", task.ID, len(got), want)
				}
			}
		})
	}
}
