package tools

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemKnowledgeStore is a [KnowledgeStore] in process memory, for tests and
// for a server without a database. It keeps what the SQL stores keep, the
// way they keep it: times to the microsecond in UTC, metadata and graph
// data as given; records it returns are the caller's to change. Claims and
// sweeps scan every job, which suits the thousands a test keeps.
type MemKnowledgeStore struct {
	mu          sync.Mutex
	collections map[tenantKey]*Collection // by tenant and id, deleted ones too
	names       map[tenantKey]string      // tenant and name of a live collection → id
	jobs        map[tenantKey]*Job
	docs        map[tenantKey]*Document
	hashes      map[[3]string]string // tenant, collection, sha256 → document id
	graphs      map[tenantKey][]byte // tenant and collection id → data
}

type tenantKey struct{ tenant, id string }

var _ KnowledgeStore = (*MemKnowledgeStore)(nil)

// NewMemKnowledgeStore returns an empty MemKnowledgeStore.
func NewMemKnowledgeStore() *MemKnowledgeStore {
	return &MemKnowledgeStore{
		collections: map[tenantKey]*Collection{},
		names:       map[tenantKey]string{},
		jobs:        map[tenantKey]*Job{},
		docs:        map[tenantKey]*Document{},
		hashes:      map[[3]string]string{},
		graphs:      map[tenantKey][]byte{},
	}
}

