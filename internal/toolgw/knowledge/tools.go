package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/strictjson"
	"novaos.dev/novaos/tools"
)

// Bounds of arguments besides the Options.
const (
	maxNameBytes        = 200
	maxDescriptionBytes = 2000
	maxIDBytes          = 256
	maxFilenameBytes    = 1024
	maxSourceURLBytes   = 4096
)

// toolDef is one tool: how it is listed and run.
type toolDef struct {
	name, title, description string
	schema                   string
	write                    bool
	fields                   *strictjson.Fields
	run                      func(p *Provider, ctx context.Context, tenant string, args *arguments) (any, error)
}

// arguments are a call's arguments and the names its tool takes.
type arguments struct {
	raw    json.RawMessage
	fields *strictjson.Fields
}

func (d *toolDef) tool() toolgw.Tool {
	scope := ScopeRead
	var ann *tools.Annotations
	if d.write {
		scope = ScopeWrite
	} else {
		yes := true
		ann = &tools.Annotations{ReadOnly: &yes}
	}
	return toolgw.Tool{
		Tool: tools.Tool{Name: d.name, Title: d.title, Description: d.description, InputSchema: json.RawMessage(d.schema),
			Annotations: ann},
		Scopes: []string{scope},
	}
}

// fieldsOf lists the exact argument names of a tool, each of any value.
func fieldsOf(names ...string) *strictjson.Fields {
	f := &strictjson.Fields{Names: map[string]*strictjson.Fields{}}
	for _, n := range names {
		f.Names[n] = nil
	}
	return f
}

