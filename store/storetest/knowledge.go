package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/tools"
)

// TestKnowledgeStore runs the tools.KnowledgeStore contract. newStore must
// return a new, empty store each time it is called.
func TestKnowledgeStore(t *testing.T, newStore func(t *testing.T) tools.KnowledgeStore) {
	t.Run("CollectionCreateGet", func(t *testing.T) { testKnCollectionCreate(t, newStore(t)) })
	t.Run("CollectionExistsAndLimit", func(t *testing.T) { testKnCollectionLimit(t, newStore(t)) })
	t.Run("ListCollections", func(t *testing.T) { testKnListCollections(t, newStore(t)) })
	t.Run("DeleteCollection", func(t *testing.T) { testKnDeleteCollection(t, newStore(t)) })
	t.Run("Purge", func(t *testing.T) { testKnPurge(t, newStore(t)) })
	t.Run("JobRoundTrip", func(t *testing.T) { testKnJobRoundTrip(t, newStore(t)) })
	t.Run("JobLimit", func(t *testing.T) { testKnJobLimit(t, newStore(t)) })
	t.Run("ClaimJobs", func(t *testing.T) { testKnClaimJobs(t, newStore(t)) })
	t.Run("LostClaim", func(t *testing.T) { testKnLostClaim(t, newStore(t)) })
	t.Run("FinishJob", func(t *testing.T) { testKnFinishJob(t, newStore(t)) })
	t.Run("Duplicates", func(t *testing.T) { testKnDuplicates(t, newStore(t)) })
	t.Run("SweepJobs", func(t *testing.T) { testKnSweepJobs(t, newStore(t)) })
	t.Run("Documents", func(t *testing.T) { testKnDocuments(t, newStore(t)) })
	t.Run("Graph", func(t *testing.T) { testKnGraph(t, newStore(t)) })
	t.Run("GraphRequestedAgain", func(t *testing.T) { testKnGraphAgain(t, newStore(t)) })
	t.Run("DeleteWhileWriting", func(t *testing.T) { testKnDeleteRace(t, newStore(t)) })
	t.Run("ClaimJobsConcurrent", func(t *testing.T) {
		s := newStore(t)
		testKnClaimConcurrent(t, func(int) tools.KnowledgeStore { return s })
	})
	t.Run("ClaimGraphsConcurrent", func(t *testing.T) {
		s := newStore(t)
		testKnGraphClaimConcurrent(t, func(int) tools.KnowledgeStore { return s })
	})
}

// TestKnowledgeReplicas runs the part of the contract that spans several
// handles on one database: claims of jobs and graphs stay exclusive
// across them. newReplica returns a new handle on the same database at
// every call.
func TestKnowledgeReplicas(t *testing.T, newDatabase func(t *testing.T) (newReplica func() tools.KnowledgeStore)) {
	t.Run("ClaimJobsConcurrent", func(t *testing.T) {
		newReplica := newDatabase(t)
		rs := []tools.KnowledgeStore{newReplica(), newReplica(), newReplica()}
		testKnClaimConcurrent(t, func(i int) tools.KnowledgeStore { return rs[i%len(rs)] })
	})
	t.Run("ClaimGraphsConcurrent", func(t *testing.T) {
		newReplica := newDatabase(t)
		rs := []tools.KnowledgeStore{newReplica(), newReplica(), newReplica()}
		testKnGraphClaimConcurrent(t, func(i int) tools.KnowledgeStore { return rs[i%len(rs)] })
	})
}