// micros is t as a store keeps it: microseconds, UTC; zero stays zero.
func micros(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

func cloneRaw(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

func (s *MemKnowledgeStore) CreateCollection(ctx context.Context, tenant string, c Collection, max int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.collections[tenantKey{tenant, c.ID}]; ok {
		return fmt.Errorf("knowledge: create collection %s: %w", c.ID, ErrKnowledgeExists)
	}
	if _, ok := s.names[tenantKey{tenant, c.Name}]; ok {
		return fmt.Errorf("knowledge: create collection %q: %w", c.Name, ErrKnowledgeExists)
	}
	live := 0
	for k, x := range s.collections {
		if k.tenant == tenant && x.DeletedAt.IsZero() {
			live++
		}
	}
	if live >= max {
		return fmt.Errorf("knowledge: create collection %q: %d collections: %w", c.Name, live, ErrKnowledgeLimit)
	}
	c.Tenant, c.Documents, c.Chunks, c.DeletedAt = tenant, 0, 0, time.Time{}
	c.CreatedAt = micros(c.CreatedAt)
	c.Graph = Graph{Status: GraphNone}
	s.collections[tenantKey{tenant, c.ID}] = &c
	s.names[tenantKey{tenant, c.Name}] = c.ID
	return nil
}

// live returns a collection that is not deleted, or nil.
func (s *MemKnowledgeStore) live(tenant, id string) *Collection {
	c := s.collections[tenantKey{tenant, id}]
	if c == nil || !c.DeletedAt.IsZero() {
		return nil
	}
	return c
}

func (s *MemKnowledgeStore) Collection(ctx context.Context, tenant, id string) (Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.live(tenant, id)
	if c == nil {
		return Collection{}, fmt.Errorf("knowledge: collection %s: %w", id, ErrKnowledgeNotFound)
	}
	return *c, nil
}

func (s *MemKnowledgeStore) CollectionByName(ctx context.Context, tenant, name string) (Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.names[tenantKey{tenant, name}]
	if !ok {
		return Collection{}, fmt.Errorf("knowledge: collection %q: %w", name, ErrKnowledgeNotFound)
	}
	return *s.collections[tenantKey{tenant, id}], nil
}

func pageLimit(limit int) int {
	if limit <= 0 || limit > MaxKnowledgePage {
		return MaxKnowledgePage
	}
	return limit
}

func (s *MemKnowledgeStore) ListCollections(ctx context.Context, tenant, afterName string, limit int) ([]Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Collection
	for k, c := range s.collections {
		if k.tenant == tenant && c.DeletedAt.IsZero() && c.Name > afterName {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b Collection) int { return cmp.Compare(a.Name, b.Name) })
	return out[:min(len(out), pageLimit(limit))], nil
}

func (s *MemKnowledgeStore) DeleteCollection(ctx context.Context, tenant, id string, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.live(tenant, id)
	if c == nil {
		return 0, fmt.Errorf("knowledge: delete collection %s: %w", id, ErrKnowledgeNotFound)
	}
	now = micros(now)
	c.DeletedAt = now
	delete(s.names, tenantKey{tenant, c.Name})
	n := 0
	for k, j := range s.jobs {
		if k.tenant == tenant && j.CollectionID == id && !j.Status.Ended() {
			j.Status, j.Content, j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = JobCancelled, "", "", time.Time{}, now
			n++
		}
	}
	return n, nil
}

func (s *MemKnowledgeStore) PendingPurges(ctx context.Context, due time.Time, limit int) ([]Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	due = micros(due)
	var out []Collection
	for _, c := range s.collections {
		if !c.DeletedAt.IsZero() && !c.DeletedAt.After(due) {
			out = append(out, *c)
		}
	}
	slices.SortFunc(out, func(a, b Collection) int {
		return cmp.Or(a.DeletedAt.Compare(b.DeletedAt), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), pageLimit(limit))], nil
}

func (s *MemKnowledgeStore) FinishPurge(ctx context.Context, tenant, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tenantKey{tenant, id}
	c := s.collections[k]
	if c == nil || c.DeletedAt.IsZero() {
		return fmt.Errorf("knowledge: purge collection %s: %w", id, ErrKnowledgeNotFound)
	}
	delete(s.collections, k)
	delete(s.graphs, k)
	for dk, d := range s.docs {
		if dk.tenant == tenant && d.CollectionID == id {
			delete(s.docs, dk)
			delete(s.hashes, [3]string{tenant, id, d.SHA256})
		}
	}
	return nil
}

func copyJob(j *Job) Job {
	out := *j
	out.Metadata = cloneRaw(j.Metadata)
	return out
}

func (s *MemKnowledgeStore) CreateJob(ctx context.Context, tenant string, j Job, maxActive int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live(tenant, j.CollectionID) == nil {
		return fmt.Errorf("knowledge: create job %s: collection %s: %w", j.ID, j.CollectionID, ErrKnowledgeNotFound)
	}
	if _, ok := s.jobs[tenantKey{tenant, j.ID}]; ok {
		return fmt.Errorf("knowledge: create job %s: %w", j.ID, ErrKnowledgeExists)
	}
	if !j.Status.Ended() {
		active := 0
		for k, x := range s.jobs {
			if k.tenant == tenant && !x.Status.Ended() {
				active++
			}
		}
		if active >= maxActive {
			return fmt.Errorf("knowledge: create job %s: %d active jobs: %w", j.ID, active, ErrKnowledgeLimit)
		}
	}
	j = copyJob(&j)
	j.Tenant = tenant
	if j.Status.Ended() {
		j.Content = ""
	}
	j.LeaseUntil, j.NotBefore = micros(j.LeaseUntil), micros(j.NotBefore)
	j.CreatedAt, j.UpdatedAt = micros(j.CreatedAt), micros(j.UpdatedAt)
	s.jobs[tenantKey{tenant, j.ID}] = &j
	return nil
}

func (s *MemKnowledgeStore) Job(ctx context.Context, tenant, id string) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[tenantKey{tenant, id}]
	if j == nil {
		return Job{}, fmt.Errorf("knowledge: job %s: %w", id, ErrKnowledgeNotFound)
	}
	return copyJob(j), nil
}

func (s *MemKnowledgeStore) ClaimJobs(ctx context.Context, owner string, now, until time.Time, limit int) ([]Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, until = micros(now), micros(until)
	var due []*Job
	for _, j := range s.jobs {
		if j.Status == JobPending && !j.NotBefore.After(now) || j.Status == JobRunning && !j.LeaseUntil.After(now) {
			due = append(due, j)
		}
	}
	slices.SortFunc(due, func(a, b *Job) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Tenant, b.Tenant))
	})
	out := make([]Job, 0, min(len(due), pageLimit(limit)))
	for _, j := range due[:min(len(due), pageLimit(limit))] {
		j.Status, j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = JobRunning, owner, until, now
		j.Attempts++
		out = append(out, copyJob(j))
	}
	return out, nil
}

