package knowledge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/internal/toolgw/knowledge"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/resilience"
	"novaos.dev/novaos/tools"
)

const handbook = `Expense policy

Employees book travel through the travel desk. Flights longer than six hours may be booked in premium economy.
Hotel stays are reimbursed up to 180 euros a night in Lisbon and 220 euros a night in London.

Meals during travel are covered up to 60 euros a day. Receipts must be uploaded within thirty days.`

// A document is queued, indexed by the worker, and then found by search
// with a citation that points at its exact place.
func TestIngestThenSearch(t *testing.T) {
	e := newEnv(t, &knowledge.Options{Chunks: knowledge.ChunkOptions{MaxBytes: 120, OverlapBytes: 40}})
	coll := e.createCollection("acme", "handbook")
	r := e.ingest("acme", coll, strings.ReplaceAll(handbook, "\n", "\r\n")+"  \n\n", map[string]any{
		"filename": "expenses.md", "source_url": "https://intranet.example/expenses", "owner": "finance", "version": 3})
	job := r.str("job_id")
	if r.str("status") != "pending" || job == "" || r.str("collection_id") != coll {
		t.Fatalf("ingest answered %s", r.raw)
	}
	if got := e.job("acme", job); got.str("status") != "pending" {
		t.Fatalf("before the worker ran: %s", got.raw)
	}
	if round := e.runOnce(e.p); round.Jobs != 1 {
		t.Fatalf("RunOnce = %+v, want one job", round)
	}
	st := e.job("acme", job)
	if st.str("status") != "completed" || st.str("document_id") != job || st.str("duplicate_of") != "" || st.data["error"] != nil {
		t.Fatalf("job_status = %s", st.raw)
	}
	res := e.search("acme", map[string]any{"query": "hotel reimbursed per night in London", "collection_id": coll, "top_k": 3})
	if len(res) == 0 || len(res) > 3 {
		t.Fatalf("search found %d results", len(res))
	}
	top := res[0]
	if !strings.Contains(top.Text, "220 euros a night in London") {
		t.Errorf("the best result is %q", top.Text)
	}
	norm := []rune(knowledge.Normalize(handbook))
	for _, r := range res {
		c := r.Citation
		if r.DocumentID != job || c.DocumentID != job || r.CollectionID != coll || c.Filename != "expenses.md" ||
			c.SourceURL != "https://intranet.example/expenses" || r.ChunkID == "" {
			t.Errorf("result %+v", r)
		}
		if c.Start < 0 || c.End > len(norm) || string(norm[c.Start:c.End]) != r.Text {
			t.Errorf("citation [%d:%d] of chunk %d does not hold its text %q", c.Start, c.End, c.ChunkIndex, r.Text)
		}
		if r.Score <= 0 || r.Score > 1 {
			t.Errorf("score %v is not a calibrated similarity", r.Score)
		}
	}
	// Without a collection, every collection of the tenant is searched.
	if all := e.search("acme", map[string]any{"query": "receipts uploaded"}); len(all) == 0 || !strings.Contains(all[0].Text, "Receipts") {
		t.Errorf("a search of every collection found %+v", all)
	}
	var list struct {
		Collections []struct {
			CollectionID  string `json:"collection_id"`
			DocumentCount int    `json:"document_count"`
			ChunkCount    int    `json:"chunk_count"`
			GraphStatus   string `json:"graph_status"`
		} `json:"collections"`
	}
	e.call(e.p, "acme", knowledge.ToolListCollections, map[string]any{}).ok(t).into(t, &list)
	if len(list.Collections) != 1 || list.Collections[0].DocumentCount != 1 || list.Collections[0].ChunkCount < 3 ||
		list.Collections[0].GraphStatus != "none" {
		t.Errorf("list_collections = %+v", list)
	}
	if n := e.partitionSize("acme", coll); n != list.Collections[0].ChunkCount {
		t.Errorf("%d chunks in the memory partition, the collection counts %d", n, list.Collections[0].ChunkCount)
	}
}

