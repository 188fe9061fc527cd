package knowledge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/tools"
)

// Names of the tools.
const (
	ToolCreateCollection = "novaos.knowledge.create_collection"
	ToolListCollections  = "novaos.knowledge.list_collections"
	ToolDeleteCollection = "novaos.knowledge.delete_collection"
	ToolIngest           = "novaos.knowledge.ingest"
	ToolJobStatus        = "novaos.knowledge.job_status"
	ToolSearch           = "novaos.knowledge.search"
	ToolBuildGraph       = "novaos.knowledge.build_graph"
	ToolGraphStatus      = "novaos.knowledge.graph_status"
	ToolQueryGraphLocal  = "novaos.knowledge.query_graph_local"
	ToolQueryGraphGlobal = "novaos.knowledge.query_graph_global"
)

// Scopes a call needs besides mcp:tools:<name>: reads (search, status,
// listings, graph queries) need ScopeRead; changes (collections, ingest,
// graph builds) ScopeWrite.
const (
	ScopeRead  = "knowledge:read"
	ScopeWrite = "knowledge:write"
)

// Codes of failed results, beside tools.ReasonInvalidArguments.
const (
	CodeNotFound = "NOT_FOUND"
	CodeExists   = "ALREADY_EXISTS"
	CodeLimit    = "LIMIT_EXCEEDED"
)

// Defaults of Options.
const (
	DefaultMaxDocumentBytes = 5 << 20
	DefaultMaxChunks        = 8192
	DefaultMaxCollections   = 100
	DefaultMaxActiveJobs    = 500
	DefaultMaxMetadataBytes = 16 << 10
	DefaultMaxAttempts      = 3
	DefaultJobLease         = 2 * time.Minute
	DefaultRetryBackoff     = 10 * time.Second
	DefaultJobTimeout       = 15 * time.Minute
	DefaultPollEvery        = 2 * time.Second
	DefaultWorkers          = 2
	DefaultIndexConcurrency = 8
	DefaultJobRetention     = 7 * 24 * time.Hour
	DefaultMaxGraphChunks   = 20000
	DefaultMaxGraphEntities = 10000
	DefaultMaxGraphEdges    = 50000
	DefaultGraphLease       = 10 * time.Minute
	DefaultGraphCache       = 16
	// DefaultCollection is the collection an ingest that names none goes
	// to, made on first use.
	DefaultCollection = "default"
	// DefaultTopK and MaxTopK bound a search's results.
	DefaultTopK = 5
	MaxTopK     = 50
)

