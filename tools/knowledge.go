package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors of a KnowledgeStore. Stores wrap them with context; callers
// branch with errors.Is.
var (
	// ErrKnowledgeNotFound: no such collection, job, document or graph in
	// the tenant (a deleted collection is not found either).
	ErrKnowledgeNotFound = errors.New("knowledge: not found")
	// ErrKnowledgeExists: a collection of that name, or a record with that
	// id, exists already.
	ErrKnowledgeExists = errors.New("knowledge: already exists")
	// ErrKnowledgeConflict: a worker no longer holds the lease it names
	// (it lapsed and another worker took the record, or the record moved
	// on: its collection was deleted, its graph requested again).
	ErrKnowledgeConflict = errors.New("knowledge: lease lost")
	// ErrKnowledgeLimit: the tenant holds as many collections, or active
	// jobs, as the caller allows.
	ErrKnowledgeLimit = errors.New("knowledge: limit reached")
)

// JobStatus is where an ingest job is: pending → running → completed,
// failed or dead_letter; cancelled when its collection is deleted first.
// A duplicate upload is a completed job whose DuplicateOf names the
// document it repeats.
type JobStatus string

const (
	JobPending    JobStatus = "pending"
	JobRunning    JobStatus = "running"
	JobCompleted  JobStatus = "completed"
	JobFailed     JobStatus = "failed"
	JobDeadLetter JobStatus = "dead_letter"
	JobCancelled  JobStatus = "cancelled"
)

// Ended reports whether s is a final status.
func (s JobStatus) Ended() bool {
	switch s {
	case JobCompleted, JobFailed, JobDeadLetter, JobCancelled:
		return true
	}
	return false
}

// GraphStatus is where a collection's entity graph is: none until
// build_graph, then pending → running → completed or failed.
type GraphStatus string

const (
	GraphNone      GraphStatus = "none"
	GraphPending   GraphStatus = "pending"
	GraphRunning   GraphStatus = "running"
	GraphCompleted GraphStatus = "completed"
	GraphFailed    GraphStatus = "failed"
)

// Collection is a tenant's named set of documents.
type Collection struct {
	// Tenant owns the collection; stores fill it on every read.
	Tenant      string
	ID          string
	Name        string
	Description string
	// Documents and Chunks count the documents committed to it (by
	// FinishJob) and their chunks.
	Documents int
	Chunks    int
	CreatedAt time.Time
	// DeletedAt is set once the collection is deleted: it is then found by
	// PendingPurges only.
	DeletedAt time.Time
	Graph     Graph
}

// Graph is the state of a collection's entity graph. Its data is read
// with GraphData.
type Graph struct {
	Status GraphStatus // "" reads as GraphNone
	Error  string
	// Entities, Relationships and Communities count what the stored
	// graph holds; zero until a build completes.
	Entities, Relationships, Communities int
	RequestedAt                          time.Time
	// BuiltAt is when the stored graph was built (zero: none is).
	BuiltAt time.Time
	// Attempts counts the claims of the current request.
	Attempts   int
	LeaseOwner string
	LeaseUntil time.Time
}