// TestKnowledgeReopen checks durability across restarts: a collection, a
// pending job, a completed job with its document and a built graph,
// written through one handle, read back unchanged through a new handle,
// and a claim made before the restart still holds. open must return a
// fresh handle on the same database at every call, and the function that
// closes it.
func TestKnowledgeReopen(t *testing.T, open func(t *testing.T) (tools.KnowledgeStore, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	mustCollection(t, s, "acme", knCollection("c1", "docs"))
	pending := knJob("c1", "j1", "pending content")
	done := knJob("c1", "j2", "done content")
	for _, j := range []tools.Job{pending, done} {
		if err := s.CreateJob(ctx, "acme", j, 10); err != nil {
			t.Fatal(err)
		}
	}
	claimed := mustClaim(t, s, "w1", knAt(time.Minute), knAt(2*time.Minute), 10, "j1", "j2")
	doc := knDocument("d2", "j2", done.SHA256)
	finished, err := s.FinishJob(ctx, "acme", "j2", "w1", claimed[1].Attempts,
		tools.JobOutcome{Status: tools.JobCompleted, Document: &doc, Now: knAt(90 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestGraph(ctx, "acme", "c1", knAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	g := mustClaimGraphs(t, s, "w1", knAt(time.Hour), knAt(2*time.Hour), 1)[0]
	data := []byte(`{"entities":["\u0000 kept as given"]}`)
	if err := s.FinishGraph(ctx, "acme", "c1", "w1", g.Graph.Attempts, tools.GraphResult{Status: tools.GraphCompleted,
		Entities: 1, Data: data, Now: knAt(time.Hour + time.Second)}); err != nil {
		t.Fatal(err)
	}
	coll, err := s.Collection(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	closeDB()

	for i := range 2 {
		s, closeDB := open(t)
		got, err := s.Collection(ctx, "acme", "c1")
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if d := gocmp.Diff(coll, got); d != "" {
			t.Errorf("reopen %d: collection (-want +got):\n%s", i, d)
		}
		for _, want := range []tools.Job{claimed[0], finished} {
			got, err := s.Job(ctx, "acme", want.ID)
			if err != nil {
				t.Fatalf("reopen %d: job %s: %v", i, want.ID, err)
			}
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("reopen %d: job %s (-want +got):\n%s", i, want.ID, d)
			}
		}
		if err := s.ExtendJob(ctx, "acme", "j1", "w1", claimed[0].Attempts, claimed[0].LeaseUntil); err != nil {
			t.Errorf("reopen %d: the claim made before the restart: %v", i, err)
		}
		gotDoc, err := s.DocumentByHash(ctx, "acme", "c1", done.SHA256)
		if err != nil || gotDoc.ID != "d2" {
			t.Errorf("reopen %d: DocumentByHash = %s, %v", i, gotDoc.ID, err)
		}
		gotData, err := s.GraphData(ctx, "acme", "c1")
		if err != nil || string(gotData) != string(data) {
			t.Errorf("reopen %d: GraphData = %q, %v", i, gotData, err)
		}
		closeDB()
	}
}

// knT0 is in a zone other than UTC and carries nanoseconds: stores give
// times back in UTC, to the microsecond.
var knT0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3*3600))

func knAt(d time.Duration) time.Time { return knT0.Add(d) }

// knStored is t as a store gives it back.
func knStored(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

func knCollection(id, name string) tools.Collection {
	return tools.Collection{ID: id, Name: name, Description: "about " + name, CreatedAt: knT0}
}

func knJob(collection, id, content string) tools.Job {
	return tools.Job{ID: id, CollectionID: collection, Status: tools.JobPending, Content: content,
		SHA256: knSHA(content), Filename: id + ".txt",
		SourceURL: "https://example.com/" + id, Metadata: []byte(`{"b": 1, "a":"x"}`), CreatedAt: knT0, UpdatedAt: knT0}
}

func knSHA(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

func knDocument(id, job, sha string) tools.Document {
	return tools.Document{ID: id, JobID: job, SHA256: sha, Filename: id + ".md", SourceURL: "https://example.com/" + id,
		Metadata: []byte(`{"z":[1, 2]}`), Bytes: 1234, Chunks: 3, CreatedAt: knAt(time.Second)}
}

func mustCollection(t *testing.T, s tools.KnowledgeStore, tenant string, c tools.Collection) {
	t.Helper()
	if err := s.CreateCollection(ctxT(t), tenant, c, 100); err != nil {
		t.Fatalf("CreateCollection %s: %v", c.ID, err)
	}
}

func mustJob(t *testing.T, s tools.KnowledgeStore, tenant string, j tools.Job) {
	t.Helper()
	if err := s.CreateJob(ctxT(t), tenant, j, 1000); err != nil {
		t.Fatalf("CreateJob %s: %v", j.ID, err)
	}
}

func jobIDs(js []tools.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.ID
	}
	return out
}

func collectionIDs(cs []tools.Collection) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// mustClaim claims jobs and checks that they are the ones listed, in
// order.
func mustClaim(t *testing.T, s tools.KnowledgeStore, owner string, now, until time.Time, limit int, want ...string) []tools.Job {
	t.Helper()
	got, err := s.ClaimJobs(ctxT(t), owner, now, until, limit)
	if err != nil {
		t.Fatalf("ClaimJobs(%s): %v", owner, err)
	}
	if ids := jobIDs(got); !slices.Equal(ids, want) && !(len(ids) == 0 && len(want) == 0) {
		t.Fatalf("ClaimJobs(%s) = %v, want %v", owner, ids, want)
	}
	return got
}

func mustClaimGraphs(t *testing.T, s tools.KnowledgeStore, owner string, now, until time.Time, want int) []tools.Collection {
	t.Helper()
	got, err := s.ClaimGraphs(ctxT(t), owner, now, until, 100)
	if err != nil {
		t.Fatalf("ClaimGraphs(%s): %v", owner, err)
	}
	if len(got) != want {
		t.Fatalf("ClaimGraphs(%s) = %v, want %d", owner, collectionIDs(got), want)
	}
	return got
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

func testKnCollectionCreate(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	c := knCollection("c1", "Handbook")
	mustCollection(t, s, "acme", c)
	want := tools.Collection{Tenant: "acme", ID: "c1", Name: "Handbook", Description: "about Handbook",
		CreatedAt: knStored(knT0), Graph: tools.Graph{Status: tools.GraphNone}}
	got, err := s.Collection(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("Collection (-want +got):\n%s", d)
	}
	got, err = s.CollectionByName(ctx, "acme", "Handbook")
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("CollectionByName (-want +got):\n%s", d)
	}
	_, err = s.Collection(ctx, "other", "c1")
	wantErr(t, "another tenant's Collection", err, tools.ErrKnowledgeNotFound)
	_, err = s.CollectionByName(ctx, "other", "Handbook")
	wantErr(t, "another tenant's CollectionByName", err, tools.ErrKnowledgeNotFound)
	_, err = s.CollectionByName(ctx, "acme", "handbook")
	wantErr(t, "a name in another case", err, tools.ErrKnowledgeNotFound)
	_, err = s.Collection(ctx, "acme", "nope")
	wantErr(t, "an unknown id", err, tools.ErrKnowledgeNotFound)
}

func testKnCollectionLimit(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	if err := s.CreateCollection(ctx, "acme", knCollection("c1", "a"), 2); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a taken name", s.CreateCollection(ctx, "acme", knCollection("c2", "a"), 2), tools.ErrKnowledgeExists)
	wantErr(t, "a taken id", s.CreateCollection(ctx, "acme", knCollection("c1", "b"), 2), tools.ErrKnowledgeExists)
	if err := s.CreateCollection(ctx, "other", knCollection("o1", "a"), 2); err != nil {
		t.Errorf("another tenant's name: %v", err)
	}
	if err := s.CreateCollection(ctx, "acme", knCollection("c2", "b"), 2); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "past the limit", s.CreateCollection(ctx, "acme", knCollection("c3", "c"), 2), tools.ErrKnowledgeLimit)
	if _, err := s.DeleteCollection(ctx, "acme", "c1", knAt(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// A deleted collection counts no more, and its name is free.
	if err := s.CreateCollection(ctx, "acme", knCollection("c3", "a"), 2); err != nil {
		t.Errorf("the name of a deleted collection: %v", err)
	}
	got, err := s.CollectionByName(ctx, "acme", "a")
	if err != nil || got.ID != "c3" {
		t.Errorf("CollectionByName after the name was reused = %s, %v; want c3", got.ID, err)
	}
	// Many creators racing for the last places: exactly the limit wins.
	const n = 12
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = s.CreateCollection(ctx, "race", knCollection(fmt.Sprint("r", i), fmt.Sprint("n", i)), 5)
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, tools.ErrKnowledgeLimit):
			t.Errorf("a racing create: %v", err)
		}
	}
	if won != 5 {
		t.Errorf("%d racing creates won, want the limit 5", won)
	}
}

func testKnListCollections(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	for i, name := range []string{"delta", "alpha", "Zulu", "charlie", "bravo"} {
		mustCollection(t, s, "acme", knCollection(fmt.Sprint("c", i), name))
	}
	mustCollection(t, s, "other", knCollection("o1", "aardvark"))
	if _, err := s.DeleteCollection(ctx, "acme", "c3", knT0); err != nil { // charlie
		t.Fatal(err)
	}
	names := func(after string, limit int) []string {
		cs, err := s.ListCollections(ctx, "acme", after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			if c.Tenant != "acme" {
				t.Errorf("collection %s of tenant %q", c.ID, c.Tenant)
			}
			out = append(out, c.Name)
		}
		return out
	}
	for _, c := range []struct {
		after string
		limit int
		want  []string
	}{
		{"", 0, []string{"Zulu", "alpha", "bravo", "delta"}},
		{"", 2, []string{"Zulu", "alpha"}},
		{"alpha", 2, []string{"bravo", "delta"}},
		{"delta", 10, nil},
	} {
		if got := names(c.after, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("ListCollections(after %q, limit %d) = %v, want %v", c.after, c.limit, got, c.want)
		}
	}
}

func testKnDeleteCollection(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "acme", knCollection("c2", "b"))
	for _, j := range []tools.Job{knJob("c1", "j1", "one"), knJob("c1", "j2", "two"), knJob("c1", "j3", "three"), knJob("c2", "k1", "four")} {
		mustJob(t, s, "acme", j)
	}
	claimed := mustClaim(t, s, "w", knAt(time.Second), knAt(time.Minute), 1, "j1")
	done := mustClaim(t, s, "w", knAt(time.Second), knAt(time.Minute), 1, "j2")
	if _, err := s.FinishJob(ctx, "acme", "j2", "w", done[0].Attempts, tools.JobOutcome{Status: tools.JobFailed, Error: "bad", Now: knAt(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	_, err := s.DeleteCollection(ctx, "other", "c1", knAt(3*time.Second))
	wantErr(t, "another tenant's delete", err, tools.ErrKnowledgeNotFound)
	n, err := s.DeleteCollection(ctx, "acme", "c1", knAt(3*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("DeleteCollection = %d, %v; want 2 jobs cancelled (one running, one pending)", n, err)
	}
	for id, want := range map[string]tools.JobStatus{"j1": tools.JobCancelled, "j2": tools.JobFailed, "j3": tools.JobCancelled, "k1": tools.JobPending} {
		j, err := s.Job(ctx, "acme", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != want {
			t.Errorf("job %s is %s, want %s", id, j.Status, want)
		}
		if j.Status == tools.JobCancelled && (j.Content != "" || j.LeaseOwner != "" || !j.UpdatedAt.Equal(knStored(knAt(3*time.Second)))) {
			t.Errorf("cancelled job %s keeps content %q, lease %q, or was updated at %v", id, j.Content, j.LeaseOwner, j.UpdatedAt)
		}
	}
	_, err = s.Collection(ctx, "acme", "c1")
	wantErr(t, "Collection of a deleted one", err, tools.ErrKnowledgeNotFound)
	_, err = s.CollectionByName(ctx, "acme", "a")
	wantErr(t, "CollectionByName of a deleted one", err, tools.ErrKnowledgeNotFound)
	_, err = s.DeleteCollection(ctx, "acme", "c1", knAt(4*time.Second))
	wantErr(t, "deleting twice", err, tools.ErrKnowledgeNotFound)
	// The worker that held j1 cannot finish it, and learns it was cancelled.
	got, err := s.FinishJob(ctx, "acme", "j1", "w", claimed[0].Attempts, tools.JobOutcome{Status: tools.JobCompleted, DuplicateOf: "x", Now: knAt(5 * time.Second)})
	wantErr(t, "finishing a cancelled job", err, tools.ErrKnowledgeConflict)
	if got.Status != tools.JobCancelled {
		t.Errorf("FinishJob of a cancelled job returned it as %s", got.Status)
	}
	wantErr(t, "extending a cancelled job", s.ExtendJob(ctx, "acme", "j1", "w", claimed[0].Attempts, knAt(time.Hour)), tools.ErrKnowledgeConflict)
	mustClaim(t, s, "w", knAt(time.Hour), knAt(2*time.Hour), 10, "k1")
	wantErr(t, "a job into a deleted collection", s.CreateJob(ctx, "acme", knJob("c1", "j9", "nine"), 100), tools.ErrKnowledgeNotFound)
	_, err = s.RequestGraph(ctx, "acme", "c1", knAt(time.Hour))
	wantErr(t, "a graph of a deleted collection", err, tools.ErrKnowledgeNotFound)
}

func testKnPurge(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "acme", knCollection("c2", "b"))
	mustCollection(t, s, "other", knCollection("c1", "a"))
	j := knJob("c1", "j1", "one")
	mustJob(t, s, "acme", j)
	cl := mustClaim(t, s, "w", knT0, knAt(time.Minute), 1, "j1")
	doc := knDocument("d1", "j1", j.SHA256)
	if _, err := s.FinishJob(ctx, "acme", "j1", "w", cl[0].Attempts, tools.JobOutcome{Status: tools.JobCompleted, Document: &doc, Now: knT0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteCollection(ctx, "acme", "c1", knAt(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteCollection(ctx, "other", "c1", knAt(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	due, err := s.PendingPurges(ctx, knAt(90*time.Second), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(due) != 1 || due[0].Tenant != "acme" || due[0].ID != "c1" || !due[0].DeletedAt.Equal(knStored(knAt(time.Minute))) {
		t.Fatalf("PendingPurges = %+v, want acme's c1 deleted at %v", due, knStored(knAt(time.Minute)))
	}
	if due, _ := s.PendingPurges(ctx, knAt(time.Hour), 10); len(due) != 2 || due[0].Tenant != "acme" || due[1].Tenant != "other" {
		t.Fatalf("PendingPurges later = %+v, want acme's then other's", due)
	}
	wantErr(t, "purging a live collection", s.FinishPurge(ctx, "acme", "c2"), tools.ErrKnowledgeNotFound)
	if err := s.FinishPurge(ctx, "acme", "c1"); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.PendingPurges(ctx, knAt(time.Hour), 10); len(due) != 1 || due[0].Tenant != "other" {
		t.Fatalf("PendingPurges after a purge = %+v, want other's only", due)
	}
	if docs, err := s.Documents(ctx, "acme", "c1", []string{"d1"}); err != nil || len(docs) != 0 {
		t.Errorf("Documents of a purged collection = %v, %v", docs, err)
	}
	_, err = s.DocumentByHash(ctx, "acme", "c1", j.SHA256)
	wantErr(t, "DocumentByHash of a purged collection", err, tools.ErrKnowledgeNotFound)
	if got, err := s.Job(ctx, "acme", "j1"); err != nil || got.Status != tools.JobCompleted || got.DocumentID != "d1" {
		t.Errorf("a job of a purged collection = %+v, %v; want it readable, completed", got, err)
	}
	wantErr(t, "purging twice", s.FinishPurge(ctx, "acme", "c1"), tools.ErrKnowledgeNotFound)
}

func testKnJobRoundTrip(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	j := knJob("c1", "j1", "Héllo, wörld\n\nsecond paragraph")
	j.NotBefore = knAt(time.Second)
	mustJob(t, s, "acme", j)
	want := j
	want.Tenant, want.NotBefore, want.CreatedAt, want.UpdatedAt = "acme", knStored(j.NotBefore), knStored(knT0), knStored(knT0)
	got, err := s.Job(ctx, "acme", "j1")
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("Job (-want +got):\n%s", d)
	}
	got.Metadata[0] = 'X'
	if again, _ := s.Job(ctx, "acme", "j1"); string(again.Metadata) != string(j.Metadata) {
		t.Errorf("a returned job shares its metadata with the store: %q", again.Metadata)
	}
	_, err = s.Job(ctx, "other", "j1")
	wantErr(t, "another tenant's job", err, tools.ErrKnowledgeNotFound)
	wantErr(t, "a taken id", s.CreateJob(ctx, "acme", j, 100), tools.ErrKnowledgeExists)
	wantErr(t, "a job of an unknown collection", s.CreateJob(ctx, "acme", knJob("nope", "j2", "x"), 100), tools.ErrKnowledgeNotFound)
	wantErr(t, "a job of another tenant's collection", s.CreateJob(ctx, "other", knJob("c1", "j2", "x"), 100), tools.ErrKnowledgeNotFound)
	bare := tools.Job{ID: "j3", CollectionID: "c1", Status: tools.JobPending, Content: "x", SHA256: "00", CreatedAt: knT0, UpdatedAt: knT0}
	mustJob(t, s, "acme", bare)
	got, err = s.Job(ctx, "acme", "j3")
	if err != nil {
		t.Fatal(err)
	}
	bare.Tenant, bare.CreatedAt, bare.UpdatedAt = "acme", knStored(knT0), knStored(knT0)
	if d := gocmp.Diff(bare, got); d != "" {
		t.Errorf("a job with no metadata (-want +got):\n%s", d)
	}
}

func testKnJobLimit(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "other", knCollection("c1", "a"))
	for i := range 2 {
		if err := s.CreateJob(ctx, "acme", knJob("c1", fmt.Sprint("j", i), "x"), 2); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, "past the limit", s.CreateJob(ctx, "acme", knJob("c1", "j2", "x"), 2), tools.ErrKnowledgeLimit)
	// A duplicate found at once is no work: the limit does not apply.
	dup := knJob("c1", "d", "x")
	dup.Status, dup.Content, dup.DocumentID, dup.DuplicateOf = tools.JobCompleted, "", "doc", "doc"
	if err := s.CreateJob(ctx, "acme", dup, 2); err != nil {
		t.Errorf("a completed duplicate past the limit: %v", err)
	}
	if err := s.CreateJob(ctx, "other", knJob("c1", "j0", "x"), 2); err != nil {
		t.Errorf("another tenant's job: %v", err)
	}
	cl := mustClaim(t, s, "w", knT0, knAt(time.Minute), 1, "j0")
	wantErr(t, "a running job still counts", s.CreateJob(ctx, "acme", knJob("c1", "j2", "x"), 2), tools.ErrKnowledgeLimit)
	if _, err := s.FinishJob(ctx, cl[0].Tenant, "j0", "w", cl[0].Attempts, tools.JobOutcome{Status: tools.JobDeadLetter, Error: "e", Now: knT0}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, "acme", knJob("c1", "j2", "x"), 2); err != nil {
		t.Errorf("a job once another ended: %v", err)
	}
}

func testKnClaimJobs(t *testing.T, s tools.KnowledgeStore) {
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "other", knCollection("c9", "a"))
	for i, id := range []string{"j3", "j1", "j2"} {
		j := knJob("c1", id, "x")
		j.CreatedAt = knAt(time.Duration(i) * time.Second)
		mustJob(t, s, "acme", j)
	}
	late := knJob("c9", "o1", "x")
	late.CreatedAt, late.NotBefore = knAt(-time.Hour), knAt(time.Hour)
	mustJob(t, s, "other", late)
	got := mustClaim(t, s, "w1", knAt(time.Minute), knAt(2*time.Minute), 2, "j3", "j1")
	for _, j := range got {
		if j.Tenant != "acme" || j.Status != tools.JobRunning || j.LeaseOwner != "w1" || j.Attempts != 1 ||
			!j.LeaseUntil.Equal(knStored(knAt(2*time.Minute))) || j.Content != "x" {
			t.Errorf("claimed %+v", j)
		}
	}
	mustClaim(t, s, "w2", knAt(time.Minute), knAt(2*time.Minute), 10, "j2")
	mustClaim(t, s, "w2", knAt(time.Minute), knAt(2*time.Minute), 10)
	// The leases lapse: another worker takes the jobs, each attempt counted.
	got = mustClaim(t, s, "w3", knAt(2*time.Minute), knAt(3*time.Minute), 10, "j3", "j1", "j2")
	for _, j := range got {
		if j.Attempts != 2 || j.LeaseOwner != "w3" {
			t.Errorf("reclaimed %s: attempt %d by %s", j.ID, j.Attempts, j.LeaseOwner)
		}
	}
	// NotBefore holds a job back until then.
	got = mustClaim(t, s, "w4", knAt(time.Hour), knAt(2*time.Hour), 10, "o1", "j3", "j1", "j2")
	if got[0].Tenant != "other" {
		t.Errorf("a claim across tenants returned tenant %q", got[0].Tenant)
	}
}

func testKnLostClaim(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustJob(t, s, "acme", knJob("c1", "j1", "x"))
	first := mustClaim(t, s, "w1", knT0, knAt(time.Minute), 1, "j1")[0]
	if err := s.ExtendJob(ctx, "acme", "j1", "w1", first.Attempts, knAt(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "w2", knAt(90*time.Second), knAt(3*time.Minute), 1) // extended: not lapsed
	wantErr(t, "extending another's claim", s.ExtendJob(ctx, "acme", "j1", "w2", first.Attempts, knAt(time.Hour)), tools.ErrKnowledgeConflict)
	wantErr(t, "extending another attempt", s.ExtendJob(ctx, "acme", "j1", "w1", first.Attempts+1, knAt(time.Hour)), tools.ErrKnowledgeConflict)
	wantErr(t, "extending in another tenant", s.ExtendJob(ctx, "other", "j1", "w1", first.Attempts, knAt(time.Hour)), tools.ErrKnowledgeNotFound)
	second := mustClaim(t, s, "w1", knAt(2*time.Minute), knAt(4*time.Minute), 1, "j1")[0]
	// The first claim, by the same owner, is lost: attempts tell them apart.
	got, err := s.FinishJob(ctx, "acme", "j1", "w1", first.Attempts, tools.JobOutcome{Status: tools.JobFailed, Error: "stale", Now: knAt(3 * time.Minute)})
	wantErr(t, "finishing a lost claim", err, tools.ErrKnowledgeConflict)
	if got.Status != tools.JobRunning || got.Attempts != second.Attempts || got.Content != "x" {
		t.Errorf("a lost claim's finish changed the job: %+v", got)
	}
	if _, err := s.FinishJob(ctx, "acme", "j1", "w1", second.Attempts, tools.JobOutcome{Status: tools.JobFailed, Error: "e", Now: knAt(3 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	_, err = s.FinishJob(ctx, "acme", "j1", "w1", second.Attempts, tools.JobOutcome{Status: tools.JobFailed, Error: "again", Now: knAt(3 * time.Minute)})
	wantErr(t, "finishing twice", err, tools.ErrKnowledgeConflict)
	_, err = s.FinishJob(ctx, "acme", "nope", "w1", 1, tools.JobOutcome{Status: tools.JobFailed, Now: knT0})
	wantErr(t, "finishing an unknown job", err, tools.ErrKnowledgeNotFound)
}

func testKnFinishJob(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	for i, id := range []string{"retry", "failed", "dead", "done"} {
		j := knJob("c1", id, "content of "+id)
		j.CreatedAt = knAt(time.Duration(i) * time.Millisecond)
		mustJob(t, s, "acme", j)
	}
	cl := mustClaim(t, s, "w", knT0, knAt(time.Minute), 10, "retry", "failed", "dead", "done")
	at := map[string]int{}
	for _, j := range cl {
		at[j.ID] = j.Attempts
	}
	now := knAt(10 * time.Second)
	doc := knDocument("doc1", "done", cl[3].SHA256)
	for _, c := range []struct {
		id   string
		o    tools.JobOutcome
		want func(j *tools.Job)
	}{
		{"retry", tools.JobOutcome{Status: tools.JobPending, Error: "try later", NotBefore: knAt(time.Hour), Now: now}, func(j *tools.Job) {
			j.Status, j.Error, j.NotBefore = tools.JobPending, "try later", knStored(knAt(time.Hour))
		}},
		{"failed", tools.JobOutcome{Status: tools.JobFailed, Error: "refused", Now: now}, func(j *tools.Job) {
			j.Status, j.Error, j.Content = tools.JobFailed, "refused", ""
		}},
		{"dead", tools.JobOutcome{Status: tools.JobDeadLetter, Error: "gave up", Now: now}, func(j *tools.Job) {
			j.Status, j.Error, j.Content = tools.JobDeadLetter, "gave up", ""
		}},
		{"done", tools.JobOutcome{Status: tools.JobCompleted, Document: &doc, Now: now}, func(j *tools.Job) {
			j.Status, j.Content, j.DocumentID = tools.JobCompleted, "", "doc1"
		}},
	} {
		before, err := s.Job(ctx, "acme", c.id)
		if err != nil {
			t.Fatal(err)
		}
		want := before
		want.LeaseOwner, want.LeaseUntil, want.UpdatedAt = "", time.Time{}, knStored(now)
		c.want(&want)
		got, err := s.FinishJob(ctx, "acme", c.id, "w", at[c.id], c.o)
		if err != nil {
			t.Fatalf("FinishJob %s: %v", c.id, err)
		}
		if d := gocmp.Diff(want, got); d != "" {
			t.Errorf("FinishJob %s returned (-want +got):\n%s", c.id, d)
		}
		if got, _ := s.Job(ctx, "acme", c.id); gocmp.Diff(want, got) != "" {
			t.Errorf("job %s as stored (-want +got):\n%s", c.id, gocmp.Diff(want, got))
		}
	}
	// A retry waits for its NotBefore.
	mustClaim(t, s, "w", knAt(time.Hour-time.Second), knAt(2*time.Hour), 10)
	if got := mustClaim(t, s, "w", knAt(time.Hour), knAt(2*time.Hour), 10, "retry"); got[0].Attempts != 2 || got[0].Content != "content of retry" {
		t.Errorf("the retried job: %+v", got[0])
	}
	wantDoc := doc
	wantDoc.CollectionID, wantDoc.CreatedAt = "c1", knStored(doc.CreatedAt)
	gotDoc, err := s.DocumentByHash(ctx, "acme", "c1", doc.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if d := gocmp.Diff(wantDoc, gotDoc); d != "" {
		t.Errorf("the committed document (-want +got):\n%s", d)
	}
	c, err := s.Collection(ctx, "acme", "c1")
	if err != nil || c.Documents != 1 || c.Chunks != 3 {
		t.Errorf("the collection counts %d documents and %d chunks (%v), want 1 and 3", c.Documents, c.Chunks, err)
	}
	_, err = s.FinishJob(ctx, "acme", "retry", "w", 2, tools.JobOutcome{Status: tools.JobRunning, Now: now})
	if err == nil {
		t.Error("FinishJob accepted the outcome running")
	}
}

func testKnDuplicates(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "acme", knCollection("c2", "b"))
	a, b, other := knJob("c1", "a", "same"), knJob("c1", "b", "same"), knJob("c2", "c", "same")
	for _, j := range []tools.Job{a, b, other} {
		mustJob(t, s, "acme", j)
	}
	cl := mustClaim(t, s, "w", knT0, knAt(time.Minute), 10, "a", "b", "c")
	docA, docB, docC := knDocument("da", "a", a.SHA256), knDocument("db", "b", a.SHA256), knDocument("dc", "c", a.SHA256)
	finish := func(j tools.Job, d *tools.Document) tools.Job {
		t.Helper()
		got, err := s.FinishJob(ctx, "acme", j.ID, "w", j.Attempts, tools.JobOutcome{Status: tools.JobCompleted, Document: d, Now: knAt(time.Second)})
		if err != nil {
			t.Fatalf("FinishJob %s: %v", j.ID, err)
		}
		return got
	}
	if got := finish(cl[0], &docA); got.DocumentID != "da" || got.DuplicateOf != "" {
		t.Errorf("the first copy: document %q, duplicate of %q", got.DocumentID, got.DuplicateOf)
	}
	// Two jobs of one content raced past the check: the second commit
	// finds the first and completes as its duplicate.
	if got := finish(cl[1], &docB); got.DocumentID != "da" || got.DuplicateOf != "da" {
		t.Errorf("the second copy: document %q, duplicate of %q; want da for both", got.DocumentID, got.DuplicateOf)
	}
	if got := finish(cl[2], &docC); got.DocumentID != "dc" || got.DuplicateOf != "" {
		t.Errorf("the copy in another collection: document %q, duplicate of %q", got.DocumentID, got.DuplicateOf)
	}
	if docs, _ := s.Documents(ctx, "acme", "c1", []string{"da", "db"}); len(docs) != 1 || docs[0].ID != "da" {
		t.Errorf("Documents = %v, want da only", docs)
	}
	if c, _ := s.Collection(ctx, "acme", "c1"); c.Documents != 1 || c.Chunks != 3 {
		t.Errorf("a duplicate changed the counts: %d documents, %d chunks", c.Documents, c.Chunks)
	}
	_, err := s.DocumentByHash(ctx, "other", "c1", a.SHA256)
	wantErr(t, "another tenant's DocumentByHash", err, tools.ErrKnowledgeNotFound)
}

func testKnSweepJobs(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	for i, id := range []string{"old", "new", "open"} {
		j := knJob("c1", id, "x")
		j.CreatedAt = knAt(time.Duration(i) * time.Millisecond)
		mustJob(t, s, "acme", j)
	}
	cl := mustClaim(t, s, "w", knT0, knAt(time.Minute), 2, "old", "new")
	for i, j := range cl {
		if _, err := s.FinishJob(ctx, "acme", j.ID, "w", j.Attempts, tools.JobOutcome{Status: tools.JobFailed, Error: "e",
			Now: knAt(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.SweepJobs(ctx, knAt(30*time.Minute), 10)
	if err != nil || n != 1 {
		t.Fatalf("SweepJobs = %d, %v; want 1", n, err)
	}
	_, err = s.Job(ctx, "acme", "old")
	wantErr(t, "a swept job", err, tools.ErrKnowledgeNotFound)
	for _, id := range []string{"new", "open"} {
		if _, err := s.Job(ctx, "acme", id); err != nil {
			t.Errorf("job %s: %v", id, err)
		}
	}
	if n, _ := s.SweepJobs(ctx, knAt(100*time.Hour), 10); n != 1 {
		t.Errorf("SweepJobs later = %d, want 1 (a pending job is never swept)", n)
	}
}

func testKnDocuments(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "acme", knCollection("c2", "b"))
	mustCollection(t, s, "other", knCollection("c1", "a"))
	add := func(tenant, coll, id string) {
		t.Helper()
		j := knJob(coll, "j-"+id, "content "+id)
		mustJob(t, s, tenant, j)
		cl, err := s.ClaimJobs(ctx, "w", knAt(time.Hour), knAt(2*time.Hour), 1)
		if err != nil || len(cl) != 1 {
			t.Fatalf("ClaimJobs = %v, %v", jobIDs(cl), err)
		}
		d := knDocument(id, j.ID, j.SHA256)
		if _, err := s.FinishJob(ctx, tenant, j.ID, "w", cl[0].Attempts, tools.JobOutcome{Status: tools.JobCompleted, Document: &d, Now: knT0}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"d3", "d1", "d2"} {
		add("acme", "c1", id)
	}
	add("acme", "c2", "e1")
	add("other", "c1", "x1")
	docs, err := s.Documents(ctx, "acme", "c1", []string{"d2", "e1", "x1", "nope", "d1", "d2"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"d1", "d2"}) {
		t.Errorf("Documents = %v, want d1 and d2 (the collection's, once each)", ids)
	}
	list := func(after string, limit int) []string {
		ds, err := s.ListDocuments(ctx, "acme", "c1", after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	if got := list("", 2); !slices.Equal(got, []string{"d1", "d2"}) {
		t.Errorf("ListDocuments first page = %v", got)
	}
	if got := list("d2", 2); !slices.Equal(got, []string{"d3"}) {
		t.Errorf("ListDocuments second page = %v", got)
	}
}

func testKnGraph(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	mustCollection(t, s, "acme", knCollection("c2", "b"))
	mustClaimGraphs(t, s, "w", knT0, knAt(time.Minute), 0)
	_, err := s.GraphData(ctx, "acme", "c1")
	wantErr(t, "GraphData before a build", err, tools.ErrKnowledgeNotFound)
	_, err = s.RequestGraph(ctx, "other", "c1", knT0)
	wantErr(t, "another tenant's RequestGraph", err, tools.ErrKnowledgeNotFound)
	c, err := s.RequestGraph(ctx, "acme", "c1", knAt(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := (tools.Graph{Status: tools.GraphPending, RequestedAt: knStored(knAt(time.Second))}); c.Graph != want {
		t.Errorf("RequestGraph = %+v, want %+v", c.Graph, want)
	}
	if _, err := s.RequestGraph(ctx, "acme", "c2", knAt(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	got := mustClaimGraphs(t, s, "w1", knAt(time.Minute), knAt(2*time.Minute), 2)
	if got[0].ID != "c1" || got[1].ID != "c2" {
		t.Errorf("ClaimGraphs = %v, want the oldest request first", collectionIDs(got))
	}
	g := got[0].Graph
	if g.Status != tools.GraphRunning || g.LeaseOwner != "w1" || g.Attempts != 1 || !g.LeaseUntil.Equal(knStored(knAt(2*time.Minute))) || got[0].Tenant != "acme" {
		t.Errorf("the claimed graph: %+v of tenant %q", g, got[0].Tenant)
	}
	mustClaimGraphs(t, s, "w2", knAt(time.Minute), knAt(2*time.Minute), 0)
	// Lapsed: w2 takes both over; w1's claim is lost.
	again := mustClaimGraphs(t, s, "w2", knAt(2*time.Minute), knAt(3*time.Minute), 2)
	wantErr(t, "finishing a lost graph claim", s.FinishGraph(ctx, "acme", "c1", "w1", 1,
		tools.GraphResult{Status: tools.GraphCompleted, Data: []byte("x"), Now: knAt(2 * time.Minute)}), tools.ErrKnowledgeConflict)
	data := []byte(`{"b":1,  "a":2}`)
	built := knAt(150 * time.Second)
	if err := s.FinishGraph(ctx, "acme", "c1", "w2", again[0].Graph.Attempts, tools.GraphResult{Status: tools.GraphCompleted,
		Entities: 7, Relationships: 5, Communities: 2, Data: data, Now: built}); err != nil {
		t.Fatal(err)
	}
	c, err = s.Collection(ctx, "acme", "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := tools.Graph{Status: tools.GraphCompleted, Entities: 7, Relationships: 5, Communities: 2,
		RequestedAt: knStored(knAt(time.Second)), BuiltAt: knStored(built), Attempts: 2}
	if c.Graph != want {
		t.Errorf("the built graph = %+v, want %+v", c.Graph, want)
	}
	if got, err := s.GraphData(ctx, "acme", "c1"); err != nil || string(got) != string(data) {
		t.Errorf("GraphData = %q, %v; want %q as given", got, err, data)
	}
	_, err = s.GraphData(ctx, "other", "c1")
	wantErr(t, "another tenant's GraphData", err, tools.ErrKnowledgeNotFound)
	wantErr(t, "finishing twice", s.FinishGraph(ctx, "acme", "c1", "w2", again[0].Graph.Attempts,
		tools.GraphResult{Status: tools.GraphFailed, Error: "x", Now: built}), tools.ErrKnowledgeConflict)
	if err := s.FinishGraph(ctx, "acme", "c2", "w2", again[1].Graph.Attempts, tools.GraphResult{Status: tools.GraphFailed,
		Error: "too large", Now: built}); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Collection(ctx, "acme", "c2")
	if c.Graph.Status != tools.GraphFailed || c.Graph.Error != "too large" || !c.Graph.BuiltAt.IsZero() || c.Graph.LeaseOwner != "" {
		t.Errorf("the failed graph = %+v", c.Graph)
	}
	// A new request keeps the stored data until a build replaces it.
	c, err = s.RequestGraph(ctx, "acme", "c1", knAt(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if c.Graph.Status != tools.GraphPending || c.Graph.Entities != 0 || !c.Graph.BuiltAt.Equal(knStored(built)) {
		t.Errorf("a graph requested again = %+v", c.Graph)
	}
	if got, err := s.GraphData(ctx, "acme", "c1"); err != nil || string(got) != string(data) {
		t.Errorf("GraphData while rebuilding = %q, %v", got, err)
	}
	if _, err := s.DeleteCollection(ctx, "acme", "c1", knAt(time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustClaimGraphs(t, s, "w3", knAt(2*time.Hour), knAt(3*time.Hour), 0)
	_, err = s.GraphData(ctx, "acme", "c1")
	wantErr(t, "GraphData of a deleted collection", err, tools.ErrKnowledgeNotFound)
}

func testKnGraphAgain(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	if _, err := s.RequestGraph(ctx, "acme", "c1", knT0); err != nil {
		t.Fatal(err)
	}
	first := mustClaimGraphs(t, s, "w1", knT0, knAt(time.Hour), 1)[0]
	// Documents arrived while it was building: a new request supersedes
	// the build in progress, which may not store its stale graph.
	if _, err := s.RequestGraph(ctx, "acme", "c1", knAt(time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "finishing a superseded build", s.FinishGraph(ctx, "acme", "c1", "w1", first.Graph.Attempts,
		tools.GraphResult{Status: tools.GraphCompleted, Data: []byte("stale"), Now: knAt(time.Minute)}), tools.ErrKnowledgeConflict)
	second := mustClaimGraphs(t, s, "w1", knAt(time.Minute), knAt(time.Hour), 1)[0]
	if second.Graph.Attempts != 1 {
		t.Errorf("the new request's first claim counts attempt %d", second.Graph.Attempts)
	}
	if err := s.FinishGraph(ctx, "acme", "c1", "w1", second.Graph.Attempts, tools.GraphResult{Status: tools.GraphCompleted,
		Data: []byte("fresh"), Now: knAt(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GraphData(ctx, "acme", "c1"); string(got) != "fresh" {
		t.Errorf("GraphData = %q, want fresh", got)
	}
}

func testKnClaimConcurrent(t *testing.T, store func(i int) tools.KnowledgeStore) {
	ctx := ctxT(t)
	const jobs, claimers, batch = 90, 8, 4
	mustCollection(t, store(0), "acme", knCollection("c1", "a"))
	parallel(t, jobs, func(i int) error {
		j := knJob("c1", fmt.Sprintf("j%03d", i), "x")
		j.CreatedAt = knAt(time.Duration(i) * time.Millisecond)
		return store(i).CreateJob(ctx, "acme", j, 1000)
	})
	now := knAt(time.Hour)
	claimed := make([][]string, claimers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range claimers {
		wg.Go(func() {
			s, owner := store(c), fmt.Sprintf("owner-%d", c)
			<-start
			for {
				got, err := s.ClaimJobs(ctx, owner, now, now.Add(time.Minute), batch)
				if err != nil {
					t.Errorf("claimer %d: %v", c, err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, j := range got {
					if j.LeaseOwner != owner || j.Attempts != 1 {
						t.Errorf("claimer %d got %s with owner %s at attempt %d", c, j.ID, j.LeaseOwner, j.Attempts)
					}
					claimed[c] = append(claimed[c], j.ID)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	for c, ids := range claimed {
		for _, id := range ids {
			if prev, ok := seen[id]; ok {
				t.Errorf("job %s claimed by claimers %d and %d", id, prev, c)
			}
			seen[id] = c
		}
	}
	if len(seen) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(seen), jobs)
	}
}

func testKnGraphClaimConcurrent(t *testing.T, store func(i int) tools.KnowledgeStore) {
	ctx := ctxT(t)
	const colls, claimers = 40, 6
	parallel(t, colls, func(i int) error {
		s := store(i)
		id := fmt.Sprintf("c%02d", i)
		if err := s.CreateCollection(ctx, "acme", knCollection(id, id), 1000); err != nil {
			return err
		}
		_, err := s.RequestGraph(ctx, "acme", id, knAt(time.Duration(i)*time.Millisecond))
		return err
	})
	now := knAt(time.Hour)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range claimers {
		wg.Go(func() {
			s := store(c)
			<-start
			for {
				got, err := s.ClaimGraphs(ctx, fmt.Sprint("owner-", c), now, now.Add(time.Minute), 3)
				if err != nil {
					t.Errorf("claimer %d: %v", c, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, g := range got {
					if prev, ok := seen[g.ID]; ok {
						t.Errorf("graph of %s claimed by claimers %d and %d", g.ID, prev, c)
					}
					seen[g.ID] = c
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(seen) != colls {
		t.Errorf("%d graphs claimed, want %d", len(seen), colls)
	}
}

// A deletion racing commits and new jobs: each job either committed
// before the deletion or was cancelled by it, each new job either was
// refused or was cancelled, and no write fails otherwise (no deadlock).
func testKnDeleteRace(t *testing.T, s tools.KnowledgeStore) {
	ctx := ctxT(t)
	mustCollection(t, s, "acme", knCollection("c1", "a"))
	const n = 24
	for i := range n {
		mustJob(t, s, "acme", knJob("c1", fmt.Sprintf("j%02d", i), fmt.Sprint("content ", i)))
	}
	claimed, err := s.ClaimJobs(ctx, "w", knT0, knAt(time.Hour), n)
	if err != nil || len(claimed) != n {
		t.Fatalf("ClaimJobs = %d, %v", len(claimed), err)
	}
	finished := make([]error, n)
	created := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, j := range claimed {
		wg.Go(func() {
			<-start
			d := knDocument("d-"+j.ID, j.ID, j.SHA256)
			_, finished[i] = s.FinishJob(ctx, "acme", j.ID, "w", j.Attempts, tools.JobOutcome{Status: tools.JobCompleted, Document: &d, Now: knAt(time.Second)})
		})
		wg.Go(func() {
			<-start
			created[i] = s.CreateJob(ctx, "acme", knJob("c1", fmt.Sprintf("new%02d", i), fmt.Sprint("new ", i)), 1000)
		})
	}
	var cancelled int
	var delErr error
	wg.Go(func() {
		<-start
		cancelled, delErr = s.DeleteCollection(ctx, "acme", "c1", knAt(time.Second))
	})
	close(start)
	wg.Wait()
	if delErr != nil {
		t.Fatalf("DeleteCollection: %v", delErr)
	}
	gotCancelled := 0
	for i, j := range claimed {
		got, err := s.Job(ctx, "acme", j.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case finished[i] == nil && got.Status == tools.JobCompleted:
		case errors.Is(finished[i], tools.ErrKnowledgeConflict) && got.Status == tools.JobCancelled:
			gotCancelled++
		default:
			t.Errorf("job %s: FinishJob %v, now %s", j.ID, finished[i], got.Status)
		}
		got, err = s.Job(ctx, "acme", fmt.Sprintf("new%02d", i))
		switch {
		case created[i] == nil && err == nil && got.Status == tools.JobCancelled:
			gotCancelled++
		case errors.Is(created[i], tools.ErrKnowledgeNotFound) && errors.Is(err, tools.ErrKnowledgeNotFound):
		default:
			t.Errorf("new job %d: CreateJob %v, now %s (%v)", i, created[i], got.Status, err)
		}
	}
	if gotCancelled != cancelled {
		t.Errorf("DeleteCollection cancelled %d jobs, %d are cancelled", cancelled, gotCancelled)
	}
}