// An ingest without a collection goes to the tenant's default one; one
// naming a collection by name makes it on first use.
func TestIngestCollections(t *testing.T) {
	e := newEnv(t, nil)
	first := e.call(e.p, "acme", knowledge.ToolIngest, map[string]any{"content": "Alpha text."}).ok(t)
	byName := e.call(e.p, "acme", knowledge.ToolIngest, map[string]any{"content": "Beta text.", "metadata": map[string]any{"collection": "notes"}}).ok(t)
	again := e.call(e.p, "acme", knowledge.ToolIngest, map[string]any{"content": "Gamma text.", "metadata": map[string]any{"collection": "notes"}}).ok(t)
	if byName.str("collection_id") != again.str("collection_id") || byName.str("collection_id") == first.str("collection_id") {
		t.Errorf("collections: default %s, notes %s then %s", first.str("collection_id"), byName.str("collection_id"), again.str("collection_id"))
	}
	byID := e.call(e.p, "acme", knowledge.ToolIngest, map[string]any{"content": "Delta.", "metadata": map[string]any{"collection": byName.str("collection_id")}}).ok(t)
	if byID.str("collection_id") != byName.str("collection_id") {
		t.Errorf("metadata.collection holding an id went to %s", byID.str("collection_id"))
	}
	var list struct {
		Collections []struct{ Name string } `json:"collections"`
	}
	e.call(e.p, "acme", knowledge.ToolListCollections, nil).ok(t).into(t, &list)
	if len(list.Collections) != 2 || list.Collections[0].Name != knowledge.DefaultCollection || list.Collections[1].Name != "notes" {
		t.Errorf("collections %+v", list.Collections)
	}
	e.call(e.p, "acme", knowledge.ToolIngest, map[string]any{"content": "x", "metadata": map[string]any{"collection_id": "nope"}}).
		refused(t, knowledge.CodeNotFound)
	e.call(e.p, "acme", knowledge.ToolCreateCollection, map[string]any{"name": "notes"}).refused(t, knowledge.CodeExists)
}

func TestDuplicates(t *testing.T) {
	e := newEnv(t, nil)
	coll := e.createCollection("acme", "docs")
	other := e.createCollection("acme", "other")
	first := e.ingest("acme", coll, handbook, nil).str("job_id")
	e.runOnce(e.p)
	// The same text, spelled with other line breaks and trailing spaces:
	// completed at once, naming the original.
	dup := e.ingest("acme", coll, strings.ReplaceAll(handbook, "\n", " \r\n"), nil)
	if dup.str("status") != "completed" || dup.str("duplicate_of") != first || dup.str("document_id") != first {
		t.Fatalf("a duplicate ingest answered %s", dup.raw)
	}
	if st := e.job("acme", dup.str("job_id")); st.str("status") != "completed" || st.str("duplicate_of") != first {
		t.Errorf("the duplicate's job_status = %s", st.raw)
	}
	// Another collection is not a duplicate.
	if r := e.ingest("acme", other, handbook, nil); r.str("status") != "pending" {
		t.Errorf("the same text in another collection answered %s", r.raw)
	}
	// Two uploads racing before the worker: the second becomes a duplicate
	// when it commits, and its chunks go.
	a := e.ingest("acme", coll, "Race text one. It has two sentences.", nil).str("job_id")
	b := e.ingest("acme", coll, "Race text one. It has two sentences.", nil).str("job_id")
	e.runOnce(e.p)
	sa, sb := e.job("acme", a), e.job("acme", b)
	// The workers take the two jobs at once: whichever commits first is
	// the original, and the other names it.
	if sb.str("duplicate_of") == "" {
		a, sa, sb = b, sb, sa
	}
	if sa.str("status") != "completed" || sa.str("duplicate_of") != "" || sb.str("status") != "completed" || sb.str("duplicate_of") != a {
		t.Errorf("racing duplicates: %s and %s", sa.raw, sb.raw)
	}
	res := e.search("acme", map[string]any{"query": "race text sentences", "collection_id": coll, "top_k": 10})
	found := 0
	for _, r := range res {
		if strings.Contains(r.Text, "Race text") {
			found++
			if r.DocumentID != a {
				t.Errorf("a result of the duplicate %s", r.DocumentID)
			}
		}
	}
	if found != 1 {
		t.Errorf("the raced text was found %d times, want once", found)
	}
}

func TestFailedAndDeadLetter(t *testing.T) {
	emb := &failingEmbedder{HashEmbedder: memory.NewHashEmbedder(0)}
	e := newEnv(t, &knowledge.Options{Embedder: emb, RetryBackoff: time.Minute, Chunks: knowledge.ChunkOptions{MaxBytes: 100}})
	coll := e.createCollection("acme", "docs")

	// The embedding service refuses the document: a retry would repeat it.
	emb.set(&resilience.HTTPError{Status: 400}, 0)
	refused := e.ingest("acme", coll, "A document the embedder refuses.", nil).str("job_id")
	e.runOnce(e.p)
	st := e.job("acme", refused)
	if st.str("status") != "failed" || !strings.Contains(st.str("error"), "HTTP 400") {
		t.Fatalf("a refused document: %s", st.raw)
	}

	// The service goes down after the first batch of chunks: retried
	// after a backoff, then dead-lettered, and the chunks it wrote go.
	emb.set(errDown, 1)
	var long strings.Builder
	for i := range 100 {
		fmt.Fprintf(&long, "Sentence number %d is about topic %d. ", i, i%7)
	}
	down := e.ingest("acme", coll, long.String(), nil).str("job_id")
	for attempt := 1; attempt <= 3; attempt++ {
		if r := e.runOnce(e.p); r.Jobs != 1 {
			t.Fatalf("attempt %d: RunOnce = %+v", attempt, r)
		}
		st := e.job("acme", down)
		want := "pending"
		if attempt == 3 {
			want = "dead_letter"
		}
		if st.str("status") != want || st.data["attempts"] != float64(attempt) || st.str("error") == "" {
			t.Fatalf("after attempt %d: %s, want %s", attempt, st.raw, want)
		}
		if strings.Contains(st.str("error"), "10.0.0.7") {
			t.Errorf("the job's error tells the cause's detail: %q", st.str("error"))
		}
		// Not before its backoff: one minute, then two.
		if r := e.runOnce(e.p); r.Jobs != 0 {
			t.Fatalf("a job ran again before its backoff: %+v", r)
		}
		if attempt == 1 && e.partitionSize("acme", coll) == 0 {
			t.Fatal("the first attempt wrote no chunks before it failed")
		}
		e.clock.advance(time.Duration(1<<(attempt-1)) * time.Minute)
	}
	if n := e.partitionSize("acme", coll); n != 0 {
		t.Errorf("%d chunks of failed jobs remain", n)
	}

	// A transient failure and then success: completed on the second
	// attempt.
	emb.set(errDown, 0)
	flaky := e.ingest("acme", coll, "A document indexed on the second try.", nil).str("job_id")
	e.runOnce(e.p)
	emb.set(nil, 0)
	e.clock.advance(time.Minute)
	e.runOnce(e.p)
	if st := e.job("acme", flaky); st.str("status") != "completed" || st.data["attempts"] != float64(2) || st.data["error"] != nil {
		t.Errorf("a job that succeeded on retry: %s", st.raw)
	}
}

