package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/tools"
)

// embedBatch is how many chunks are embedded in one call, and indexed
// between two renewals of a job's lease.
const embedBatch = 32

// partitionOf is the memory partition of a collection's chunks: tenant
// scope, owned by the collection, which no memory-service call can name
// (its tenant scope has no owner).
func partitionOf(collection string) memory.Partition {
	return memory.Partition{Scope: memory.ScopeTenant, Owner: "knowledge:" + collection}
}

// chunkID is the memory id of a document's i-th chunk: derived, so that a
// job resumed after a crash finds the chunks it wrote.
func chunkID(document string, i int) string { return document + "#" + strconv.Itoa(i) }

// chunkMeta is what a chunk's memory carries in Custom: its place.
type chunkMeta struct {
	DocumentID string `json:"document_id"`
	ChunkIndex int    `json:"chunk_index"`
	Start      int    `json:"start"`
	End        int    `json:"end"`
}

func metaOf(m *memory.Memory) (chunkMeta, bool) {
	var c chunkMeta
	if len(m.Custom) == 0 || json.Unmarshal(m.Custom, &c) != nil || c.DocumentID == "" {
		return c, false
	}
	return c, true
}

// Round counts what one RunOnce did.
type Round struct {
	// Jobs counts the jobs attempted: ended, or put back for a retry.
	Jobs int
	// Graphs counts the graph builds that ended.
	Graphs int
	// Purged counts the deleted collections whose chunks were removed.
	Purged int
	// Swept counts the ended jobs deleted past Options.JobRetention.
	Swept int
}