// Job is one ingest job: a document waiting to be chunked and indexed.
type Job struct {
	// Tenant owns the job; stores fill it on every read.
	Tenant       string
	ID           string
	CollectionID string
	Status       JobStatus
	// Error says why the job failed (or why its last attempt did).
	Error string
	// DocumentID is the document the job made, or the one it duplicated.
	DocumentID string
	// DuplicateOf is set when the content was in the collection already.
	DuplicateOf string
	// Content is the document's normalised text; a store drops it once the
	// job has ended.
	Content string
	// SHA256 is the hex digest of Content, what duplicates are found by.
	SHA256    string
	Filename  string
	SourceURL string
	// Metadata is the rest of the caller's metadata, a JSON object kept as
	// given (nil: none).
	Metadata json.RawMessage
	// Attempts counts the claims of the job; a claim is identified by its
	// owner and this count.
	Attempts   int
	LeaseOwner string
	LeaseUntil time.Time
	// NotBefore holds a job back until then (a retry's backoff).
	NotBefore time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Document is a document committed to a collection. Its chunks live in
// the memory store; a chunk whose document has no record is not part of
// the collection (it belongs to a job that has not finished, or failed).
type Document struct {
	ID           string
	CollectionID string
	JobID        string
	SHA256       string
	Filename     string
	SourceURL    string
	Metadata     json.RawMessage
	Bytes        int
	Chunks       int
	CreatedAt    time.Time
}

// JobOutcome is how a claimed job ends, or waits for another attempt.
type JobOutcome struct {
	// Status is JobCompleted, JobFailed, JobDeadLetter, or JobPending to
	// try again at NotBefore.
	Status JobStatus
	Error  string
	// Document, for JobCompleted, is the document the job made: it is
	// stored, and the collection's counts grow by it, unless the
	// collection holds a document of the same SHA256 already: the job
	// then completes as a duplicate of that one. DuplicateOf, for
	// JobCompleted without a Document, names the document repeated.
	Document    *Document
	DuplicateOf string
	NotBefore   time.Time
	Now         time.Time
}

// GraphResult is how a claimed graph build ends.
type GraphResult struct {
	Status GraphStatus // GraphCompleted or GraphFailed
	Error  string
	// Entities, Relationships and Communities are the counts of Data,
	// the graph as its builder encodes it (stored as given).
	Entities, Relationships, Communities int
	Data                                 []byte
	Now                                  time.Time
}

// KnowledgeStore keeps the knowledge collections of the tool gateway:
// collections, ingest jobs (a durable queue with leased claims),
// committed documents and entity graphs. Document chunks are memories of
// the memory store, in a partition of their own per collection, so that
// one retrieval engine serves both.
//
// Every method that reads or writes a tenant's records takes the tenant
// first; the caller passes the tenant of a verified token. Claims serve
// workers across tenants and return each record's tenant. Times come
// from the caller; stores keep microseconds, in UTC. Every method is safe
// for concurrent use, by several processes where the database is shared.
//
// store/storetest.TestKnowledgeStore is the contract suite.
type KnowledgeStore interface {
	// CreateCollection stores c (its ID, Name and CreatedAt set by the
	// caller). ErrKnowledgeExists: the tenant has a collection named
	// c.Name, or the id is taken; ErrKnowledgeLimit: the tenant has max
	// collections already.
	CreateCollection(ctx context.Context, tenant string, c Collection, max int) error
	// Collection returns a collection of the tenant that is not deleted.
	Collection(ctx context.Context, tenant, id string) (Collection, error)
	// CollectionByName returns the tenant's collection called name.
	CollectionByName(ctx context.Context, tenant, name string) (Collection, error)
	// ListCollections returns up to limit of the tenant's collections
	// whose name sorts after afterName, by name (byte order).
	ListCollections(ctx context.Context, tenant, afterName string, limit int) ([]Collection, error)
	// DeleteCollection marks a collection deleted at now, which frees its
	// name, and cancels its pending and running jobs in the same step; it
	// returns how many it cancelled.
	DeleteCollection(ctx context.Context, tenant, id string, now time.Time) (cancelled int, err error)
	// PendingPurges returns up to limit deleted collections of any tenant
	// deleted at or before due, oldest first: their chunks are still to
	// be removed from the memory store before FinishPurge.
	PendingPurges(ctx context.Context, due time.Time, limit int) ([]Collection, error)
	// FinishPurge removes a deleted collection's record, documents and
	// graph. Its jobs stay readable until SweepJobs.
	FinishPurge(ctx context.Context, tenant, id string) error

	// CreateJob stores j, pending (or, for a duplicate found at once,
	// completed). ErrKnowledgeNotFound: its collection is not there;
	// ErrKnowledgeLimit: j is pending and the tenant has maxActive
	// pending or running jobs; ErrKnowledgeExists: the id is taken.
	CreateJob(ctx context.Context, tenant string, j Job, maxActive int) error
	// Job returns a job of the tenant.
	Job(ctx context.Context, tenant, id string) (Job, error)
	// ClaimJobs leases to owner, until until, up to limit jobs of any
	// tenant that are pending with NotBefore at or before now, or running
	// with a lease that lapsed at now, oldest first. Each becomes running
	// and counts an attempt. Two owners never hold one job at once.
	ClaimJobs(ctx context.Context, owner string, now, until time.Time, limit int) ([]Job, error)
	// ExtendJob moves the lease of a job owner claimed at attempt on to
	// until. ErrKnowledgeConflict: that claim no longer holds it.
	ExtendJob(ctx context.Context, tenant, id, owner string, attempt int, until time.Time) error
	// FinishJob records o for a job owner claimed at attempt and returns
	// the job as stored. Ended jobs lose their content. With the claim
	// lost it changes nothing and returns ErrKnowledgeConflict with the
	// job as it is.
	FinishJob(ctx context.Context, tenant, id, owner string, attempt int, o JobOutcome) (Job, error)
	// SweepJobs deletes up to limit ended jobs last updated before
	// before, and returns how many.
	SweepJobs(ctx context.Context, before time.Time, limit int) (int, error)

	// DocumentByHash returns the collection's document of that SHA256.
	DocumentByHash(ctx context.Context, tenant, collection, sha256 string) (Document, error)
	// Documents returns the documents of ids that the collection holds,
	// in no particular order; ids it lacks are left out.
	Documents(ctx context.Context, tenant, collection string, ids []string) ([]Document, error)
	// ListDocuments returns up to limit of the collection's documents
	// whose id sorts after afterID, by id.
	ListDocuments(ctx context.Context, tenant, collection, afterID string, limit int) ([]Document, error)

	// RequestGraph sets the collection's graph pending at now, with zero
	// counts and no error, attempt or lease: a build in progress loses its
	// claim. The stored data stays until a build replaces it. It returns
	// the collection.
	RequestGraph(ctx context.Context, tenant, collection string, now time.Time) (Collection, error)
	// ClaimGraphs leases to owner, until until, up to limit collections
	// whose graph is pending, or running with a lease that lapsed at now,
	// oldest request first. Each becomes running and counts an attempt.
	ClaimGraphs(ctx context.Context, owner string, now, until time.Time, limit int) ([]Collection, error)
	// FinishGraph records r for a graph owner claimed at attempt: a
	// completed build replaces the stored graph and its counts and sets
	// BuiltAt; a failed one sets the error and leaves the data alone.
	// ErrKnowledgeConflict: the claim no longer holds it.
	FinishGraph(ctx context.Context, tenant, collection, owner string, attempt int, r GraphResult) error
	// GraphData returns the stored graph of the collection.
	// ErrKnowledgeNotFound: none was built.
	GraphData(ctx context.Context, tenant, collection string) ([]byte, error)
}

// MaxKnowledgePage is the longest page a KnowledgeStore returns.
const MaxKnowledgePage = 1000
