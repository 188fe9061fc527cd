package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/resilience"
)

// KnowledgeSearchRequest is the arguments of novaos.knowledge.search.
type KnowledgeSearchRequest struct {
	Query string `json:"query"`
	// CollectionID narrows the search to one collection; "" searches
	// every collection the caller may read.
	CollectionID string `json:"collection_id,omitempty"`
	// TopK is how many hits to return (the service's default when 0).
	TopK int `json:"top_k,omitempty"`
}

// CreateCollectionRequest is the arguments of
// novaos.knowledge.create_collection.
type CreateCollectionRequest struct {
	// Name is unique within the tenant.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// IngestItem is one document to ingest, the arguments of
// novaos.knowledge.ingest. Metadata is passed through to the backend
// (collection_id, filename, source_url, …).
type IngestItem struct {
	Content  string         `json:"content"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// JobRequest is the arguments of novaos.knowledge.job_status.
type JobRequest struct {
	JobID string `json:"job_id"`
}

// CollectionRequest is the arguments of novaos.knowledge.build_graph,
// novaos.knowledge.graph_status and novaos.knowledge.delete_collection.
type CollectionRequest struct {
	CollectionID string `json:"collection_id"`
}

// GraphQueryRequest is the arguments of the graph queries.
type GraphQueryRequest struct {
	Question     string `json:"question"`
	CollectionID string `json:"collection_id"`
}

// Ingest job statuses the client adds to the service's (pending,
// running, completed, failed, dead_letter, cancelled): a submission that
// failed, a status it could not learn, and the status the service may
// give a duplicate upload.
const (
	JobSubmitError = "submit_error"
	JobUnknown     = "unknown"
	JobDuplicate   = "duplicate"
)

// The service's statuses the client acts on.
const (
	jobPending     = "pending"
	graphCompleted = "completed"
	graphFailed    = "failed"
)

// DefaultPollInterval is the wait between the polls of the Poll methods.
const DefaultPollInterval = 2 * time.Second

// How long the Poll methods wait at most when their context sets no
// deadline (the NovaOS Python SDK's max_wait_s).
const (
	DefaultPollWait      = 300 * time.Second
	DefaultBatchPollWait = 600 * time.Second
)

// IngestJobStatus is the status of one ingest job, in a batch at Index.
type IngestJobStatus struct {
	Index int `json:"index"`
	// JobID is the backend's job id, "" when the submission failed.
	JobID string `json:"job_id,omitempty"`
	// Status is the service's (pending, running, completed, failed,
	// dead_letter, cancelled) or JobSubmitError, JobUnknown,
	// JobDuplicate.
	Status string `json:"status"`
	// Error says why the job or its submission failed.
	Error string `json:"error,omitempty"`
	// DuplicateOf is the document the upload duplicated; the job then
	// completes without indexing anything new.
	DuplicateOf string `json:"duplicate_of,omitempty"`
}

// IsDuplicate reports whether the upload duplicated a document already
// indexed.
func (s *IngestJobStatus) IsDuplicate() bool { return s.DuplicateOf != "" || s.Status == JobDuplicate }

// Terminal reports whether the job will not change any more.
func (s *IngestJobStatus) Terminal() bool {
	switch s.Status {
	case "completed", "failed", "dead_letter", "cancelled", JobDuplicate, JobSubmitError, JobUnknown:
		return true
	}
	return false
}

// BatchIngestResponse is IngestBatch's answer: one status per item, in
// the order of the items.
type BatchIngestResponse struct {
	// BatchID is the client's id for the batch.
	BatchID string            `json:"batch_id"`
	Total   int               `json:"total"`
	Items   []IngestJobStatus `json:"items"`
}

// Knowledge searches the tenant's collections and ingests documents
// into them. Its calls are the only ones the bindings retry
// (BindingsOptions.KnowledgeRetry): 429, 502, 503, 504, the gateway's
// unavailable error and network timeouts, with backoff, behind a circuit
// breaker shared by every knowledge call of the bindings.
type Knowledge struct{ k *core }

func (k *Knowledge) call(ctx context.Context, tool string, args any, timeout time.Duration, opts []CallOption) (*Response, error) {
	return k.k.call(ctx, tool, args, spec{timeout: timeout, retry: k.k.knowledgeRetry}, opts)
}

// Search searches for r.Query; the data holds the hits with their
// citations.
func (k *Knowledge) Search(ctx context.Context, r *KnowledgeSearchRequest, opts ...CallOption) (*Response, error) {
	switch {
	case r == nil:
		return invalid(ToolKnowledgeSearch, errors.New("no request"))
	case strings.TrimSpace(r.Query) == "":
		return invalid(ToolKnowledgeSearch, errors.New("query is required"))
	case r.TopK < 0:
		return invalid(ToolKnowledgeSearch, errors.New("top_k must not be negative"))
	}
	return k.call(ctx, ToolKnowledgeSearch, r, 0, opts)
}

// Ingest submits a document; the data holds its job_id, for JobStatus
// and PollJob. Its timeout is BindingsOptions.IngestTimeout (120 s)
// unless the call gives one.
func (k *Knowledge) Ingest(ctx context.Context, content string, metadata map[string]any, opts ...CallOption) (*Response, error) {
	if content == "" {
		return invalid(ToolKnowledgeIngest, errors.New("content is required"))
	}
	return k.call(ctx, ToolKnowledgeIngest, &IngestItem{Content: content, Metadata: metadata}, k.k.ingestTimeout, opts)
}

// JobStatus reports an ingest job: its data holds status, error and,
// for a duplicate upload, duplicate_of.
func (k *Knowledge) JobStatus(ctx context.Context, jobID string, opts ...CallOption) (*Response, error) {
	if strings.TrimSpace(jobID) == "" {
		return invalid(ToolKnowledgeJobStatus, errors.New("job_id is required"))
	}
	return k.call(ctx, ToolKnowledgeJobStatus, &JobRequest{JobID: jobID}, 0, opts)
}

// IngestStatus is JobStatus as an IngestJobStatus (Index 0).
func (k *Knowledge) IngestStatus(ctx context.Context, jobID string) (*IngestJobStatus, error) {
	resp, err := k.JobStatus(ctx, jobID)
	if err != nil {
		return nil, err
	}
	st := jobStatusOf(resp)
	st.JobID = jobID
	return &st, nil
}

// jobStatusOf reads a job_status answer.
func jobStatusOf(resp *Response) IngestJobStatus {
	if !resp.Success {
		return IngestJobStatus{Status: JobUnknown, Error: resp.Error}
	}
	var d struct {
		Status      string `json:"status"`
		Error       string `json:"error"`
		DuplicateOf string `json:"duplicate_of"`
	}
	if resp.Decode(&d) != nil || d.Status == "" {
		return IngestJobStatus{Status: JobUnknown, Error: "the status answer carries no status"}
	}
	return IngestJobStatus{Status: d.Status, Error: d.Error, DuplicateOf: d.DuplicateOf}
}

// CreateCollection creates a named collection; the data holds its
// collection_id. It is not retried: a retry after a lost answer would
// find the collection made.
func (k *Knowledge) CreateCollection(ctx context.Context, name, description string, opts ...CallOption) (*Response, error) {
	if strings.TrimSpace(name) == "" {
		return invalid(ToolKnowledgeCreateCollection, errors.New("name is required"))
	}
	return k.k.call(ctx, ToolKnowledgeCreateCollection, &CreateCollectionRequest{Name: name, Description: description}, spec{}, opts)
}

// ListCollections lists the tenant's collections with their document
// counts and graph status.
func (k *Knowledge) ListCollections(ctx context.Context, opts ...CallOption) (*Response, error) {
	return k.call(ctx, ToolKnowledgeListCollections, struct{}{}, 0, opts)
}

// DeleteCollection deletes a collection and its documents; its pending
// ingest jobs end as cancelled.
func (k *Knowledge) DeleteCollection(ctx context.Context, collectionID string, opts ...CallOption) (*Response, error) {
	if strings.TrimSpace(collectionID) == "" {
		return invalid(ToolKnowledgeDeleteCollection, errors.New("collection_id is required"))
	}
	return k.call(ctx, ToolKnowledgeDeleteCollection, &CollectionRequest{CollectionID: collectionID}, 0, opts)
}

// BuildGraph starts (or restarts) building a collection's knowledge
// graph and returns at once; GraphStatus and PollGraphBuild follow it.
func (k *Knowledge) BuildGraph(ctx context.Context, collectionID string, opts ...CallOption) (*Response, error) {
	if strings.TrimSpace(collectionID) == "" {
		return invalid(ToolKnowledgeBuildGraph, errors.New("collection_id is required"))
	}
	return k.call(ctx, ToolKnowledgeBuildGraph, &CollectionRequest{CollectionID: collectionID}, 0, opts)
}

// GraphStatus reports a collection's graph build: graph_status (none,
// pending, running, completed, failed), graph_error and counts.
func (k *Knowledge) GraphStatus(ctx context.Context, collectionID string, opts ...CallOption) (*Response, error) {
	if strings.TrimSpace(collectionID) == "" {
		return invalid(ToolKnowledgeGraphStatus, errors.New("collection_id is required"))
	}
	return k.call(ctx, ToolKnowledgeGraphStatus, &CollectionRequest{CollectionID: collectionID}, 0, opts)
}

// QueryGraphLocal answers an entity-centred question over the graph.
// Before the graph is built the answer says degraded: true.
func (k *Knowledge) QueryGraphLocal(ctx context.Context, question, collectionID string, opts ...CallOption) (*Response, error) {
	return k.graphQuery(ctx, ToolKnowledgeQueryGraphLocal, question, collectionID, opts)
}

// QueryGraphGlobal answers a corpus-wide question from the graph's
// community reports.
func (k *Knowledge) QueryGraphGlobal(ctx context.Context, question, collectionID string, opts ...CallOption) (*Response, error) {
	return k.graphQuery(ctx, ToolKnowledgeQueryGraphGlobal, question, collectionID, opts)
}

func (k *Knowledge) graphQuery(ctx context.Context, tool, question, collectionID string, opts []CallOption) (*Response, error) {
	switch {
	case strings.TrimSpace(question) == "":
		return invalid(tool, errors.New("question is required"))
	case strings.TrimSpace(collectionID) == "":
		return invalid(tool, errors.New("collection_id is required"))
	}
	return k.call(ctx, tool, &GraphQueryRequest{Question: question, CollectionID: collectionID}, 0, opts)
}

// IngestBatch submits items with at most BindingsOptions.BatchConcurrency
// (10) submissions in flight. collection, when set, goes into each item's
// metadata as collection_id unless the item names one. An item whose
// submission fails has status submit_error; the others go on. The error
// is only for a batch refused as a whole (no items, too many).
func (k *Knowledge) IngestBatch(ctx context.Context, items []IngestItem, collection string) (*BatchIngestResponse, error) {
	switch {
	case len(items) == 0:
		return nil, fmt.Errorf("%w: %s: no items", ErrInvalidArgument, ToolKnowledgeIngest)
	case len(items) > k.k.maxBatchItems:
		return nil, fmt.Errorf("%w: %s: %d items, over the %d-item limit", ErrInvalidArgument, ToolKnowledgeIngest, len(items), k.k.maxBatchItems)
	}
	out := &BatchIngestResponse{BatchID: newID(), Total: len(items), Items: make([]IngestJobStatus, len(items))}
	sem := make(chan struct{}, k.k.batchConcurrency)
	var wg sync.WaitGroup
	for i, it := range items {
		md := maps.Clone(it.Metadata)
		if collection != "" {
			if md == nil {
				md = map[string]any{}
			}
			if _, ok := md["collection_id"]; !ok {
				md["collection_id"] = collection
			}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out.Items[i] = k.submit(ctx, i, it.Content, md)
		}()
	}
	wg.Wait()
	return out, nil
}

// submit ingests one batch item.
func (k *Knowledge) submit(ctx context.Context, i int, content string, md map[string]any) IngestJobStatus {
	st := IngestJobStatus{Index: i, Status: JobSubmitError}
	resp, err := k.Ingest(ctx, content, md)
	switch {
	case err != nil:
		st.Error = resp.Error
	case !resp.Success:
		st.Error = resp.Error
	default:
		var d struct {
			JobID  string `json:"job_id"`
			Status string `json:"status"`
		}
		if resp.Decode(&d) != nil || d.JobID == "" {
			st.Error = "the ingest answer carries no job_id"
			break
		}
		st.JobID, st.Status = d.JobID, jobPending
		if d.Status != "" {
			st.Status = d.Status
		}
	}
	return st
}

// PollJob asks for the job's status every interval (0:
// DefaultPollInterval) until it is terminal (completed, failed,
// dead_letter, cancelled) and returns the last answer. A context without
// a deadline waits at most DefaultPollWait.
func (k *Knowledge) PollJob(ctx context.Context, jobID string, interval time.Duration) (*Response, error) {
	return poll(ctx, interval, DefaultPollWait, "job "+jobID, func(ctx context.Context) (*Response, bool, error) {
		resp, err := k.JobStatus(ctx, jobID)
		if err != nil || !resp.Success {
			return resp, true, err
		}
		st := jobStatusOf(resp)
		return resp, st.Terminal(), nil
	})
}

// PollGraphBuild asks for the collection's graph status every interval
// until the build completed or failed, and returns the last answer. A
// context without a deadline waits at most DefaultPollWait.
func (k *Knowledge) PollGraphBuild(ctx context.Context, collectionID string, interval time.Duration) (*Response, error) {
	return poll(ctx, interval, DefaultPollWait, "the graph of "+collectionID, func(ctx context.Context) (*Response, bool, error) {
		resp, err := k.GraphStatus(ctx, collectionID)
		if err != nil || !resp.Success {
			return resp, true, err
		}
		var d struct {
			Status string `json:"graph_status"`
		}
		_ = resp.Decode(&d)
		return resp, d.Status == graphCompleted || d.Status == graphFailed, nil
	})
}

// PollBatch polls every job of the batch still open, in parallel (at
// most BatchConcurrency at once), every interval until all are terminal,
// and returns the batch with its final statuses; batch is not changed. A
// status poll that fails for good (not a transient failure) leaves the
// item unknown. A context without a deadline waits at most
// DefaultBatchPollWait; when the wait ends first, the batch so far is
// returned with the context's error.
func (k *Knowledge) PollBatch(ctx context.Context, batch *BatchIngestResponse, interval time.Duration) (*BatchIngestResponse, error) {
	out := &BatchIngestResponse{BatchID: batch.BatchID, Total: batch.Total, Items: append([]IngestJobStatus(nil), batch.Items...)}
	_, err := poll(ctx, interval, DefaultBatchPollWait, "batch "+batch.BatchID, func(ctx context.Context) (*Response, bool, error) {
		sem := make(chan struct{}, k.k.batchConcurrency)
		var wg sync.WaitGroup
		for i := range out.Items {
			it := &out.Items[i]
			if it.Terminal() || it.JobID == "" {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				resp, err := k.JobStatus(ctx, it.JobID)
				if err != nil {
					if !resilience.IsTransient(err) && ctx.Err() == nil {
						it.Status, it.Error = JobUnknown, resp.Error
					}
					return
				}
				st := jobStatusOf(resp)
				it.Status, it.Error, it.DuplicateOf = st.Status, st.Error, st.DuplicateOf
			}()
		}
		wg.Wait()
		for i := range out.Items {
			if !out.Items[i].Terminal() && out.Items[i].JobID != "" {
				return nil, false, nil
			}
		}
		return nil, true, nil
	})
	return out, err
}

// poll runs check every interval until it says done or ctx (or, without
// a deadline, wait) ends.
func poll(ctx context.Context, interval, wait time.Duration, what string, check func(context.Context) (*Response, bool, error)) (*Response, error) {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		resp, done, err := check(ctx)
		if err != nil || done {
			return resp, err
		}
		select {
		case <-ctx.Done():
			return resp, fmt.Errorf("tools: %s is not finished: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// newID returns a random UUID (version 4).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
