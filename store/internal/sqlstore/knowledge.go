package sqlstore

import (
	"cmp"
	"slices"

	"novaos.dev/novaos/tools"
)

// The knowledge store's records in the column layout both SQL stores
// share (their 0016_knowledge migrations): times in microseconds since the
// Unix epoch, 0 for the zero time; metadata and graph data as bytes kept
// as given, NULL when empty.

// CollectionCols are the columns of knowledge_collections, in
// ScanCollection's order.
const CollectionCols = `tenant, id, name, description, documents, chunks, created_us, deleted_us,
	graph_status, graph_error, graph_entities, graph_relationships, graph_communities,
	graph_requested_us, graph_built_us, graph_attempts, graph_lease_owner, graph_lease_until_us`

// JobCols are the columns of knowledge_jobs, in ScanJob's and JobArgs'
// order.
const JobCols = `tenant, id, collection_id, status, error, document_id, duplicate_of, content, sha256, filename,
	source_url, metadata, attempts, lease_owner, lease_until_us, not_before_us, created_us, updated_us`

// DocumentCols are the columns of knowledge_documents, in ScanDocument's
// and DocumentArgs' order.
const DocumentCols = `tenant, id, collection_id, job_id, sha256, filename, source_url, metadata, bytes, chunks, created_us`

// ActiveJobStatuses are the statuses of jobs not yet ended, as an SQL
// list; the partial indexes of live jobs name the same ones.
const ActiveJobStatuses = `('pending', 'running')`

// EndedJobStatuses are the final statuses, as an SQL list.
const EndedJobStatuses = `('completed', 'failed', 'dead_letter', 'cancelled')`

// ClaimableGraphStatuses are the graph statuses ClaimGraphs leases.
const ClaimableGraphStatuses = `('pending', 'running')`

// ScanCollection reads a row of CollectionCols.
func ScanCollection(r Scanner) (tools.Collection, error) {
	var c tools.Collection
	var created, deleted, requested, built, until int64
	var status string
	g := &c.Graph
	if err := r.Scan(&c.Tenant, &c.ID, &c.Name, &c.Description, &c.Documents, &c.Chunks, &created, &deleted,
		&status, &g.Error, &g.Entities, &g.Relationships, &g.Communities, &requested, &built, &g.Attempts,
		&g.LeaseOwner, &until); err != nil {
		return tools.Collection{}, err
	}
	c.CreatedAt, c.DeletedAt = FromMicros(created), FromMicros(deleted)
	g.Status, g.RequestedAt, g.BuiltAt, g.LeaseUntil = tools.GraphStatus(status), FromMicros(requested), FromMicros(built), FromMicros(until)
	return c, nil
}

// JobArgs are the values of JobCols for j of tenant. An ended job keeps
// no content.
func JobArgs(tenant string, j *tools.Job) []any {
	content := j.Content
	if j.Status.Ended() {
		content = ""
	}
	return []any{tenant, j.ID, j.CollectionID, string(j.Status), j.Error, j.DocumentID, j.DuplicateOf, content, j.SHA256,
		j.Filename, j.SourceURL, Raw(j.Metadata), j.Attempts, j.LeaseOwner, Micros(j.LeaseUntil), Micros(j.NotBefore),
		Micros(j.CreatedAt), Micros(j.UpdatedAt)}
}

// ScanJob reads a row of JobCols.
func ScanJob(r Scanner) (tools.Job, error) {
	var j tools.Job
	var status string
	var md []byte
	var until, notBefore, created, updated int64
	if err := r.Scan(&j.Tenant, &j.ID, &j.CollectionID, &status, &j.Error, &j.DocumentID, &j.DuplicateOf, &j.Content,
		&j.SHA256, &j.Filename, &j.SourceURL, &md, &j.Attempts, &j.LeaseOwner, &until, &notBefore, &created, &updated); err != nil {
		return tools.Job{}, err
	}
	if len(md) > 0 {
		j.Metadata = md
	}
	j.Status = tools.JobStatus(status)
	j.LeaseUntil, j.NotBefore, j.CreatedAt, j.UpdatedAt = FromMicros(until), FromMicros(notBefore), FromMicros(created), FromMicros(updated)
	return j, nil
}

// DocumentArgs are the values of DocumentCols for d of tenant, in
// collection.
func DocumentArgs(tenant, collection string, d *tools.Document) []any {
	return []any{tenant, d.ID, collection, d.JobID, d.SHA256, d.Filename, d.SourceURL, Raw(d.Metadata), d.Bytes, d.Chunks,
		Micros(d.CreatedAt)}
}

// ScanDocument reads a row of DocumentCols; the tenant column is read and
// dropped.
func ScanDocument(r Scanner) (tools.Document, error) {
	var d tools.Document
	var tenant string
	var md []byte
	var created int64
	if err := r.Scan(&tenant, &d.ID, &d.CollectionID, &d.JobID, &d.SHA256, &d.Filename, &d.SourceURL, &md,
		&d.Bytes, &d.Chunks, &created); err != nil {
		return tools.Document{}, err
	}
	if len(md) > 0 {
		d.Metadata = md
	}
	d.CreatedAt = FromMicros(created)
	return d, nil
}

// SortClaimedJobs puts claimed jobs in ClaimJobs' order, oldest first: an
// UPDATE … RETURNING returns its rows in no particular order.
func SortClaimedJobs(js []tools.Job) {
	slices.SortFunc(js, func(a, b tools.Job) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Tenant, b.Tenant))
	})
}

// SortClaimedGraphs puts claimed graphs in ClaimGraphs' order, oldest
// request first.
func SortClaimedGraphs(cs []tools.Collection) {
	slices.SortFunc(cs, func(a, b tools.Collection) int {
		return cmp.Or(a.Graph.RequestedAt.Compare(b.Graph.RequestedAt), cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.ID, b.ID))
	})
}
