package store

import (
	"context"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/delivery"
	"novaos.dev/novaos/gate"
	"novaos.dev/novaos/gateway"
	"novaos.dev/novaos/heartbeat"
	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/tools"
)

// Stores are the platform's stores on one database: what every service is
// built from. A nil field means the database keeps no such thing, and the
// service that needs it is not served.
type Stores struct {
	// Kind names the database for logs and /healthz: "sqlite",
	// "postgres", or what the caller who filled the value chose.
	Kind string
	// Shared is set when other processes serve from the same database
	// (PostgreSQL replicas): files every replica must agree on, such as
	// the push-credential key, then have to be given to all of them.
	Shared bool

	Tasks       a2asrv.TaskStore
	PushConfigs a2asrv.PushConfigStore
	// PushOutbox is filled by the task writes of Tasks and PushConfigs,
	// in their transactions; nil means push notifications are not sent.
	PushOutbox a2asrv.PushOutbox
	// Feed reports the task writes other processes make; nil when this
	// process is its tasks' only writer.
	Feed a2asrv.TaskFeed
	// Recoverer finds and settles the tasks of processes whose lease
	// lapsed; nil when nothing outlives a crash (an in-memory store).
	Recoverer a2asrv.Recoverer

	Registry registry.Store
	Memory   memory.Store
	Gate     gate.Store
	// Gateway keeps the execution gateway's instances, runs and events.
	Gateway gateway.Store
	// ToolServers keeps the upstream MCP servers tenants register with
	// the tool gateway.
	ToolServers tools.ServerStore
	// Tools keeps the tool gateway's MCP sessions and tenants' policies.
	Tools tools.Store
	// Files keeps the files of the tool gateway's novaos.files.* tools.
	Files tools.FileStore
	// Knowledge keeps the tool gateway's knowledge collections, ingest
	// jobs, documents and graphs (their chunks are in Memory).
	Knowledge tools.KnowledgeStore
	// LLM keeps the LLM gateway's providers, model routes, budgets and
	// usage ledger.
	LLM llm.Store
	// Schedules keeps the heartbeat schedules of instances and the ticks
	// servers handled.
	Schedules heartbeat.Store
	// Delivery keeps pull delivery's event streams, consumers, tokens,
	// DPoP proofs, Idempotency-Keys and messages.
	Delivery delivery.Store

	// Listener reports the database's notification listener: nil while it
	// listens, else why not. Nil for a database without one.
	Listener func() error
	// Pools reports the database's connection pools, for metrics; nil for
	// a database without any.
	Pools func() []PoolStats
	// TaskStates counts the tasks of Tasks by state, for metrics; nil when
	// the database cannot.
	TaskStates func(ctx context.Context) (map[a2a.TaskState]int64, error)
	// Close releases the database; nil when there is nothing to release.
	Close func() error
}

// PoolStats is a snapshot of one connection pool of a database.
type PoolStats struct {
	// Name tells the database's pools apart: "read" and "write" on
	// SQLite, "main" on PostgreSQL.
	Name string
	// MaxConns bounds the pool (0: no bound).
	MaxConns int
	// InUse and Idle are the connections open, busy and idle.
	InUse, Idle int
	// Waits counts the times, since the database was opened, that a
	// connection was asked for when none was free, and WaitTime is how
	// long those asks waited in all.
	Waits    int64
	WaitTime time.Duration
}