var toolList = []*toolDef{
	{
		name: ToolCreateCollection, title: "Create a knowledge collection", write: true,
		description: "Creates a named collection of documents for the tenant and returns its collection_id.",
		schema: `{"type":"object","additionalProperties":false,"required":["name"],"properties":{
			"name":{"type":"string","minLength":1,"maxLength":200,"description":"Unique within the tenant."},
			"description":{"type":"string","maxLength":2000}}}`,
		fields: fieldsOf("name", "description"),
		run:    (*Provider).createCollection,
	},
	{
		name: ToolListCollections, title: "List knowledge collections",
		description: "Lists the tenant's collections with their document counts and graph status.",
		schema:      `{"type":"object","additionalProperties":false,"properties":{}}`,
		fields:      fieldsOf(),
		run:         (*Provider).listCollections,
	},
	{
		name: ToolDeleteCollection, title: "Delete a knowledge collection", write: true,
		description: "Deletes a collection and its documents; its pending ingest jobs end as cancelled.",
		schema: `{"type":"object","additionalProperties":false,"required":["collection_id"],"properties":{
			"collection_id":{"type":"string","minLength":1}}}`,
		fields: fieldsOf("collection_id"),
		run:    (*Provider).deleteCollection,
	},
	{
		name: ToolIngest, title: "Ingest a document", write: true,
		description: "Queues a document for chunking and indexing and returns its job_id at once; poll job_status. " +
			"metadata.collection_id (or collection, a name or id, made when missing) picks the collection, the tenant's " +
			"\"default\" one otherwise; filename and source_url are returned in citations. A document whose content the " +
			"collection holds already completes at once with duplicate_of.",
		schema: `{"type":"object","additionalProperties":false,"required":["content"],"properties":{
			"content":{"type":"string","minLength":1},
			"metadata":{"type":"object","properties":{
				"collection_id":{"type":"string"},"collection":{"type":"string"},
				"filename":{"type":"string"},"source_url":{"type":"string"}}}}}`,
		fields: &strictjson.Fields{Names: map[string]*strictjson.Fields{"content": nil, "metadata": {Open: true}}},
		run:    (*Provider).ingest,
	},
	{
		name: ToolJobStatus, title: "Ingest job status",
		description: "Returns an ingest job's status: pending, running, completed, failed, dead_letter or cancelled, " +
			"with error, duplicate_of and document_id when they apply.",
		schema: `{"type":"object","additionalProperties":false,"required":["job_id"],"properties":{
			"job_id":{"type":"string","minLength":1}}}`,
		fields: fieldsOf("job_id"),
		run:    (*Provider).jobStatus,
	},
	{
		name: ToolSearch, title: "Search knowledge",
		description: "Finds the chunks that best match a query (keyword and vector search, fused), in one collection or " +
			"all of the tenant's, each with a citation of its document and place.",
		schema: `{"type":"object","additionalProperties":false,"required":["query"],"properties":{
			"query":{"type":"string","minLength":1},
			"collection_id":{"type":"string"},
			"top_k":{"type":"integer","minimum":1,"maximum":50,"default":5}}}`,
		fields: fieldsOf("query", "collection_id", "top_k"),
		run:    (*Provider).search,
	},
	{
		name: ToolBuildGraph, title: "Build a collection's entity graph", write: true,
		description: "Starts (or restarts) building the collection's entity graph and returns at once with status " +
			"pending; poll graph_status.",
		schema: `{"type":"object","additionalProperties":false,"required":["collection_id"],"properties":{
			"collection_id":{"type":"string","minLength":1}}}`,
		fields: fieldsOf("collection_id"),
		run:    (*Provider).buildGraph,
	},
	{
		name: ToolGraphStatus, title: "Entity graph status",
		description: "Returns the collection's graph_status (none, pending, running, completed, failed), graph_error and counts.",
		schema: `{"type":"object","additionalProperties":false,"required":["collection_id"],"properties":{
			"collection_id":{"type":"string","minLength":1}}}`,
		fields: fieldsOf("collection_id"),
		run:    (*Provider).graphStatus,
	},
	{
		name: ToolQueryGraphLocal, title: "Ask about entities",
		description: "Answers an entity-centred question from the collection's graph with cited sentences of its " +
			"documents. Until the graph is built the answer comes from plain search and degraded is true.",
		schema: `{"type":"object","additionalProperties":false,"required":["question","collection_id"],"properties":{
			"question":{"type":"string","minLength":1},"collection_id":{"type":"string","minLength":1}}}`,
		fields: fieldsOf("question", "collection_id"),
		run: func(p *Provider, ctx context.Context, t string, a *arguments) (any, error) {
			return p.queryGraph(ctx, t, a, false)
		},
	},
	{
		name: ToolQueryGraphGlobal, title: "Ask about themes",
		description: "Answers a broad question from the communities of the collection's graph, one cited sentence " +
			"each. Until the graph is built the answer comes from plain search and degraded is true.",
		schema: `{"type":"object","additionalProperties":false,"required":["question","collection_id"],"properties":{
			"question":{"type":"string","minLength":1},"collection_id":{"type":"string","minLength":1}}}`,
		fields: fieldsOf("question", "collection_id"),
		run: func(p *Provider, ctx context.Context, t string, a *arguments) (any, error) {
			return p.queryGraph(ctx, t, a, true)
		},
	},
}

var toolsByName = func() map[string]*toolDef {
	m := make(map[string]*toolDef, len(toolList))
	for _, d := range toolList {
		m[d.name] = d
	}
	return m
}()