// Run does the background work until ctx ends: at once, every
// Options.PollEvery, and whenever a call of this process queued work.
// Work a stopped Run leaves is durable: another worker resumes it once its
// lease lapses.
func (p *Provider) Run(ctx context.Context) {
	if p.ks == nil {
		return
	}
	t := time.NewTicker(p.o.PollEvery)
	defer t.Stop()
	for {
		if _, err := p.RunOnce(ctx); err != nil && ctx.Err() == nil {
			p.log.WarnContext(ctx, "knowledge: background work failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

// RunOnce does one round of the background work and returns when it is
// done: it runs every ingest job due (Options.Workers at a time), builds
// every graph requested, purges the chunks of collections deleted one job
// lease ago or more, and sweeps old jobs. A job that fails is retried in a
// later round, after its backoff.
func (p *Provider) RunOnce(ctx context.Context) (Round, error) {
	if p.ks == nil {
		return Round{}, errors.New("knowledge: no store is configured")
	}
	var r Round
	var errs []error
	var err error
	if r.Jobs, err = p.runJobs(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.Graphs, err = p.runGraphs(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.Purged, err = p.purge(ctx); err != nil {
		errs = append(errs, err)
	}
	if r.Swept, err = p.ks.SweepJobs(ctx, p.o.Now().Add(-p.o.JobRetention), tools.MaxKnowledgePage); err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

func (p *Provider) runJobs(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		now := p.o.Now()
		jobs, err := p.ks.ClaimJobs(ctx, p.o.WorkerID, now, now.Add(p.o.JobLease), p.o.Workers)
		if err != nil {
			return n, err
		}
		if len(jobs) == 0 {
			break
		}
		var wg sync.WaitGroup
		for i := range jobs {
			wg.Go(func() { p.runJob(ctx, &jobs[i]) })
		}
		wg.Wait()
		n += len(jobs)
	}
	return n, ctx.Err()
}

// errLost: the job's claim is gone (another worker took it over, or its
// collection was deleted); whoever holds the job now decides its fate.
var errLost = errors.New("knowledge: the job's lease was lost")

// permanentError is a failure a retry would repeat.
type permanentError struct{ msg string }

func (e *permanentError) Error() string { return e.msg }

func (p *Provider) runJob(ctx context.Context, j *tools.Job) {
	if j.Attempts > p.o.MaxAttempts {
		// Claimed again and again without an outcome: the worker stopped
		// during each attempt.
		p.endJob(ctx, j, tools.JobOutcome{Status: tools.JobDeadLetter,
			Error: fmt.Sprintf("gave up after %d attempts that did not finish", j.Attempts-1)})
		return
	}
	jctx, cancel := context.WithTimeout(ctx, p.o.JobTimeout)
	defer cancel()
	err := p.index(jctx, j)
	switch {
	case err == nil, errors.Is(err, errLost):
		return
	case ctx.Err() != nil:
		return // stopped: the lease lapses and a worker resumes the job
	}
	msg, permanent := classify(err)
	p.log.WarnContext(ctx, "knowledge: an ingest attempt failed", "tenant", j.Tenant, "job", j.ID, "attempt", j.Attempts,
		"permanent", permanent, "err", err)
	now := p.o.Now()
	switch {
	case permanent:
		p.endJob(ctx, j, tools.JobOutcome{Status: tools.JobFailed, Error: msg})
	case j.Attempts >= p.o.MaxAttempts:
		p.endJob(ctx, j, tools.JobOutcome{Status: tools.JobDeadLetter, Error: fmt.Sprintf("gave up after %d attempts: %s", j.Attempts, msg)})
	default:
		backoff := p.o.RetryBackoff << min(j.Attempts-1, 16)
		if _, err := p.ks.FinishJob(ctx, j.Tenant, j.ID, p.o.WorkerID, j.Attempts, tools.JobOutcome{Status: tools.JobPending,
			Error: msg, NotBefore: now.Add(backoff), Now: now}); err != nil && ctx.Err() == nil {
			p.log.WarnContext(ctx, "knowledge: putting a job back failed", "job", j.ID, "err", err)
		}
	}
}

// endJob records a failed job's end, then removes the chunks it wrote:
// after, so that chunks a worker that took the job over relies on are
// never removed.
func (p *Provider) endJob(ctx context.Context, j *tools.Job, o tools.JobOutcome) {
	o.Now = p.o.Now()
	if _, err := p.ks.FinishJob(ctx, j.Tenant, j.ID, p.o.WorkerID, j.Attempts, o); err != nil {
		if ctx.Err() == nil && !errors.Is(err, tools.ErrKnowledgeConflict) {
			p.log.WarnContext(ctx, "knowledge: ending a job failed", "job", j.ID, "err", err)
		}
		return
	}
	p.forgetChunks(ctx, j, len(Split(j.Content, p.o.Chunks)), "ingest job "+string(o.Status))
}

// classify says what a failure tells the caller, and whether a retry
// would repeat it. Causes are logged, not told: they may name hosts or
// statements.
func classify(err error) (msg string, permanent bool) {
	var pe *permanentError
	var sc resilience.StatusCoder
	switch {
	case errors.As(err, &pe):
		return pe.msg, true
	case errors.As(err, &sc):
		s := sc.HTTPStatus()
		if s >= 400 && s < 500 && s != 408 && s != 429 {
			return fmt.Sprintf("the embedding service refused the document (HTTP %d)", s), true
		}
		return fmt.Sprintf("the embedding service failed (HTTP %d)", s), false
	case errors.Is(err, context.DeadlineExceeded):
		return "the attempt timed out", false
	}
	return "indexing failed: the embedding service or the store was unavailable", false
}

// index chunks and indexes a claimed job's document and commits it. It
// returns errLost when the claim is gone.
func (p *Provider) index(ctx context.Context, j *tools.Job) error {
	if dup, err := p.ks.DocumentByHash(ctx, j.Tenant, j.CollectionID, j.SHA256); err == nil {
		return p.commit(ctx, j, tools.JobOutcome{Status: tools.JobCompleted, DuplicateOf: dup.ID}, 0)
	} else if !errors.Is(err, tools.ErrKnowledgeNotFound) {
		return err
	}
	chunks := Split(j.Content, p.o.Chunks)
	switch {
	case len(chunks) == 0:
		return &permanentError{"the document is empty"}
	case len(chunks) > p.o.MaxChunks:
		return &permanentError{fmt.Sprintf("the document makes %d chunks, more than %d", len(chunks), p.o.MaxChunks)}
	}
	part := partitionOf(j.CollectionID)
	emb := p.o.Embedder
	for start := 0; start < len(chunks); start += embedBatch {
		batch := chunks[start:min(start+embedBatch, len(chunks))]
		texts := make([]string, len(batch))
		for i, c := range batch {
			texts[i] = c.Text
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed chunks: %w", err)
		}
		if len(vecs) != len(batch) {
			return fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(batch))
		}
		if err := p.putChunks(ctx, j, part, start, batch, vecs); err != nil {
			return err
		}
		err = p.ks.ExtendJob(ctx, j.Tenant, j.ID, p.o.WorkerID, j.Attempts, p.o.Now().Add(p.o.JobLease))
		if errors.Is(err, tools.ErrKnowledgeConflict) || errors.Is(err, tools.ErrKnowledgeNotFound) {
			return errLost
		}
		if err != nil {
			return err
		}
	}
	doc := &tools.Document{ID: j.ID, JobID: j.ID, SHA256: j.SHA256, Filename: j.Filename, SourceURL: j.SourceURL,
		Metadata: j.Metadata, Bytes: len(j.Content), Chunks: len(chunks), CreatedAt: p.o.Now()}
	return p.commit(ctx, j, tools.JobOutcome{Status: tools.JobCompleted, Document: doc}, len(chunks))
}

// commit completes a job; when the collection turned out to hold its
// content already, the chunks it wrote (n) are removed.
func (p *Provider) commit(ctx context.Context, j *tools.Job, o tools.JobOutcome, n int) error {
	o.Now = p.o.Now()
	got, err := p.ks.FinishJob(ctx, j.Tenant, j.ID, p.o.WorkerID, j.Attempts, o)
	if errors.Is(err, tools.ErrKnowledgeConflict) || errors.Is(err, tools.ErrKnowledgeNotFound) {
		return errLost
	}
	if err != nil {
		return err
	}
	if o.Document != nil && got.DuplicateOf != "" {
		p.forgetChunks(ctx, j, n, "duplicate of "+got.DuplicateOf)
	}
	return nil
}

// putChunks stores chunks first.. of a job with their vectors,
// IndexConcurrency at a time. A chunk stored by an earlier attempt is
// kept when it is the same chunk.
func (p *Provider) putChunks(ctx context.Context, j *tools.Job, part memory.Partition, first int, batch []Chunk, vecs [][]float32) error {
	sem := make(chan struct{}, p.o.IndexConcurrency)
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = p.putChunk(ctx, j, part, first+i, &batch[i], vecs[i])
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Provider) putChunk(ctx context.Context, j *tools.Job, part memory.Partition, i int, c *Chunk, vec []float32) error {
	if len(vec) == 0 || len(vec) > memory.MaxDims {
		return fmt.Errorf("the embedder returned a vector of %d numbers", len(vec))
	}
	meta := chunkMeta{DocumentID: j.ID, ChunkIndex: i, Start: c.Start, End: c.End}
	custom, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	now := p.o.Now()
	m := &memory.Memory{ID: chunkID(j.ID, i), Partition: part, Content: c.Text, Source: "knowledge", Custom: custom,
		Version: 1, CreatedAt: now, UpdatedAt: now, Embedding: &memory.Embedding{Model: p.o.Embedder.ModelID(), Vector: vec}}
	_, _, err = p.ms.Put(ctx, j.Tenant, m, memory.Key{})
	if !errors.Is(err, memory.ErrExists) {
		return err
	}
	old, err := p.ms.Get(ctx, j.Tenant, m.ID, now)
	if err == nil {
		if om, ok := metaOf(old); ok && om == meta && old.Content == m.Content && old.Partition == part {
			return nil
		}
	} else if !errors.Is(err, memory.ErrNotFound) {
		return err
	}
	// Chunked differently before (the chunk options changed): replace it.
	if _, _, err := p.ms.Forget(ctx, j.Tenant, part, m.ID, p.audit("rechunked by ingest job "+j.ID)); err != nil {
		return err
	}
	_, _, err = p.ms.Put(ctx, j.Tenant, m, memory.Key{})
	return err
}

func (p *Provider) audit(reason string) memory.Audit {
	return memory.Audit{EventID: a2a.NewID(), Actor: "knowledge", Reason: reason, At: p.o.Now()}
}

// forgetChunks removes the n chunks a job wrote. A failure is logged: the
// chunks of a document that was not committed are never returned, and the
// collection's purge removes them at the latest.
func (p *Provider) forgetChunks(ctx context.Context, j *tools.Job, n int, reason string) {
	part := partitionOf(j.CollectionID)
	for i := range n {
		if _, _, err := p.ms.Forget(ctx, j.Tenant, part, chunkID(j.ID, i), p.audit(reason)); err != nil {
			if ctx.Err() == nil {
				p.log.WarnContext(ctx, "knowledge: removing a job's chunks failed", "job", j.ID, "err", err)
			}
			return
		}
	}
}

// purge removes the chunks of collections deleted one job lease ago or
// more (by then no worker still writes them), then their records.
func (p *Provider) purge(ctx context.Context) (int, error) {
	cs, err := p.ks.PendingPurges(ctx, p.o.Now().Add(-p.o.JobLease), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cs {
		part := partitionOf(c.ID)
		for {
			ms, err := p.ms.List(ctx, c.Tenant, memory.Filter{Partition: part}, 500)
			if err != nil {
				return n, err
			}
			if len(ms) == 0 {
				break
			}
			for _, m := range ms {
				if _, _, err := p.ms.Forget(ctx, c.Tenant, part, m.ID, p.audit("knowledge collection deleted")); err != nil {
					return n, err
				}
			}
		}
		if err := p.ks.FinishPurge(ctx, c.Tenant, c.ID); err != nil && !errors.Is(err, tools.ErrKnowledgeNotFound) {
			return n, err
		}
		p.graphs.drop(c.Tenant, c.ID)
		n++
	}
	return n, nil
}

func (p *Provider) runGraphs(ctx context.Context) (int, error) {
	n := 0
	for ctx.Err() == nil {
		now := p.o.Now()
		cs, err := p.ks.ClaimGraphs(ctx, p.o.WorkerID, now, now.Add(p.o.GraphLease), 1)
		if err != nil {
			return n, err
		}
		if len(cs) == 0 {
			break
		}
		if p.buildOne(ctx, &cs[0]) {
			n++
		}
	}
	return n, ctx.Err()
}

// buildOne builds a claimed graph and reports whether the build ended. A
// build that fails for a reason other than the collection is retried when
// its lease lapses, up to MaxAttempts.
func (p *Provider) buildOne(ctx context.Context, c *tools.Collection) bool {
	finish := func(r tools.GraphResult) bool {
		r.Now = p.o.Now()
		err := p.ks.FinishGraph(ctx, c.Tenant, c.ID, p.o.WorkerID, c.Graph.Attempts, r)
		if err != nil && ctx.Err() == nil && !errors.Is(err, tools.ErrKnowledgeConflict) {
			p.log.WarnContext(ctx, "knowledge: recording a graph build failed", "collection", c.ID, "err", err)
		}
		return err == nil
	}
	if c.Graph.Attempts > p.o.MaxAttempts {
		return finish(tools.GraphResult{Status: tools.GraphFailed, Error: fmt.Sprintf("gave up after %d attempts that did not finish", c.Graph.Attempts-1)})
	}
	if c.Chunks > p.o.MaxGraphChunks {
		return finish(tools.GraphResult{Status: tools.GraphFailed,
			Error: fmt.Sprintf("the collection has %d chunks; graphs are built for at most %d", c.Chunks, p.o.MaxGraphChunks)})
	}
	g, err := p.graphOfChunks(ctx, c)
	if err == nil {
		var data []byte
		if data, err = encodeGraph(g); err == nil {
			return finish(tools.GraphResult{Status: tools.GraphCompleted, Entities: len(g.Entities),
				Relationships: len(g.Relationships), Communities: len(g.Communities), Data: data})
		}
	}
	if ctx.Err() != nil {
		return false
	}
	if pe := (*permanentError)(nil); errors.As(err, &pe) {
		return finish(tools.GraphResult{Status: tools.GraphFailed, Error: pe.msg})
	}
	p.log.WarnContext(ctx, "knowledge: a graph build failed", "tenant", c.Tenant, "collection", c.ID, "attempt", c.Graph.Attempts, "err", err)
	if c.Graph.Attempts >= p.o.MaxAttempts {
		return finish(tools.GraphResult{Status: tools.GraphFailed, Error: fmt.Sprintf("gave up after %d attempts: the store was unavailable", c.Graph.Attempts)})
	}
	return false
}

// graphOfChunks reads a collection's chunks, document by document, and
// builds its graph.
func (p *Provider) graphOfChunks(ctx context.Context, c *tools.Collection) (*graphData, error) {
	var docs []string
	var chunks []graphChunk
	now := p.o.Now()
	after := ""
	for {
		ds, err := p.ks.ListDocuments(ctx, c.Tenant, c.ID, after, tools.MaxKnowledgePage)
		if err != nil {
			return nil, err
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			di := len(docs)
			docs = append(docs, d.ID)
			for i := range d.Chunks {
				if len(chunks) >= p.o.MaxGraphChunks {
					return nil, &permanentError{fmt.Sprintf("the collection has more than %d chunks", p.o.MaxGraphChunks)}
				}
				m, err := p.ms.Get(ctx, c.Tenant, chunkID(d.ID, i), now)
				if errors.Is(err, memory.ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				chunks = append(chunks, graphChunk{ref: chunkRef{di, i}, text: m.Content})
			}
		}
		after = ds[len(ds)-1].ID
	}
	return buildGraph(docs, chunks, graphLimits{entities: p.o.MaxGraphEntities, relationships: p.o.MaxGraphEdges}), nil
}
