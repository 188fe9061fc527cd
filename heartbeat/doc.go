// Package heartbeat is the client, wire model and store contract of heartbeat schedules.
//
// A heartbeat config runs an installed agent instance on a cron schedule:
// at every tick the platform starts a run of the instance with the
// config's task content as its input, within a daily budget (runs, and
// the tokens and cost the runs use). An instance has at most one config.
// The API is served under BasePath, /api/v1/agent-ops:
//
//	POST   /agents/{agentId}/instances/{instanceId}/heartbeat-configs                     create (201, 409 for a second)
//	GET    /agents/{agentId}/instances/{instanceId}/heartbeat-configs                     {"configs": [...]}
//	GET    /agents/{agentId}/instances/{instanceId}/heartbeat-configs/{configId}          one config
//	POST   /agents/{agentId}/instances/{instanceId}/heartbeat-configs/{configId}/pause    idempotent
//	POST   /agents/{agentId}/instances/{instanceId}/heartbeat-configs/{configId}/resume   idempotent
//	DELETE /agents/{agentId}/instances/{instanceId}/heartbeat-configs/{configId}          204
//
// The fields are the NovaOS Python SDK's HeartbeatClient's (snake_case:
// config_id, cron_expression, budget.max_daily_runs, schedules[].next_run_at,
// …), so a client written against it works unchanged. The schedule of a
// config also says what became of its latest tick (last_fire) and which
// ticks were missed while no server was running (missed): those are
// reported, never run late.
//
// [Client] calls the API and retries every call on a passing failure
// (connection errors, 429, 502, 503, 504) behind a circuit breaker, which
// is safe because a repeated create gets 409 and pause and resume change
// nothing the second time:
//
//	hb, err := heartbeat.New("http://127.0.0.1:8080", token, nil)
//	created, err := hb.CreateConfig(ctx, agentID, instanceID, heartbeat.CreateRequest{
//		CronExpression: "0 * * * *", Timezone: "Europe/Berlin",
//		AgentImage: "registry.example.com/agents/joke", AgentImageTag: "1.1.10",
//		TaskContent: "Check in on any pending tasks.",
//		Budget: &heartbeat.Budget{MaxDailyRuns: 24, MaxDailyTokens: 100_000, MaxDailyCostUSD: 5},
//	})
//	if errors.Is(err, heartbeat.ErrExists) { … } // the instance has a config already
//
// [Store] is the contract the platform keeps configs and their fires in;
// store/sqlite and store/postgres implement it, store/storetest checks
// them, and [NewMemoryStore] keeps them in process. The cron expressions
// are package heartbeat/cron's.
package heartbeat