// decode reads the arguments into v: one JSON object with no repeated
// member, only the names the tool lists, spelled exactly.
func (a *arguments) decode(v any) error {
	raw := a.raw
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`) // no arguments
	}
	if err := strictjson.Decode(raw, v, &strictjson.Options{Object: true, MaxDepth: 32, Fields: a.fields}, false); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// text checks a string argument: valid UTF-8 of at most max bytes and, but
// for line breaks and tabs where multiline is set, no control characters.
func text(field, s string, max int, multiline bool) error {
	if len(s) > max {
		return invalid("%s is %d bytes, more than %d", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", field)
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t' || r == '\r')) {
			return invalid("%s holds the control character %U", field, r)
		}
	}
	return nil
}

func id(field, s string) error {
	if strings.TrimSpace(s) == "" {
		return invalid("%s is empty", field)
	}
	return text(field, s, maxIDBytes, false)
}

// storeErr turns a store's sentinel into the caller's error.
func storeErr(err error, what string) error {
	switch {
	case errors.Is(err, tools.ErrKnowledgeNotFound):
		return notFound("%s", what)
	case errors.Is(err, tools.ErrKnowledgeLimit):
		return limited("%s", what)
	}
	return err
}

// collectionOut is a collection as the tools describe it.
type collectionOut struct {
	CollectionID  string    `json:"collection_id"`
	Name          string    `json:"name"`
	Description   string    `json:"description"`
	DocumentCount int       `json:"document_count"`
	ChunkCount    int       `json:"chunk_count"`
	GraphStatus   string    `json:"graph_status"`
	CreatedAt     time.Time `json:"created_at"`
}

func collectionOf(c *tools.Collection) collectionOut {
	return collectionOut{CollectionID: c.ID, Name: c.Name, Description: c.Description, DocumentCount: c.Documents,
		ChunkCount: c.Chunks, GraphStatus: string(graphStatus(c)), CreatedAt: c.CreatedAt}
}

func graphStatus(c *tools.Collection) tools.GraphStatus {
	if c.Graph.Status == "" {
		return tools.GraphNone
	}
	return c.Graph.Status
}

func (p *Provider) createCollection(ctx context.Context, tenant string, args *arguments) (any, error) {
	var a struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := args.decode(&a); err != nil {
		return nil, err
	}
	c, err := p.newCollection(ctx, tenant, a.Name, a.Description)
	if err != nil {
		return nil, err
	}
	return collectionOf(&c), nil
}

// newCollection checks a name and description and makes the collection.
func (p *Provider) newCollection(ctx context.Context, tenant, name, description string) (tools.Collection, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return tools.Collection{}, invalid("name is empty")
	}
	if err := text("name", name, maxNameBytes, false); err != nil {
		return tools.Collection{}, err
	}
	if err := text("description", description, maxDescriptionBytes, true); err != nil {
		return tools.Collection{}, err
	}
	c := tools.Collection{ID: a2a.NewID(), Name: name, Description: description, CreatedAt: p.o.Now()}
	err := p.ks.CreateCollection(ctx, tenant, c, p.o.MaxCollections)
	switch {
	case errors.Is(err, tools.ErrKnowledgeExists):
		return tools.Collection{}, &callError{CodeExists, "a collection named " + quote(name) + " exists"}
	case errors.Is(err, tools.ErrKnowledgeLimit):
		return tools.Collection{}, limited("the tenant has %d collections, the most it may have", p.o.MaxCollections)
	case err != nil:
		return tools.Collection{}, err
	}
	return p.ks.Collection(ctx, tenant, c.ID)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (p *Provider) listCollections(ctx context.Context, tenant string, args *arguments) (any, error) {
	var a struct{}
	if err := args.decode(&a); err != nil {
		return nil, err
	}
	cs, err := p.ks.ListCollections(ctx, tenant, "", p.o.MaxCollections)
	if err != nil {
		return nil, err
	}
	out := struct {
		Collections []collectionOut `json:"collections"`
	}{Collections: []collectionOut{}}
	for i := range cs {
		out.Collections = append(out.Collections, collectionOf(&cs[i]))
	}
	return out, nil
}

func (p *Provider) deleteCollection(ctx context.Context, tenant string, args *arguments) (any, error) {
	coll, err := collectionArg(args)
	if err != nil {
		return nil, err
	}
	n, err := p.ks.DeleteCollection(ctx, tenant, coll, p.o.Now())
	if err != nil {
		return nil, storeErr(err, "no collection "+quote(coll))
	}
	p.graphs.drop(tenant, coll)
	p.wake()
	return struct {
		CollectionID  string `json:"collection_id"`
		Deleted       bool   `json:"deleted"`
		CancelledJobs int    `json:"cancelled_jobs"`
	}{coll, true, n}, nil
}

// jobOut is a job as job_status and ingest describe it.
type jobOut struct {
	JobID        string    `json:"job_id"`
	Status       string    `json:"status"`
	CollectionID string    `json:"collection_id"`
	Error        string    `json:"error,omitempty"`
	DuplicateOf  string    `json:"duplicate_of,omitempty"`
	DocumentID   string    `json:"document_id,omitempty"`
	Attempts     int       `json:"attempts"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

func jobOf(j *tools.Job) jobOut {
	return jobOut{JobID: j.ID, Status: string(j.Status), CollectionID: j.CollectionID, Error: j.Error, DuplicateOf: j.DuplicateOf,
		DocumentID: j.DocumentID, Attempts: j.Attempts, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt}
}

func (p *Provider) ingest(ctx context.Context, tenant string, args *arguments) (any, error) {
	var a struct {
		Content  string          `json:"content"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := args.decode(&a); err != nil {
		return nil, err
	}
	if len(a.Content) > p.o.MaxDocumentBytes {
		return nil, limited("content is %d bytes, more than %d", len(a.Content), p.o.MaxDocumentBytes)
	}
	if strings.IndexByte(a.Content, 0) >= 0 {
		return nil, invalid("content holds NUL characters: send text")
	}
	md, err := p.metadata(a.Metadata)
	if err != nil {
		return nil, err
	}
	content := Normalize(a.Content)
	if content == "" {
		return nil, invalid("content is empty")
	}
	if n := len(Split(content, p.o.Chunks)); n > p.o.MaxChunks {
		return nil, limited("the document makes %d chunks, more than %d", n, p.o.MaxChunks)
	}
	coll, err := p.resolveCollection(ctx, tenant, md)
	if err != nil {
		return nil, err
	}
	now := p.o.Now()
	j := tools.Job{ID: a2a.NewID(), CollectionID: coll.ID, Status: tools.JobPending, Content: content, SHA256: Digest(content),
		Filename: md.filename, SourceURL: md.sourceURL, Metadata: md.rest, CreatedAt: now, UpdatedAt: now}
	dup, err := p.ks.DocumentByHash(ctx, tenant, coll.ID, j.SHA256)
	switch {
	case err == nil:
		j.Status, j.Content, j.DocumentID, j.DuplicateOf = tools.JobCompleted, "", dup.ID, dup.ID
	case !errors.Is(err, tools.ErrKnowledgeNotFound):
		return nil, err
	}
	if err := p.ks.CreateJob(ctx, tenant, j, p.o.MaxActiveJobs); err != nil {
		switch {
		case errors.Is(err, tools.ErrKnowledgeLimit):
			return nil, limited("the tenant has %d ingest jobs waiting, the most it may have: try again once some finish", p.o.MaxActiveJobs)
		case errors.Is(err, tools.ErrKnowledgeNotFound):
			return nil, notFound("collection %s was deleted", quote(coll.ID))
		}
		return nil, err
	}
	if j.Status == tools.JobPending {
		p.wake()
	}
	return jobOf(&j), nil
}

// ingestMetadata is what an ingest's metadata says.
type ingestMetadata struct {
	collectionID, collection string
	filename, sourceURL      string
	rest                     json.RawMessage // the other keys, a JSON object, nil when none
}

func (p *Provider) metadata(raw json.RawMessage) (ingestMetadata, error) {
	var md ingestMetadata
	if len(raw) == 0 || string(raw) == "null" {
		return md, nil
	}
	if len(raw) > p.o.MaxMetadataBytes {
		return md, limited("metadata is %d bytes, more than %d", len(raw), p.o.MaxMetadataBytes)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return md, invalid("metadata must be an object")
	}
	for _, f := range []struct {
		key string
		dst *string
		max int
	}{
		{"collection_id", &md.collectionID, maxIDBytes},
		{"collection", &md.collection, maxNameBytes},
		{"filename", &md.filename, maxFilenameBytes},
		{"source_url", &md.sourceURL, maxSourceURLBytes},
	} {
		v, ok := m[f.key]
		if !ok || string(v) == "null" {
			delete(m, f.key)
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return md, invalid("metadata.%s must be a string", f.key)
		}
		if err := text("metadata."+f.key, *f.dst, f.max, false); err != nil {
			return md, err
		}
		delete(m, f.key)
	}
	if len(m) > 0 {
		rest, err := json.Marshal(m)
		if err != nil {
			return md, invalid("metadata: %v", err)
		}
		md.rest = rest
	}
	return md, nil
}

// resolveCollection finds the collection an ingest names: collection_id
// must exist; collection names one by id or name and is made when there
// is none; with neither, the tenant's default collection, made on first
// use.
func (p *Provider) resolveCollection(ctx context.Context, tenant string, md ingestMetadata) (tools.Collection, error) {
	if md.collectionID != "" {
		c, err := p.ks.Collection(ctx, tenant, md.collectionID)
		return c, storeErr(err, "no collection "+quote(md.collectionID))
	}
	name := strings.TrimSpace(md.collection)
	if name == "" {
		name = DefaultCollection
	} else if c, err := p.ks.Collection(ctx, tenant, name); err == nil {
		return c, nil
	} else if !errors.Is(err, tools.ErrKnowledgeNotFound) {
		return c, err
	}
	for range 2 {
		c, err := p.ks.CollectionByName(ctx, tenant, name)
		if !errors.Is(err, tools.ErrKnowledgeNotFound) {
			return c, err
		}
		c, err = p.newCollection(ctx, tenant, name, "")
		var ce *callError
		if !errors.As(err, &ce) || ce.code != CodeExists {
			return c, err
		}
		// Another ingest made it just now: read it.
	}
	return tools.Collection{}, notFound("collection %s was made and deleted meanwhile", quote(name))
}

func (p *Provider) jobStatus(ctx context.Context, tenant string, args *arguments) (any, error) {
	var a struct {
		JobID string `json:"job_id"`
	}
	if err := args.decode(&a); err != nil {
		return nil, err
	}
	if err := id("job_id", a.JobID); err != nil {
		return nil, err
	}
	j, err := p.ks.Job(ctx, tenant, a.JobID)
	if err != nil {
		return nil, storeErr(err, "no ingest job "+quote(a.JobID))
	}
	return jobOf(&j), nil
}

func (p *Provider) buildGraph(ctx context.Context, tenant string, args *arguments) (any, error) {
	coll, err := collectionArg(args)
	if err != nil {
		return nil, err
	}
	c, err := p.ks.RequestGraph(ctx, tenant, coll, p.o.Now())
	if err != nil {
		return nil, storeErr(err, "no collection "+quote(coll))
	}
	p.wake()
	return struct {
		CollectionID      string `json:"collection_id"`
		Status            string `json:"status"`
		EntityCount       int    `json:"entity_count"`
		RelationshipCount int    `json:"relationship_count"`
		CommunityCount    int    `json:"community_count"`
	}{CollectionID: c.ID, Status: string(c.Graph.Status)}, nil
}

func (p *Provider) graphStatus(ctx context.Context, tenant string, args *arguments) (any, error) {
	coll, err := collectionArg(args)
	if err != nil {
		return nil, err
	}
	c, err := p.ks.Collection(ctx, tenant, coll)
	if err != nil {
		return nil, storeErr(err, "no collection "+quote(coll))
	}
	out := struct {
		CollectionID           string     `json:"collection_id"`
		GraphStatus            string     `json:"graph_status"`
		GraphError             *string    `json:"graph_error"`
		GraphEntityCount       int        `json:"graph_entity_count"`
		GraphRelationshipCount int        `json:"graph_relationship_count"`
		GraphCommunityCount    int        `json:"graph_community_count"`
		GraphBuiltAt           *time.Time `json:"graph_built_at,omitempty"`
	}{CollectionID: c.ID, GraphStatus: string(graphStatus(&c)), GraphEntityCount: c.Graph.Entities,
		GraphRelationshipCount: c.Graph.Relationships, GraphCommunityCount: c.Graph.Communities}
	if c.Graph.Error != "" {
		out.GraphError = &c.Graph.Error
	}
	if c.Graph.Status == tools.GraphCompleted {
		out.GraphBuiltAt = &c.Graph.BuiltAt
	}
	return out, nil
}

// query checks a query or question argument.
func query(field, q string) (string, error) {
	q = strings.TrimSpace(q)
	if q == "" {
		return "", invalid("%s is empty", field)
	}
	return q, text(field, q, memory.MaxQueryBytes, true)
}

// collectionArg reads the collection id of a tool whose only argument it
// is.
func collectionArg(args *arguments) (string, error) {
	var a struct {
		CollectionID string `json:"collection_id"`
	}
	if err := args.decode(&a); err != nil {
		return "", err
	}
	return a.CollectionID, id("collection_id", a.CollectionID)
}