// Deleting a collection cancels its waiting jobs, hides it at once, and
// purges its chunks one job lease later.
func TestDeleteCollection(t *testing.T) {
	e := newEnv(t, nil)
	coll := e.createCollection("acme", "docs")
	done := e.ingest("acme", coll, handbook, nil).str("job_id")
	e.runOnce(e.p)
	waiting := []string{e.ingest("acme", coll, "One more.", nil).str("job_id"), e.ingest("acme", coll, "And another.", nil).str("job_id")}
	r := e.call(e.p, "acme", knowledge.ToolDeleteCollection, map[string]any{"collection_id": coll}).ok(t)
	if r.data["cancelled_jobs"] != float64(2) || r.data["deleted"] != true {
		t.Fatalf("delete_collection = %s", r.raw)
	}
	for _, j := range waiting {
		if st := e.job("acme", j); st.str("status") != "cancelled" {
			t.Errorf("job %s after the deletion: %s", j, st.raw)
		}
	}
	if st := e.job("acme", done); st.str("status") != "completed" {
		t.Errorf("a finished job after the deletion: %s", st.raw)
	}
	e.call(e.p, "acme", knowledge.ToolSearch, map[string]any{"query": "hotel", "collection_id": coll}).refused(t, knowledge.CodeNotFound)
	if res := e.search("acme", map[string]any{"query": "hotel"}); len(res) != 0 {
		t.Errorf("a deleted collection's chunks were found: %+v", res)
	}
	if round := e.runOnce(e.p); round.Jobs != 0 || round.Purged != 0 {
		t.Errorf("RunOnce at once = %+v: no job runs, nothing is purged within a lease", round)
	}
	if e.partitionSize("acme", coll) == 0 {
		t.Fatal("the chunks went before the purge")
	}
	e.clock.advance(knowledge.DefaultJobLease)
	if round := e.runOnce(e.p); round.Purged != 1 {
		t.Errorf("RunOnce a lease later = %+v, want one purge", round)
	}
	if n := e.partitionSize("acme", coll); n != 0 {
		t.Errorf("%d chunks remain after the purge", n)
	}
	e.call(e.p, "acme", knowledge.ToolDeleteCollection, map[string]any{"collection_id": coll}).refused(t, knowledge.CodeNotFound)
	// The name is free again.
	e.createCollection("acme", "docs")
}

const curie = `Marie Curie was a physicist who worked in Paris. Marie Curie and Pierre Curie discovered polonium and radium together.
Pierre Curie taught at the Sorbonne. The Sorbonne gave Marie Curie a chair after Pierre Curie died.

Marie Curie received the Nobel Prize twice. The Nobel Prize in Chemistry came in 1911.`

const lovelace = `Ada Lovelace wrote notes on the Analytical Engine. Charles Babbage designed the Analytical Engine in London.
Ada Lovelace and Charles Babbage exchanged letters for years. Charles Babbage admired the notes of Ada Lovelace.`

type answerOut struct {
	Answer     string  `json:"answer"`
	Confidence float64 `json:"confidence"`
	Degraded   bool    `json:"degraded"`
	Message    string  `json:"message"`
	Citations  []struct {
		DocumentID string `json:"document_id"`
		Filename   string `json:"filename"`
		ChunkID    string `json:"chunk_id"`
		Start      int    `json:"start"`
		End        int    `json:"end"`
		Text       string `json:"text"`
	} `json:"citations"`
	Metadata struct {
		SearchMode  string   `json:"search_mode"`
		GraphStatus string   `json:"graph_status"`
		Entities    []string `json:"entities"`
		Communities []struct {
			Entities []string `json:"entities"`
		} `json:"communities"`
	} `json:"metadata"`
}

