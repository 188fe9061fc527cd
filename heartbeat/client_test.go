package heartbeat_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/secret"
)

const testToken = "tok-0123456789abcdef"

func fakeServer(t *testing.T, h http.HandlerFunc) *heartbeat.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := heartbeat.New(srv.URL+heartbeat.BasePath, secret.New(testToken), &heartbeat.Options{Retry: &resilience.Policy{}, Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNew(t *testing.T) {
	t.Setenv(heartbeat.URLEnv, "")
	for _, u := range []string{"", "ftp://x", "http://", "http://u:p@host", "http://host/?q=1"} {
		if _, err := heartbeat.New(u, secret.Value{}, nil); err == nil {
			t.Errorf("New(%q) took it", u)
		}
	}
	if _, err := heartbeat.New("http://host", secret.New("a\nb"), nil); err == nil {
		t.Error("New took a token of two lines")
	}
	t.Setenv(heartbeat.URLEnv, "http://127.0.0.1:1")
	if _, err := heartbeat.New("", secret.Value{}, nil); err != nil {
		t.Errorf("New from %s: %v", heartbeat.URLEnv, err)
	}
}

// The client sends the token, the tenant and the body it was given, and
// reads a bare list as well as the documented envelope.
func TestClientWire(t *testing.T) {
	var got *http.Request
	var body string
	c := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		switch r.Method {
		case http.MethodPost:
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"config_id":"c1","instance_id":"i1","status":"active","temporal_schedule_id":"heartbeat-c1"}`)
		default:
			io.WriteString(w, `[{"config_id":"c1","instance_id":"i1","status":"paused","triggers":[],"budget":null,"schedules":[]}]`)
		}
	})
	ctx := t.Context()
	created, err := c.CreateConfig(ctx, "a1", "i1", heartbeat.CreateRequest{CronExpression: "0 * * * *", AgentImage: "img",
		AgentImageTag: "1.0", TaskContent: "hi", Budget: &heartbeat.Budget{MaxDailyRuns: 24}})
	if err != nil || created.TemporalScheduleID != "heartbeat-c1" {
		t.Fatalf("CreateConfig = %+v, %v", created, err)
	}
	if got.URL.Path != "/api/v1/agent-ops/agents/a1/instances/i1/heartbeat-configs" || got.Header.Get("Authorization") != "Bearer "+testToken ||
		got.Header.Get("X-Tenant-ID") != "acme" {
		t.Errorf("request %s %s %v", got.Method, got.URL.Path, got.Header)
	}
	want := `{"cron_expression":"0 * * * *","agent_image":"img","agent_image_tag":"1.0","task_content":"hi","budget":{"max_daily_runs":24,"max_daily_tokens":0,"max_daily_cost_usd":0}}`
	if body != want {
		t.Errorf("body %s\nwant %s", body, want)
	}
	list, err := c.ListConfigs(ctx, "a1", "i1")
	if err != nil || len(list) != 1 || list[0].Status != heartbeat.StatusPaused {
		t.Errorf("ListConfigs of a bare list = %+v, %v", list, err)
	}
}

func TestClientErrors(t *testing.T) {
	c := fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"https://novaos.dev/problems/invalid-request","title":"Bad Request","status":400,
			"detail":"you sent Bearer `+testToken+`","errors":[{"field":"timezone","message":"unknown"}]}`)
	})
	ctx := t.Context()
	_, err := c.ListConfigs(ctx, "a1", "i1")
	var he *heartbeat.Error
	if !errors.As(err, &he) || !errors.Is(err, heartbeat.ErrInvalidRequest) || he.Errors[0].Field != "timezone" {
		t.Fatalf("ListConfigs = %v", err)
	}
	if strings.Contains(err.Error(), testToken) || strings.Contains(he.Detail, testToken) {
		t.Errorf("the token shows in the error: %v", err)
	}
	for name, call := range map[string]func() error{
		"no budget": func() error {
			_, err := c.CreateConfig(ctx, "a1", "i1", heartbeat.CreateRequest{CronExpression: "* * * * *", AgentImage: "i", AgentImageTag: "t", TaskContent: "x"})
			return err
		},
		"a config id with a slash": func() error { _, err := c.PauseConfig(ctx, "a1", "i1", "c/1"); return err },
		"an empty agent":           func() error { _, err := c.ListConfigs(ctx, "", "i1"); return err },
	} {
		var ie *heartbeat.InvalidError
		if err := call(); !errors.As(err, &ie) || !errors.Is(err, heartbeat.ErrInvalidRequest) {
			t.Errorf("%s: %v, want an *InvalidError", name, err)
		}
	}
}