// held returns the job a claim still holds, or the job and
// ErrKnowledgeConflict.
func (s *MemKnowledgeStore) held(tenant, id, owner string, attempt int) (*Job, error) {
	j := s.jobs[tenantKey{tenant, id}]
	if j == nil {
		return nil, ErrKnowledgeNotFound
	}
	if j.Status != JobRunning || j.LeaseOwner != owner || j.Attempts != attempt {
		return j, ErrKnowledgeConflict
	}
	return j, nil
}

func (s *MemKnowledgeStore) ExtendJob(ctx context.Context, tenant, id, owner string, attempt int, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.held(tenant, id, owner, attempt)
	if err != nil {
		return fmt.Errorf("knowledge: extend job %s: %w", id, err)
	}
	j.LeaseUntil = micros(until)
	return nil
}

func (s *MemKnowledgeStore) FinishJob(ctx context.Context, tenant, id, owner string, attempt int, o JobOutcome) (Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.held(tenant, id, owner, attempt)
	if err != nil {
		if j != nil {
			return copyJob(j), fmt.Errorf("knowledge: finish job %s: %w", id, err)
		}
		return Job{}, fmt.Errorf("knowledge: finish job %s: %w", id, err)
	}
	now := micros(o.Now)
	switch o.Status {
	case JobPending:
		j.Status, j.Error, j.NotBefore = JobPending, o.Error, micros(o.NotBefore)
	case JobFailed, JobDeadLetter:
		j.Status, j.Error, j.Content = o.Status, o.Error, ""
	case JobCompleted:
		j.Status, j.Error, j.Content = JobCompleted, "", ""
		switch {
		case o.Document != nil:
			c := s.live(tenant, j.CollectionID)
			if c == nil {
				return copyJob(j), fmt.Errorf("knowledge: finish job %s: collection %s: %w", id, j.CollectionID, ErrKnowledgeConflict)
			}
			hk := [3]string{tenant, j.CollectionID, o.Document.SHA256}
			if dup, ok := s.hashes[hk]; ok {
				j.DocumentID, j.DuplicateOf = dup, dup
				break
			}
			if _, ok := s.docs[tenantKey{tenant, o.Document.ID}]; ok {
				return copyJob(j), fmt.Errorf("knowledge: finish job %s: document %s: %w", id, o.Document.ID, ErrKnowledgeExists)
			}
			d := *o.Document
			d.CollectionID, d.Metadata, d.CreatedAt = j.CollectionID, cloneRaw(d.Metadata), micros(d.CreatedAt)
			s.docs[tenantKey{tenant, d.ID}] = &d
			s.hashes[hk] = d.ID
			c.Documents++
			c.Chunks += d.Chunks
			j.DocumentID, j.DuplicateOf = d.ID, ""
		default:
			j.DocumentID, j.DuplicateOf = o.DuplicateOf, o.DuplicateOf
		}
	default:
		return copyJob(j), fmt.Errorf("knowledge: finish job %s: outcome %q is not one a job can end in", id, o.Status)
	}
	j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = "", time.Time{}, now
	return copyJob(j), nil
}

func (s *MemKnowledgeStore) SweepJobs(ctx context.Context, before time.Time, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	before = micros(before)
	n := 0
	for k, j := range s.jobs {
		if n >= pageLimit(limit) {
			break
		}
		if j.Status.Ended() && j.UpdatedAt.Before(before) {
			delete(s.jobs, k)
			n++
		}
	}
	return n, nil
}

func copyDoc(d *Document) Document {
	out := *d
	out.Metadata = cloneRaw(d.Metadata)
	return out
}

func (s *MemKnowledgeStore) DocumentByHash(ctx context.Context, tenant, collection, sha256 string) (Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.hashes[[3]string{tenant, collection, sha256}]
	if !ok {
		return Document{}, fmt.Errorf("knowledge: document by hash: %w", ErrKnowledgeNotFound)
	}
	return copyDoc(s.docs[tenantKey{tenant, id}]), nil
}