func TestGraph(t *testing.T) {
	e := newEnv(t, &knowledge.Options{Chunks: knowledge.ChunkOptions{MaxBytes: 200}})
	coll := e.createCollection("acme", "science")
	docs := map[string]string{}
	for name, text := range map[string]string{"curie.txt": curie, "lovelace.txt": lovelace} {
		docs[e.ingest("acme", coll, text, map[string]any{"filename": name}).str("job_id")] = text
	}
	e.runOnce(e.p)
	ask := func(tool, q string) answerOut {
		t.Helper()
		var a answerOut
		e.call(e.p, "acme", tool, map[string]any{"question": q, "collection_id": coll}).ok(t).into(t, &a)
		// Every sentence is the documents' own, at the place cited.
		var parts []string
		for _, c := range a.Citations {
			text := []rune(knowledge.Normalize(docs[c.DocumentID]))
			if c.Start < 0 || c.End > len(text) || string(text[c.Start:c.End]) != c.Text {
				t.Errorf("%s: citation [%d:%d] of %s is not %q", tool, c.Start, c.End, c.DocumentID, c.Text)
			}
			parts = append(parts, c.Text)
		}
		if a.Answer != strings.Join(parts, " ") && a.Answer != strings.Join(parts, "\n") {
			t.Errorf("%s: the answer %q is not its cited sentences %q", tool, a.Answer, parts)
		}
		return a
	}

	// Before a build: degraded, from plain search, with a hint.
	st := e.call(e.p, "acme", knowledge.ToolGraphStatus, map[string]any{"collection_id": coll}).ok(t)
	if st.str("graph_status") != "none" || st.data["graph_error"] != nil {
		t.Fatalf("graph_status before a build: %s", st.raw)
	}
	before := ask(knowledge.ToolQueryGraphLocal, "Who discovered radium?")
	if !before.Degraded || !strings.Contains(before.Message, knowledge.ToolBuildGraph) || before.Metadata.SearchMode != "graph_local" ||
		!strings.Contains(before.Answer, "radium") {
		t.Errorf("a local question before the build: %+v", before)
	}
	if g := ask(knowledge.ToolQueryGraphGlobal, "What are the main themes?"); !g.Degraded || g.Metadata.SearchMode != "graph_global" {
		t.Errorf("a global question before the build: %+v", g)
	}

	ack := e.call(e.p, "acme", knowledge.ToolBuildGraph, map[string]any{"collection_id": coll}).ok(t)
	if ack.str("status") != "pending" || ack.data["entity_count"] != float64(0) || ack.data["relationship_count"] != float64(0) ||
		ack.data["community_count"] != float64(0) {
		t.Fatalf("build_graph = %s", ack.raw)
	}
	if st := e.call(e.p, "acme", knowledge.ToolGraphStatus, map[string]any{"collection_id": coll}).ok(t); st.str("graph_status") != "pending" {
		t.Fatalf("graph_status after the request: %s", st.raw)
	}
	if during := ask(knowledge.ToolQueryGraphLocal, "Who discovered radium?"); !during.Degraded {
		t.Error("a question while the graph is pending is not degraded")
	}
	if r := e.runOnce(e.p); r.Graphs != 1 {
		t.Fatalf("RunOnce = %+v, want one graph", r)
	}
	st = e.call(e.p, "acme", knowledge.ToolGraphStatus, map[string]any{"collection_id": coll}).ok(t)
	if st.str("graph_status") != "completed" || st.data["graph_entity_count"].(float64) < 6 || st.data["graph_relationship_count"].(float64) < 4 ||
		st.data["graph_community_count"] != float64(2) || st.data["graph_error"] != nil {
		t.Fatalf("graph_status after the build: %s", st.raw)
	}

	local := ask(knowledge.ToolQueryGraphLocal, "Who worked with Marie Curie?")
	if local.Degraded || local.Metadata.SearchMode != "graph_local" || len(local.Citations) == 0 ||
		!strings.Contains(local.Answer, "Pierre Curie") || local.Confidence <= 0 || local.Confidence > 1 {
		t.Errorf("a local question: %+v", local)
	}
	if len(local.Metadata.Entities) == 0 || local.Metadata.Entities[0] != "Marie Curie" {
		t.Errorf("a local question started from %v", local.Metadata.Entities)
	}
	for _, c := range local.Citations {
		if c.Filename != "curie.txt" {
			t.Errorf("a question about Marie Curie cites %s: %q", c.Filename, c.Text)
		}
	}
	// A question naming no entity starts from the passages search finds.
	if q := ask(knowledge.ToolQueryGraphLocal, "who wrote notes on an engine?"); !strings.Contains(q.Answer, "Ada Lovelace") {
		t.Errorf("a question without names: %+v", q)
	}

	global := ask(knowledge.ToolQueryGraphGlobal, "What are the main themes?")
	if global.Degraded || global.Metadata.SearchMode != "graph_global" || len(global.Metadata.Communities) != 2 ||
		len(global.Citations) != 2 || global.Confidence != 1 {
		t.Fatalf("a global question: %+v", global)
	}
	files := map[string]bool{}
	for _, c := range global.Citations {
		files[c.Filename] = true
	}
	if !files["curie.txt"] || !files["lovelace.txt"] {
		t.Errorf("the themes cite %v, want both documents", files)
	}
	// A theme the question names comes first.
	if g := ask(knowledge.ToolQueryGraphGlobal, "What about Charles Babbage and the Analytical Engine?"); len(g.Metadata.Communities) == 0 ||
		!strings.Contains(strings.Join(g.Metadata.Communities[0].Entities, ","), "Charles Babbage") {
		t.Errorf("a global question naming a theme: %+v", g.Metadata.Communities)
	}
}