// Options configure a Provider; nil or zero fields mean the defaults.
type Options struct {
	// Now is the clock (tests inject one).
	Now func() time.Time
	// Embedder makes the vectors of chunks and queries: give it the memory
	// service's, so the two search alike. Nil is memory.NewHashEmbedder(0).
	Embedder memory.Embedder
	Logger   *slog.Logger
	// WorkerID names this process's worker in job and graph leases
	// (default: random). Two processes must not share one.
	WorkerID string

	// MaxDocumentBytes bounds an ingested document (default 5 MiB).
	MaxDocumentBytes int
	// MaxChunks bounds the chunks of one document (default 8192): a
	// document that makes more is refused.
	MaxChunks int
	// Chunks sizes chunks (default DefaultChunkBytes with
	// DefaultChunkOverlap).
	Chunks ChunkOptions
	// MaxCollections bounds a tenant's collections (default 100).
	MaxCollections int
	// MaxActiveJobs bounds a tenant's pending and running ingest jobs
	// (default 500): each holds its document until it is indexed.
	MaxActiveJobs int
	// MaxMetadataBytes bounds an ingest's metadata (default 16 KiB).
	MaxMetadataBytes int

	// MaxAttempts is how often a job is tried before it is dead-lettered
	// (default 3).
	MaxAttempts int
	// JobLease is how long a claimed job is a worker's without news from
	// it (default 2 minutes): the worker renews it after each batch of
	// chunks, and another takes the job over once it lapses. A deleted
	// collection's chunks are purged one lease after the deletion.
	JobLease time.Duration
	// RetryBackoff is the wait before a failed job's second attempt,
	// doubling for each one after (default 10s).
	RetryBackoff time.Duration
	// JobTimeout bounds one attempt at a job (default 15 minutes).
	JobTimeout time.Duration
	// PollEvery is how often the worker looks for work it was not told of
	// (default 2s; ingests and graph requests of this process wake it at
	// once).
	PollEvery time.Duration
	// Workers is how many jobs a worker runs at once (default 2);
	// IndexConcurrency how many chunks of one job it stores at once
	// (default 8).
	Workers, IndexConcurrency int
	// JobRetention is how long an ended job stays readable (default 7
	// days).
	JobRetention time.Duration

	// MaxGraphChunks bounds the collections a graph is built for, by
	// their chunks (default 20000); MaxGraphEntities and MaxGraphEdges
	// bound what a graph keeps (default 10000 and 50000), the most
	// mentioned entities and the heaviest relationships.
	MaxGraphChunks, MaxGraphEntities, MaxGraphEdges int
	// GraphLease is how long a claimed graph build is a worker's (default
	// 10 minutes).
	GraphLease time.Duration
	// GraphCache is how many decoded graphs are kept for queries (default
	// 16).
	GraphCache int
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func orDur(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

func (o Options) resolve() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Embedder == nil {
		o.Embedder = memory.NewHashEmbedder(0)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.WorkerID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.WorkerID = "knowledge-" + hex.EncodeToString(b[:])
	}
	o.MaxDocumentBytes = orInt(o.MaxDocumentBytes, DefaultMaxDocumentBytes)
	o.MaxChunks = orInt(o.MaxChunks, DefaultMaxChunks)
	o.Chunks = o.Chunks.resolve()
	o.Chunks.MaxBytes = min(o.Chunks.MaxBytes, memory.MaxContentBytes)
	o.Chunks.OverlapBytes = min(o.Chunks.OverlapBytes, o.Chunks.MaxBytes/2)
	o.MaxCollections = orInt(o.MaxCollections, DefaultMaxCollections)
	o.MaxActiveJobs = orInt(o.MaxActiveJobs, DefaultMaxActiveJobs)
	o.MaxMetadataBytes = orInt(o.MaxMetadataBytes, DefaultMaxMetadataBytes)
	o.MaxAttempts = orInt(o.MaxAttempts, DefaultMaxAttempts)
	o.JobLease = orDur(o.JobLease, DefaultJobLease)
	o.RetryBackoff = orDur(o.RetryBackoff, DefaultRetryBackoff)
	o.JobTimeout = orDur(o.JobTimeout, DefaultJobTimeout)
	o.PollEvery = orDur(o.PollEvery, DefaultPollEvery)
	o.Workers = orInt(o.Workers, DefaultWorkers)
	o.IndexConcurrency = orInt(o.IndexConcurrency, DefaultIndexConcurrency)
	o.JobRetention = orDur(o.JobRetention, DefaultJobRetention)
	o.MaxGraphChunks = orInt(o.MaxGraphChunks, DefaultMaxGraphChunks)
	o.MaxGraphEntities = orInt(o.MaxGraphEntities, DefaultMaxGraphEntities)
	o.MaxGraphEdges = orInt(o.MaxGraphEdges, DefaultMaxGraphEdges)
	o.GraphLease = orDur(o.GraphLease, DefaultGraphLease)
	o.GraphCache = orInt(o.GraphCache, DefaultGraphCache)
	return o
}

// Provider serves the novaos.knowledge.* tools (a toolgw.Provider) and
// runs their background work (Run): ingest jobs, graph builds, purges of
// deleted collections. Every call is keyed by the caller's verified
// tenant.
type Provider struct {
	ks  tools.KnowledgeStore // nil: the service is off
	ms  memory.Store
	o   Options
	log *slog.Logger

	kick   chan struct{} // work is waiting
	graphs graphCache
}

var _ toolgw.Provider = (*Provider)(nil)

// New returns a Provider over ks (collections, jobs, documents, graphs)
// and ms (the chunks, searched by the memory retrieval engine). With
// either nil the tools are listed but every call fails with
// tools.ReasonServiceDisabled.
func New(ks tools.KnowledgeStore, ms memory.Store, o *Options) *Provider {
	var opts Options
	if o != nil {
		opts = *o
	}
	opts = opts.resolve()
	p := &Provider{ms: ms, o: opts, log: opts.Logger, kick: make(chan struct{}, 1), graphs: graphCache{max: opts.GraphCache}}
	if ks != nil && ms != nil {
		p.ks = ks
	}
	return p
}

// Tools lists the knowledge tools; every tenant has them all.
func (p *Provider) Tools(ctx context.Context, c *toolgw.Caller) ([]toolgw.Tool, error) {
	out := make([]toolgw.Tool, len(toolList))
	for i, d := range toolList {
		out[i] = d.tool()
	}
	return out, nil
}

// Find returns the knowledge tool called name.
func (p *Provider) Find(ctx context.Context, c *toolgw.Caller, name string) (*toolgw.Tool, bool, error) {
	d, ok := toolsByName[name]
	if !ok {
		return nil, false, nil
	}
	t := d.tool()
	return &t, true, nil
}

// callError is a call that ran and was refused: the result the caller
// reads, with a code.
type callError struct{ code, msg string }

func (e *callError) Error() string { return e.code + ": " + e.msg }

func invalid(format string, args ...any) error {
	return &callError{tools.ReasonInvalidArguments, fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &callError{CodeNotFound, fmt.Sprintf(format, args...)}
}

func limited(format string, args ...any) error {
	return &callError{CodeLimit, fmt.Sprintf(format, args...)}
}

// Call runs a knowledge tool. Bad arguments, unknown ids and limits are
// failed results; a store that fails is tools.ReasonUnavailable, its
// cause logged, not sent.
func (p *Provider) Call(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if r == nil || r.Tool == nil {
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "knowledge: no tool named")
	}
	d, ok := toolsByName[r.Tool.Name]
	if !ok {
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "knowledge: no tool %s", r.Tool.Name)
	}
	if p.ks == nil {
		return nil, toolgw.Failf(tools.ReasonServiceDisabled, "knowledge collections are not configured on this server")
	}
	if r.Caller == nil || r.Caller.Tenant == "" {
		return nil, toolgw.Failf(tools.ReasonTenantMismatch, "knowledge: the call names no tenant")
	}
	if max := 6*p.o.MaxDocumentBytes + 2*p.o.MaxMetadataBytes; len(r.Arguments) > max {
		return toolgw.ErrorResult(tools.ReasonInvalidArguments, fmt.Sprintf("the arguments are %d bytes, more than %d", len(r.Arguments), max)), nil
	}
	out, err := d.run(p, ctx, r.Caller.Tenant, &arguments{raw: r.Arguments, fields: d.fields})
	var ce *callError
	var te *toolgw.Error
	switch {
	case err == nil:
		return toolgw.JSONResult(out)
	case errors.As(err, &ce):
		return toolgw.ErrorResult(ce.code, ce.msg), nil
	case errors.As(err, &te):
		return nil, te
	case ctx.Err() != nil:
		return nil, toolgw.Failf(tools.ReasonTimeout, "knowledge: %s did not finish in time", r.Tool.Name)
	}
	p.log.ErrorContext(ctx, "knowledge: a call failed", "tool", r.Tool.Name, "tenant", r.Caller.Tenant, "err", err)
	return nil, toolgw.Failf(tools.ReasonUnavailable, "knowledge: the store is unavailable, try again")
}

// wake tells Run that work is waiting.
func (p *Provider) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// graphCache keeps the decoded graphs queries read most recently, by
// tenant, collection and build time.
type graphCache struct {
	mu    sync.Mutex
	max   int
	order []graphKey // least recently used first
	m     map[graphKey]*graphIndex
}

type graphKey struct {
	tenant, collection string
	built              time.Time
}

func (c *graphCache) get(k graphKey) *graphIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.m[k]
	if g != nil {
		c.touch(k)
	}
	return g
}

func (c *graphCache) put(k graphKey, g *graphIndex) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[graphKey]*graphIndex{}
	}
	if _, ok := c.m[k]; !ok && len(c.m) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = g
	c.touch(k)
}

// drop forgets the graphs of a collection.
func (c *graphCache) drop(tenant, collection string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.tenant == tenant && k.collection == collection {
			delete(c.m, k)
			c.order = slices.DeleteFunc(c.order, func(x graphKey) bool { return x == k })
		}
	}
}

func (c *graphCache) touch(k graphKey) {
	for i, x := range c.order {
		if x == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	c.order = append(c.order, k)
}
