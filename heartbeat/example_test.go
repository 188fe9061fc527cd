package heartbeat_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/secret"
)

func ExampleClient_CreateConfig() {
	// A stand-in for the platform, which has a config for the instance
	// once the first create is through.
	created := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if created {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"type":"`+heartbeat.ProblemConfigExists+`","title":"Conflict","status":409}`)
			return
		}
		created = true
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"config_id":"c-1","instance_id":"inst-1","status":"active","temporal_schedule_id":"heartbeat-c-1"}`)
	}))
	defer srv.Close()

	hb, err := heartbeat.New(srv.URL, secret.New("a platform token"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := heartbeat.CreateRequest{
		CronExpression: "0 * * * *", Timezone: "Europe/Berlin",
		AgentImage: "registry.example.com/agents/joke", AgentImageTag: "1.1.10",
		TaskContent: "Check in on any pending tasks.",
		Budget:      &heartbeat.Budget{MaxDailyRuns: 24, MaxDailyTokens: 100_000, MaxDailyCostUSD: 5},
	}
	c, err := hb.CreateConfig(context.Background(), "joke", "inst-1", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ConfigID, c.Status)
	_, err = hb.CreateConfig(context.Background(), "joke", "inst-1", req)
	fmt.Println(errors.Is(err, heartbeat.ErrExists))
	// Output:
	// c-1 active
	// true
}