// The graph's entities: capitalised names, without the stop words that
// start sentences, and a lone sentence-initial word only if it is a name
// elsewhere too.
func TestGraphEntities(t *testing.T) {
	e := newEnv(t, nil)
	coll := e.createCollection("acme", "x")
	e.ingest("acme", coll, "The Bank of England raised rates. Yesterday the Bank of England met Mark Carney. "+
		"Carney spoke. Then rates rose. Rates matter to Mark Carney's team at the Bank of England.", nil)
	e.runOnce(e.p)
	e.call(e.p, "acme", knowledge.ToolBuildGraph, map[string]any{"collection_id": coll}).ok(t)
	e.runOnce(e.p)
	var a answerOut
	e.call(e.p, "acme", knowledge.ToolQueryGraphGlobal, map[string]any{"question": "themes", "collection_id": coll}).ok(t).into(t, &a)
	if len(a.Metadata.Communities) != 1 {
		t.Fatalf("communities %+v", a.Metadata.Communities)
	}
	got := strings.Join(a.Metadata.Communities[0].Entities, "|")
	if got != "Bank of England|Mark Carney" {
		t.Errorf("entities %q, want Bank of England and Mark Carney (not The, Yesterday, Then, Rates or Carney)", got)
	}
}

func TestTenantIsolation(t *testing.T) {
	e := newEnv(t, nil)
	coll := e.createCollection("acme", "private")
	job := e.ingest("acme", coll, handbook, nil).str("job_id")
	e.runOnce(e.p)
	var list struct {
		Collections []any `json:"collections"`
	}
	e.call(e.p, "globex", knowledge.ToolListCollections, map[string]any{}).ok(t).into(t, &list)
	if len(list.Collections) != 0 {
		t.Errorf("another tenant lists %v", list.Collections)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{knowledge.ToolSearch, map[string]any{"query": "hotel", "collection_id": coll}},
		{knowledge.ToolJobStatus, map[string]any{"job_id": job}},
		{knowledge.ToolDeleteCollection, map[string]any{"collection_id": coll}},
		{knowledge.ToolBuildGraph, map[string]any{"collection_id": coll}},
		{knowledge.ToolGraphStatus, map[string]any{"collection_id": coll}},
		{knowledge.ToolQueryGraphLocal, map[string]any{"question": "hotel", "collection_id": coll}},
		{knowledge.ToolIngest, map[string]any{"content": "x", "metadata": map[string]any{"collection_id": coll}}},
	} {
		e.call(e.p, "globex", c.tool, c.args).refused(t, knowledge.CodeNotFound)
	}
	if res := e.search("globex", map[string]any{"query": "hotel reimbursed"}); len(res) != 0 {
		t.Errorf("another tenant's search found %+v", res)
	}
	// The same name is another tenant's own.
	other := e.createCollection("globex", "private")
	e.ingest("globex", other, handbook, nil)
	e.runOnce(e.p)
	if res := e.search("globex", map[string]any{"query": "hotel reimbursed"}); len(res) == 0 || res[0].CollectionID != other {
		t.Errorf("globex's own search: %+v", res)
	}
	if st := e.job("acme", job); st.str("status") != "completed" {
		t.Errorf("acme's job after globex's calls: %s", st.raw)
	}
}

