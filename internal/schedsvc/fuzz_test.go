package schedsvc

import (
	"encoding/json"
	"testing"
	"time"

	"novaos.dev/novaos/heartbeat"
)

// FuzzPlanCreate: no create body panics the checks; one they accept has
// a zone that loads and a first run after now, and every field they
// refuse is named.
func FuzzPlanCreate(f *testing.F) {
	for _, s := range []string{
		`{"cron_expression":"0 * * * *","agent_image":"i","agent_image_tag":"t","task_content":"x","budget":{"max_daily_runs":1}}`,
		`{"cron_expression":"30 2 * * *","timezone":"America/New_York","agent_image":"i","agent_image_tag":"t","task_content":"x","budget":{"max_daily_runs":24,"max_daily_tokens":5,"max_daily_cost_usd":0.5}}`,
		`{"cron_expression":"@reboot","timezone":"Local","budget":null}`,
		`{"cron_expression":"0 0 31 2 *","timezone":"../etc/passwd","agent_image":" ","agent_image_tag":"-x","task_content":"","budget":{"max_daily_runs":-1}}`,
		`{"cron_expression":"*/0 * * * *","timezone":"Europe/Berlin","budget":{"max_daily_cost_usd":1e308}}`,
		`{"cron_expression":"0 9 * * *","timezone":"posix/Europe/Berlin","agent_image":"i","agent_image_tag":"t","task_content":"x","budget":{"max_daily_runs":1}}`,
		`{"cron_expression":"0 9 * * *","timezone":"europe/BERLIN","agent_image":"i","agent_image_tag":"t","task_content":"x","budget":{"max_daily_runs":1}}`,
	} {
		f.Add([]byte(s))
	}
	now := time.Date(2026, 7, 1, 10, 0, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		var in heartbeat.CreateRequest
		if json.Unmarshal(body, &in) != nil {
			return
		}
		p := configPath{agentID: "a", instanceID: "i"}
		pl, errs := planCreate(&in, &p, now)
		for _, fe := range errs {
			if fe.Field == "" || fe.Message == "" {
				t.Fatalf("a refusal names no field: %+v", fe)
			}
		}
		if len(errs) > 0 {
			return
		}
		if _, err := loadZone(pl.zone); err != nil {
			t.Fatalf("accepted zone %q does not load: %v", pl.zone, err)
		}
		if !pl.next.After(now) {
			t.Fatalf("accepted %q with a first run %v, not after now", in.CronExpression, pl.next)
		}
		if in.Budget == nil || in.Budget.MaxDailyRuns < 1 {
			t.Fatalf("accepted a create without a run budget: %+v", in.Budget)
		}
	})
}