func (s *MemKnowledgeStore) Documents(ctx context.Context, tenant, collection string, ids []string) ([]Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Document
	seen := map[string]bool{}
	for _, id := range ids {
		if d := s.docs[tenantKey{tenant, id}]; d != nil && d.CollectionID == collection && !seen[id] {
			seen[id] = true
			out = append(out, copyDoc(d))
		}
	}
	return out, nil
}

func (s *MemKnowledgeStore) ListDocuments(ctx context.Context, tenant, collection, afterID string, limit int) ([]Document, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Document
	for k, d := range s.docs {
		if k.tenant == tenant && d.CollectionID == collection && d.ID > afterID {
			out = append(out, copyDoc(d))
		}
	}
	slices.SortFunc(out, func(a, b Document) int { return cmp.Compare(a.ID, b.ID) })
	return out[:min(len(out), pageLimit(limit))], nil
}

func (s *MemKnowledgeStore) RequestGraph(ctx context.Context, tenant, collection string, now time.Time) (Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.live(tenant, collection)
	if c == nil {
		return Collection{}, fmt.Errorf("knowledge: request graph of %s: %w", collection, ErrKnowledgeNotFound)
	}
	built := c.Graph.BuiltAt
	c.Graph = Graph{Status: GraphPending, RequestedAt: micros(now), BuiltAt: built}
	return *c, nil
}

func (s *MemKnowledgeStore) ClaimGraphs(ctx context.Context, owner string, now, until time.Time, limit int) ([]Collection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, until = micros(now), micros(until)
	var due []*Collection
	for _, c := range s.collections {
		g := &c.Graph
		if c.DeletedAt.IsZero() && (g.Status == GraphPending || g.Status == GraphRunning && !g.LeaseUntil.After(now)) {
			due = append(due, c)
		}
	}
	slices.SortFunc(due, func(a, b *Collection) int {
		return cmp.Or(a.Graph.RequestedAt.Compare(b.Graph.RequestedAt), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
	})
	out := make([]Collection, 0, min(len(due), pageLimit(limit)))
	for _, c := range due[:min(len(due), pageLimit(limit))] {
		c.Graph.Status, c.Graph.LeaseOwner, c.Graph.LeaseUntil = GraphRunning, owner, until
		c.Graph.Attempts++
		out = append(out, *c)
	}
	return out, nil
}

func (s *MemKnowledgeStore) FinishGraph(ctx context.Context, tenant, collection, owner string, attempt int, r GraphResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.live(tenant, collection)
	if c == nil {
		return fmt.Errorf("knowledge: finish graph of %s: %w", collection, ErrKnowledgeConflict)
	}
	g := &c.Graph
	if g.Status != GraphRunning || g.LeaseOwner != owner || g.Attempts != attempt {
		return fmt.Errorf("knowledge: finish graph of %s: %w", collection, ErrKnowledgeConflict)
	}
	switch r.Status {
	case GraphCompleted:
		g.Status, g.Error, g.BuiltAt = GraphCompleted, "", micros(r.Now)
		g.Entities, g.Relationships, g.Communities = r.Entities, r.Relationships, r.Communities
		s.graphs[tenantKey{tenant, collection}] = cloneRaw(r.Data)
	case GraphFailed:
		g.Status, g.Error = GraphFailed, r.Error
		g.Entities, g.Relationships, g.Communities = 0, 0, 0
	default:
		return fmt.Errorf("knowledge: finish graph of %s: status %q is not one a build ends in", collection, r.Status)
	}
	g.LeaseOwner, g.LeaseUntil = "", time.Time{}
	return nil
}

func (s *MemKnowledgeStore) GraphData(ctx context.Context, tenant, collection string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live(tenant, collection) == nil {
		return nil, fmt.Errorf("knowledge: graph of %s: %w", collection, ErrKnowledgeNotFound)
	}
	b, ok := s.graphs[tenantKey{tenant, collection}]
	if !ok {
		return nil, fmt.Errorf("knowledge: graph of %s: %w", collection, ErrKnowledgeNotFound)
	}
	return cloneRaw(b), nil
}