func TestLimitsAndBadArguments(t *testing.T) {
	e := newEnv(t, &knowledge.Options{MaxDocumentBytes: 2000, MaxCollections: 2, MaxChunks: 3, MaxActiveJobs: 2,
		MaxMetadataBytes: 100, Chunks: knowledge.ChunkOptions{MaxBytes: 100, OverlapBytes: -1}})
	coll := e.createCollection("acme", "a")
	e.createCollection("acme", "b")
	e.call(e.p, "acme", knowledge.ToolCreateCollection, map[string]any{"name": "c"}).refused(t, knowledge.CodeLimit)
	e.createCollection("globex", "c") // another tenant's own limit
	for _, c := range []struct {
		name string
		tool string
		args any
		code string
	}{
		{"a document too large", knowledge.ToolIngest, map[string]any{"content": strings.Repeat("x", 2001)}, knowledge.CodeLimit},
		{"too many chunks", knowledge.ToolIngest, map[string]any{"content": strings.Repeat("Sentence number. ", 30)}, knowledge.CodeLimit},
		{"metadata too large", knowledge.ToolIngest, map[string]any{"content": "x", "metadata": map[string]any{"note": strings.Repeat("y", 100)}}, knowledge.CodeLimit},
		{"empty content", knowledge.ToolIngest, map[string]any{"content": " \n "}, tools.ReasonInvalidArguments},
		{"NUL in content", knowledge.ToolIngest, map[string]any{"content": "a\x00b"}, tools.ReasonInvalidArguments},
		{"metadata not an object", knowledge.ToolIngest, json.RawMessage(`{"content":"x","metadata":[1]}`), tools.ReasonInvalidArguments},
		{"a filename not a string", knowledge.ToolIngest, map[string]any{"content": "x", "metadata": map[string]any{"filename": 3}}, tools.ReasonInvalidArguments},
		{"an unknown argument", knowledge.ToolSearch, map[string]any{"query": "x", "limit": 3}, tools.ReasonInvalidArguments},
		{"a name spelled in another case", knowledge.ToolSearch, map[string]any{"Query": "x"}, tools.ReasonInvalidArguments},
		{"a repeated member", knowledge.ToolSearch, json.RawMessage(`{"query":"x","query":"y"}`), tools.ReasonInvalidArguments},
		{"not an object", knowledge.ToolSearch, json.RawMessage(`["query"]`), tools.ReasonInvalidArguments},
		{"malformed JSON", knowledge.ToolSearch, json.RawMessage(`{"query":`), tools.ReasonInvalidArguments},
		{"a number as a string", knowledge.ToolSearch, map[string]any{"query": 5}, tools.ReasonInvalidArguments},
		{"top_k too large", knowledge.ToolSearch, map[string]any{"query": "x", "top_k": 51}, tools.ReasonInvalidArguments},
		{"top_k zero", knowledge.ToolSearch, map[string]any{"query": "x", "top_k": 0}, tools.ReasonInvalidArguments},
		{"an empty query", knowledge.ToolSearch, map[string]any{"query": "  "}, tools.ReasonInvalidArguments},
		{"an empty name", knowledge.ToolCreateCollection, map[string]any{"name": " "}, tools.ReasonInvalidArguments},
		{"a name with a control character", knowledge.ToolCreateCollection, map[string]any{"name": "a\u0007b"}, tools.ReasonInvalidArguments},
		{"a name too long", knowledge.ToolCreateCollection, map[string]any{"name": strings.Repeat("n", 201)}, tools.ReasonInvalidArguments},
		{"no job id", knowledge.ToolJobStatus, map[string]any{}, tools.ReasonInvalidArguments},
		{"an unknown job", knowledge.ToolJobStatus, map[string]any{"job_id": "nope"}, knowledge.CodeNotFound},
		{"no question", knowledge.ToolQueryGraphLocal, map[string]any{"collection_id": coll}, tools.ReasonInvalidArguments},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := callErr(t, e.p, "acme", c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			r.refused(t, c.code)
		})
	}
	e.ingest("acme", coll, "First.", nil)
	e.ingest("acme", coll, "Second.", nil)
	e.call(e.p, "acme", knowledge.ToolIngest, map[string]any{"content": "Third.", "metadata": map[string]any{"collection_id": coll}}).
		refused(t, knowledge.CodeLimit)
	e.runOnce(e.p)
	e.ingest("acme", coll, "Third.", nil) // room once the others are indexed
}

// The tool list: names, scopes, schemas that compile and read-only hints
// on the reads, so the classifier keeps every knowledge call read-class.
func TestTools(t *testing.T) {
	p := knowledge.New(nil, nil, nil)
	ts, err := p.Tools(context.Background(), &toolgw.Caller{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	writes := map[string]bool{knowledge.ToolCreateCollection: true, knowledge.ToolDeleteCollection: true,
		knowledge.ToolIngest: true, knowledge.ToolBuildGraph: true}
	if len(ts) != 10 {
		t.Errorf("%d tools, want 10", len(ts))
	}
	c := jsonschema.NewCompiler()
	for _, tl := range ts {
		if !tools.ValidName(tl.Name) || tools.Server(tl.Name) != tools.ServerKnowledge || tl.Description == "" {
			t.Errorf("tool %q", tl.Name)
		}
		want := knowledge.ScopeRead
		if writes[tl.Name] {
			want = knowledge.ScopeWrite
		}
		if len(tl.Scopes) != 1 || tl.Scopes[0] != want {
			t.Errorf("%s needs %v, want %s", tl.Name, tl.Scopes, want)
		}
		if ro := tl.Annotations != nil && tl.Annotations.ReadOnly != nil && *tl.Annotations.ReadOnly; ro == writes[tl.Name] {
			t.Errorf("%s: read-only hint %v", tl.Name, ro)
		}
		if tools.ActionClass(tl.Name, tl.Annotations) != tools.ClassRead {
			t.Errorf("%s is write-class", tl.Name)
		}
		schema, err := jsonschema.UnmarshalJSON(strings.NewReader(string(tl.InputSchema)))
		if err != nil {
			t.Fatalf("%s: schema: %v", tl.Name, err)
		}
		url := "mem:///" + tl.Name + ".json"
		if err := c.AddResource(url, schema); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile(url); err != nil {
			t.Errorf("%s: schema does not compile: %v", tl.Name, err)
		}
		got, ok, err := p.Find(context.Background(), nil, tl.Name)
		if err != nil || !ok || got.Name != tl.Name {
			t.Errorf("Find(%s) = %v, %v, %v", tl.Name, got, ok, err)
		}
	}
	if _, ok, _ := p.Find(context.Background(), nil, "novaos.knowledge.query"); ok {
		t.Error("Find found a tool that is not there")
	}
}

// Without its stores the service says so on every call.
func TestDisabled(t *testing.T) {
	p := knowledge.New(nil, memoryStore(t), nil)
	_, err := callErr(t, p, "acme", knowledge.ToolSearch, map[string]any{"query": "x"})
	var te *toolgw.Error
	if !errors.As(err, &te) || te.Reason != tools.ReasonServiceDisabled {
		t.Fatalf("a call without a knowledge store: %v", err)
	}
	if _, err := p.RunOnce(context.Background()); err == nil {
		t.Error("RunOnce without a store did not fail")
	}
}

// brokenStore is a knowledge store whose every call fails with detail the
// caller must not see.
type brokenStore struct{ tools.KnowledgeStore }

var errBroken = errors.New(`pq: relation "knowledge_jobs" does not exist at 10.1.2.3`)

func (brokenStore) Collection(context.Context, string, string) (tools.Collection, error) {
	return tools.Collection{}, errBroken
}

func (brokenStore) ListCollections(context.Context, string, string, int) ([]tools.Collection, error) {
	return nil, errBroken
}

func TestStoreUnavailable(t *testing.T) {
	p := knowledge.New(brokenStore{tools.NewMemKnowledgeStore()}, memoryStore(t), nil)
	for _, args := range []map[string]any{{"query": "x"}, {"query": "x", "collection_id": "c"}} {
		_, err := callErr(t, p, "acme", knowledge.ToolSearch, args)
		var te *toolgw.Error
		if !errors.As(err, &te) || te.Reason != tools.ReasonUnavailable || strings.Contains(te.Error(), "10.1.2.3") {
			t.Errorf("a call over a failing store: %v", err)
		}
	}
}

// blockingStore stands for a worker that dies mid-job: after `after`
// chunks, a Put blocks until the worker's context ends.
type blockingStore struct {
	memory.Store
	mu      sync.Mutex
	puts    int
	after   int
	blocked chan struct{}
}

func (s *blockingStore) Put(ctx context.Context, tenant string, m *memory.Memory, key memory.Key) (memory.WriteResult, bool, error) {
	s.mu.Lock()
	s.puts++
	block := s.puts > s.after
	s.mu.Unlock()
	if block {
		select {
		case s.blocked <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return memory.WriteResult{}, false, ctx.Err()
	}
	return s.Store.Put(ctx, tenant, m, key)
}

// A worker dies mid-job; a second worker takes the job over once its
// lease lapses, keeps the chunks written, and completes it.
func TestCrashResume(t *testing.T) {
	e := newEnv(t, nil)
	opts := knowledge.Options{IndexConcurrency: 1, Chunks: knowledge.ChunkOptions{MaxBytes: 60}}
	blocking := &blockingStore{Store: e.ms, after: 5, blocked: make(chan struct{}, 1)}
	dying := knowledge.New(e.ks, blocking, &knowledge.Options{Now: e.clock.Now, WorkerID: "dying", IndexConcurrency: 1, Chunks: opts.Chunks})
	opts.WorkerID = "survivor"
	survivor := e.provider(&opts)

	coll := e.createCollection("acme", "docs")
	job := e.ingest("acme", coll, handbook, nil).str("job_id")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = dying.RunOnce(ctx) // it is killed: its error says so
	}()
	select {
	case <-blocking.blocked:
	case <-time.After(time.Minute):
		t.Fatal("the dying worker never got to its sixth chunk")
	}
	cancel() // the worker dies
	<-done
	if st := e.job("acme", job); st.str("status") != "running" || st.data["attempts"] != float64(1) {
		t.Fatalf("the job after its worker died: %s", st.raw)
	}
	if n := e.partitionSize("acme", coll); n != 5 {
		t.Fatalf("%d chunks written before the crash, want 5", n)
	}
	if r := e.runOnce(survivor); r.Jobs != 0 {
		t.Fatalf("the survivor took a job whose lease holds: %+v", r)
	}
	e.clock.advance(knowledge.DefaultJobLease)
	if r := e.runOnce(survivor); r.Jobs != 1 {
		t.Fatalf("the survivor did not take the job over: %+v", r)
	}
	st := e.job("acme", job)
	if st.str("status") != "completed" || st.data["attempts"] != float64(2) {
		t.Fatalf("the job taken over: %s", st.raw)
	}
	want := len(knowledge.Split(knowledge.Normalize(handbook), opts.Chunks))
	if n := e.partitionSize("acme", coll); n != want {
		t.Errorf("%d chunks stored, want %d: none twice, none missing", n, want)
	}
	res := e.search("acme", map[string]any{"query": "premium economy flights", "collection_id": coll})
	if len(res) == 0 || !strings.Contains(res[0].Text, "premium") {
		t.Errorf("search after the takeover: %+v", res)
	}
}

// notifyingStore tells the test of every job a worker finishes.
type notifyingStore struct {
	tools.KnowledgeStore
	finished chan tools.Job
}

func (s *notifyingStore) FinishJob(ctx context.Context, tenant, id, owner string, attempt int, o tools.JobOutcome) (tools.Job, error) {
	j, err := s.KnowledgeStore.FinishJob(ctx, tenant, id, owner, attempt, o)
	if err == nil {
		s.finished <- j
	}
	return j, err
}

// Run picks an ingest up as soon as the call queued it, and stops with
// its context.
func TestRun(t *testing.T) {
	ks := &notifyingStore{KnowledgeStore: tools.NewMemKnowledgeStore(), finished: make(chan tools.Job, 10)}
	p := knowledge.New(ks, memoryStore(t), &knowledge.Options{PollEvery: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		p.Run(ctx)
	}()
	r, err := callErr(t, p, "acme", knowledge.ToolIngest, map[string]any{"content": handbook})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case j := <-ks.finished:
		if j.ID != r.str("job_id") || j.Status != tools.JobCompleted {
			t.Errorf("finished %s as %s", j.ID, j.Status)
		}
	case <-time.After(time.Minute):
		t.Fatal("the ingest was not indexed within a minute of a wake-up")
	}
	cancel()
	<-stopped
}

func FuzzCall(f *testing.F) {
	for _, s := range []string{`{}`, `{"query":"x"}`, `{"content":"a. b.","metadata":{"collection":"c","filename":"f"}}`,
		`{"name":"n","description":"d"}`, `{"question":"Who?","collection_id":"c"}`, `{"top_k":1e400}`, `[`, `null`,
		`{"metadata":{"collection_id":{"x":1}}}`} {
		f.Add(s, uint8(0))
	}
	e := newEnv(f, nil)
	names := []string{knowledge.ToolCreateCollection, knowledge.ToolListCollections, knowledge.ToolDeleteCollection,
		knowledge.ToolIngest, knowledge.ToolJobStatus, knowledge.ToolSearch, knowledge.ToolBuildGraph, knowledge.ToolGraphStatus,
		knowledge.ToolQueryGraphLocal, knowledge.ToolQueryGraphGlobal}
	f.Fuzz(func(t *testing.T, args string, which uint8) {
		name := names[int(which)%len(names)]
		def, _, _ := e.p.Find(context.Background(), nil, name)
		res, err := e.p.Call(context.Background(), &toolgw.Request{Caller: &toolgw.Caller{Tenant: "acme"}, Tool: def,
			Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s(%q): %v", name, args, err)
		}
		if len(res.Content) != 1 || !json.Valid([]byte(res.Content[0].(*mcp.TextContent).Text)) {
			t.Fatalf("%s(%q): a result that is not one JSON text", name, args)
		}
	})
}

// A graph that cannot be built fails with its reason, and questions stay
// degraded.
func TestGraphFailed(t *testing.T) {
	e := newEnv(t, &knowledge.Options{MaxGraphChunks: 2, Chunks: knowledge.ChunkOptions{MaxBytes: 100}})
	coll := e.createCollection("acme", "big")
	e.ingest("acme", coll, curie, nil)
	e.runOnce(e.p)
	e.call(e.p, "acme", knowledge.ToolBuildGraph, map[string]any{"collection_id": coll}).ok(t)
	if r := e.runOnce(e.p); r.Graphs != 1 {
		t.Fatalf("RunOnce = %+v", r)
	}
	st := e.call(e.p, "acme", knowledge.ToolGraphStatus, map[string]any{"collection_id": coll}).ok(t)
	if st.str("graph_status") != "failed" || !strings.Contains(st.str("graph_error"), "at most 2") || st.data["graph_entity_count"] != float64(0) {
		t.Fatalf("graph_status = %s", st.raw)
	}
	var a answerOut
	e.call(e.p, "acme", knowledge.ToolQueryGraphGlobal, map[string]any{"question": "Who discovered radium?", "collection_id": coll}).ok(t).into(t, &a)
	if !a.Degraded || a.Metadata.GraphStatus != "failed" || !strings.Contains(a.Message, "failed") {
		t.Errorf("a question over a failed graph: %+v", a)
	}
}
