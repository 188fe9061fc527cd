package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"novaos.dev/novaos/tools"
)

// TestFileStore runs the tools.FileStore contract. newStore must return a
// new, empty store each time it is called.
func TestFileStore(t *testing.T, newStore func(t *testing.T) tools.FileStore) {
	t.Run("PutGet", func(t *testing.T) { testFilePutGet(t, newStore(t)) })
	t.Run("Copies", func(t *testing.T) { testFileCopies(t, newStore(t)) })
	t.Run("Replace", func(t *testing.T) { testFileReplace(t, newStore(t)) })
	t.Run("Conditional", func(t *testing.T) { testFileConditional(t, newStore(t)) })
	t.Run("Versions", func(t *testing.T) { testFileVersions(t, newStore(t)) })
	t.Run("Delete", func(t *testing.T) { testFileDelete(t, newStore(t)) })
	t.Run("Areas", func(t *testing.T) { testFileAreas(t, newStore(t)) })
	t.Run("List", func(t *testing.T) { testFileList(t, newStore(t)) })
	t.Run("Invalid", func(t *testing.T) { testFileInvalid(t, newStore(t)) })
	t.Run("Quota", func(t *testing.T) { testFileQuota(t, newStore(t)) })
	t.Run("Usage", func(t *testing.T) { testFileUsage(t, newStore(t)) })
	t.Run("Large", func(t *testing.T) { testFileLarge(t, newStore(t)) })
	t.Run("QuotaRace", func(t *testing.T) {
		s := newStore(t)
		testFileQuotaRace(t, func(int) tools.FileStore { return s })
	})
	t.Run("ConditionalRace", func(t *testing.T) {
		s := newStore(t)
		testFileConditionalRace(t, func(int) tools.FileStore { return s })
	})
}

// TestFileReplicas runs the part of the tools.FileStore contract that
// spans several handles on one database, as replicas of a server have:
// newDatabase returns a function giving a new handle on one new database
// at every call. Concurrent puts through different handles never take a
// tenant past its quota, and exactly one of concurrent conditional puts
// wins.
func TestFileReplicas(t *testing.T, newDatabase func(t *testing.T) (newReplica func() tools.FileStore)) {
	t.Run("QuotaRace", func(t *testing.T) {
		newReplica := newDatabase(t)
		replicas := []tools.FileStore{newReplica(), newReplica(), newReplica()}
		testFileQuotaRace(t, func(i int) tools.FileStore { return replicas[i%len(replicas)] })
	})
	t.Run("ConditionalRace", func(t *testing.T) {
		newReplica := newDatabase(t)
		replicas := []tools.FileStore{newReplica(), newReplica()}
		testFileConditionalRace(t, func(i int) tools.FileStore { return replicas[i%len(replicas)] })
	})
}

// TestFileReopen checks durability across restarts: files, the tenant's
// usage and its version counter, written through one handle, read back
// through a new handle on the same database, where versions keep growing
// past the last one given, even that of a deleted file. open must return
// a fresh handle on the same database at every call, and the function
// that closes it.
func TestFileReopen(t *testing.T, open func(t *testing.T) (tools.FileStore, func())) {
	ctx := ctxT(t)
	s, closeDB := open(t)
	a := filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "bot", "a.txt"), Content: []byte("alpha"), ContentType: "text/plain", Now: fileT0})
	gone := filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "", "gone.bin"), Content: []byte{0, 1, 2}, Now: fileT0})
	if err := s.Delete(ctx, gone.FileKey, 0); err != nil {
		t.Fatal(err)
	}
	closeDB()

	for i := range 2 {
		s, closeDB := open(t)
		got, err := s.Get(ctx, a.FileKey)
		if err != nil {
			t.Fatalf("reopen %d: Get: %v", i, err)
		}
		if d := gocmp.Diff(tools.File{FileInfo: a, Content: []byte("alpha")}, got); d != "" {
			t.Errorf("reopen %d: file (-want +got):\n%s", i, d)
		}
		// Each round adds an empty file.
		if u, err := s.Usage(ctx, "acme"); err != nil || u != (tools.FileUsage{Bytes: 5, Files: 1 + int64(i)}) {
			t.Errorf("reopen %d: Usage = %+v, %v; want 5 bytes in %d files", i, u, err, 1+i)
		}
		next := filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "bot", fmt.Sprintf("n%d", i)), Now: fileT0})
		if next.Version <= gone.Version+int64(i) {
			t.Errorf("reopen %d: a new file got version %d, not past %d", i, next.Version, gone.Version+int64(i))
		}
		closeDB()
	}
}

// fileT0 is the suite's clock: its time carries nanoseconds, which stores
// drop (they keep microseconds), in a zone other than UTC, which reads
// back as UTC.
var fileT0 = time.Date(2026, 6, 1, 9, 0, 0, 123456789, time.UTC).In(gateZone)

func fileAt(d time.Duration) time.Time { return fileT0.Add(d) }

// fileStored is t as a store returns it.
func fileStored(t time.Time) time.Time { return time.UnixMicro(t.UnixMicro()).UTC() }

func fileKey(tenant, agent, path string) tools.FileKey {
	return tools.FileKey{Tenant: tenant, Agent: agent, Path: path}
}

func fileSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func version(v int64) *int64 { return &v }

// filePut puts p and fails the test on an error.
func filePut(t *testing.T, s tools.FileStore, p tools.FilePut) tools.FileInfo {
	t.Helper()
	fi, err := s.Put(ctxT(t), p)
	if err != nil {
		t.Fatalf("Put %s/%q/%s: %v", p.Tenant, p.Agent, p.Path, err)
	}
	return fi
}

// fileGet gets k and fails the test on an error.
func fileGet(t *testing.T, s tools.FileStore, k tools.FileKey) tools.File {
	t.Helper()
	f, err := s.Get(ctxT(t), k)
	if err != nil {
		t.Fatalf("Get %s/%q/%s: %v", k.Tenant, k.Agent, k.Path, err)
	}
	return f
}

func fileUsage(t *testing.T, s tools.FileStore, tenant string) tools.FileUsage {
	t.Helper()
	u, err := s.Usage(ctxT(t), tenant)
	if err != nil {
		t.Fatalf("Usage %s: %v", tenant, err)
	}
	return u
}

func filePaths(fs []tools.FileInfo) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}

func testFilePutGet(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	binary := []byte{0, 0xff, 'a', 0, '\n', 0x80}
	for i, c := range []struct {
		name string
		put  tools.FilePut
	}{
		{"text", tools.FilePut{FileKey: fileKey("acme", "bot", "notes/today.md"), Content: []byte("# Today\n"), ContentType: "text/markdown; charset=utf-8"}},
		{"binary with NUL bytes", tools.FilePut{FileKey: fileKey("acme", "bot", "blob.bin"), Content: binary, ContentType: "application/octet-stream"}},
		{"empty, no content type", tools.FilePut{FileKey: fileKey("acme", "bot", "empty")}},
		{"shared area, unicode path", tools.FilePut{FileKey: fileKey("acme", "", "équipe/ノート 1.txt"), Content: []byte("héllo")}},
		{"longest path", tools.FilePut{FileKey: fileKey("acme", "bot", strings.Repeat("p", tools.MaxFilePath)), Content: []byte("x")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.put.Now = fileAt(time.Duration(i) * time.Second)
			got := filePut(t, s, c.put)
			want := tools.FileInfo{FileKey: c.put.FileKey, Size: int64(len(c.put.Content)), Version: got.Version,
				ContentType: c.put.ContentType, SHA256: fileSum(c.put.Content), CreatedAt: fileStored(c.put.Now), UpdatedAt: fileStored(c.put.Now)}
			if d := gocmp.Diff(want, got); d != "" {
				t.Errorf("Put (-want +got):\n%s", d)
			}
			if got.Version < 1 {
				t.Errorf("version %d, want 1 or more", got.Version)
			}
			f := fileGet(t, s, c.put.FileKey)
			if d := gocmp.Diff(tools.File{FileInfo: want, Content: c.put.Content}, f,
				gocmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })); d != "" {
				t.Errorf("Get (-want +got):\n%s", d)
			}
			if f.Content == nil {
				t.Error("Get returned nil content; want an empty slice")
			}
		})
	}
	if _, err := s.Get(ctx, fileKey("acme", "bot", "missing")); !errors.Is(err, tools.ErrFileNotFound) {
		t.Errorf("Get of a missing file: %v, want ErrFileNotFound", err)
	}
	// A zero Now is the store's clock.
	before := time.Now().Add(-time.Second)
	fi := filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "bot", "clock"), Content: []byte("t")})
	if fi.UpdatedAt.Before(before) || fi.UpdatedAt.Location() != time.UTC || !fi.CreatedAt.Equal(fi.UpdatedAt) {
		t.Errorf("a put without Now: created %v, updated %v; want now, in UTC", fi.CreatedAt, fi.UpdatedAt)
	}
}

// What a caller gives Put and gets from Get are its own to change.
func testFileCopies(t *testing.T, s tools.FileStore) {
	k := fileKey("acme", "bot", "c.txt")
	content := []byte("original")
	filePut(t, s, tools.FilePut{FileKey: k, Content: content, Now: fileT0})
	content[0] = 'X'
	f := fileGet(t, s, k)
	f.Content[1] = 'Y'
	if got := fileGet(t, s, k).Content; string(got) != "original" {
		t.Errorf("content after changing the caller's slices = %q, want %q", got, "original")
	}
}

func testFileReplace(t *testing.T, s tools.FileStore) {
	k := fileKey("acme", "bot", "r.txt")
	first := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte("one"), ContentType: "text/plain", Now: fileT0})
	second := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte("second"), ContentType: "text/csv", Now: fileAt(time.Minute)})
	want := tools.FileInfo{FileKey: k, Size: 6, Version: second.Version, ContentType: "text/csv", SHA256: fileSum([]byte("second")),
		CreatedAt: fileStored(fileT0), UpdatedAt: fileStored(fileAt(time.Minute))}
	if d := gocmp.Diff(want, second); d != "" {
		t.Errorf("replace (-want +got):\n%s", d)
	}
	if second.Version <= first.Version {
		t.Errorf("replace: version %d, not past %d", second.Version, first.Version)
	}
	if got := fileGet(t, s, k); string(got.Content) != "second" || got.FileInfo != want {
		t.Errorf("Get after replace = %+v %q", got.FileInfo, got.Content)
	}
	if u := fileUsage(t, s, "acme"); u != (tools.FileUsage{Bytes: 6, Files: 1}) {
		t.Errorf("usage after replace = %+v, want 6 bytes in 1 file", u)
	}
}

func testFileConditional(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	k := fileKey("acme", "bot", "cas.txt")
	// IfVersion 0 creates only.
	v1 := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte("v1"), IfVersion: version(0), Now: fileT0})
	current := v1.Version
	refused := []struct {
		name      string
		ifVersion int64
	}{
		{"must not exist", 0},
		{"stale", current - 1},
		{"ahead", current + 1},
	}
	for _, c := range refused {
		_, err := s.Put(ctx, tools.FilePut{FileKey: k, Content: []byte("lost"), IfVersion: version(c.ifVersion), Now: fileAt(time.Second)})
		if !errors.Is(err, tools.ErrFileConflict) {
			t.Errorf("%s: Put with IfVersion %d at version %d: %v, want ErrFileConflict", c.name, c.ifVersion, current, err)
		}
	}
	if _, err := s.Put(ctx, tools.FilePut{FileKey: fileKey("acme", "bot", "absent"), IfVersion: version(7)}); !errors.Is(err, tools.ErrFileConflict) {
		t.Errorf("Put with IfVersion 7 of a missing file: %v, want ErrFileConflict", err)
	}
	// The refused puts changed nothing.
	if got := fileGet(t, s, k); string(got.Content) != "v1" || got.FileInfo != v1 {
		t.Errorf("after refused puts: %+v %q, want %+v v1", got.FileInfo, got.Content, v1)
	}
	if u := fileUsage(t, s, "acme"); u != (tools.FileUsage{Bytes: 2, Files: 1}) {
		t.Errorf("usage after refused puts = %+v", u)
	}
	v2 := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte("v2!"), IfVersion: version(current), Now: fileAt(2 * time.Second)})
	if v2.Version <= current || v2.Size != 3 {
		t.Errorf("a put at the current version = %+v", v2)
	}
}

// Versions are unique in a tenant, across its areas, and only grow, also
// past a file deleted and written again; other tenants count their own.
func testFileVersions(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	seen := map[int64]string{}
	var last int64
	for i, k := range []tools.FileKey{
		fileKey("acme", "a", "x"), fileKey("acme", "b", "x"), fileKey("acme", "", "x"), fileKey("acme", "a", "x"),
		fileKey("acme", "a", "y"),
	} {
		fi := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte{byte(i)}, Now: fileT0})
		if prev, ok := seen[fi.Version]; ok {
			t.Errorf("version %d given to %q/%s and to %s", fi.Version, k.Agent, k.Path, prev)
		}
		if fi.Version <= last {
			t.Errorf("put %d: version %d, not past %d", i, fi.Version, last)
		}
		seen[fi.Version], last = k.Agent+"/"+k.Path, fi.Version
	}
	if err := s.Delete(ctx, fileKey("acme", "a", "y"), 0); err != nil {
		t.Fatal(err)
	}
	again := filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "a", "y"), Now: fileT0})
	if again.Version <= last {
		t.Errorf("a deleted file written again got version %d, not past %d", again.Version, last)
	}
	// Another tenant's puts take nothing from acme's counter.
	other := filePut(t, s, tools.FilePut{FileKey: fileKey("globex", "a", "x"), Now: fileT0})
	if other.Version < 1 {
		t.Errorf("globex's first version = %d", other.Version)
	}
	next := filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "a", "z"), Now: fileT0})
	if next.Version <= again.Version {
		t.Errorf("version %d after %d", next.Version, again.Version)
	}
}

func testFileDelete(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	k := fileKey("acme", "bot", "d.txt")
	fi := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte("12345"), Now: fileT0})
	filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "bot", "keep.txt"), Content: []byte("12"), Now: fileT0})

	if err := s.Delete(ctx, k, fi.Version+1); !errors.Is(err, tools.ErrFileConflict) {
		t.Errorf("Delete at a wrong version: %v, want ErrFileConflict", err)
	}
	if got := fileGet(t, s, k); got.Version != fi.Version {
		t.Errorf("a refused delete changed the file: %+v", got.FileInfo)
	}
	if err := s.Delete(ctx, k, fi.Version); err != nil {
		t.Fatalf("Delete at the current version: %v", err)
	}
	if _, err := s.Get(ctx, k); !errors.Is(err, tools.ErrFileNotFound) {
		t.Errorf("Get after Delete: %v, want ErrFileNotFound", err)
	}
	if u := fileUsage(t, s, "acme"); u != (tools.FileUsage{Bytes: 2, Files: 1}) {
		t.Errorf("usage after delete = %+v, want 2 bytes in 1 file", u)
	}
	for _, v := range []int64{0, fi.Version} {
		if err := s.Delete(ctx, k, v); !errors.Is(err, tools.ErrFileNotFound) {
			t.Errorf("Delete(%d) of a deleted file: %v, want ErrFileNotFound", v, err)
		}
	}
	if got, err := s.List(ctx, tools.FileFilter{Tenant: "acme", Agent: "bot"}); err != nil || !slices.Equal(filePaths(got), []string{"keep.txt"}) {
		t.Errorf("List after delete = %v, %v", filePaths(got), err)
	}
	// A file written again after its delete is a new file.
	again := filePut(t, s, tools.FilePut{FileKey: k, Content: []byte("new"), Now: fileAt(time.Hour)})
	if !again.CreatedAt.Equal(fileStored(fileAt(time.Hour))) {
		t.Errorf("a file written again after its delete was created at %v, want %v", again.CreatedAt, fileStored(fileAt(time.Hour)))
	}
}

// An agent's own area, another agent's, the tenant's shared area and
// another tenant's hold files of one path apart; usage is the tenant's,
// over all its areas.
func testFileAreas(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	keys := []tools.FileKey{
		fileKey("acme", "alice-bot", "report.md"),
		fileKey("acme", "bob-bot", "report.md"),
		fileKey("acme", "", "report.md"),
		fileKey("globex", "alice-bot", "report.md"),
	}
	for i, k := range keys {
		filePut(t, s, tools.FilePut{FileKey: k, Content: bytes.Repeat([]byte{'a' + byte(i)}, i+1), Now: fileT0})
	}
	for i, k := range keys {
		f := fileGet(t, s, k)
		if want := bytes.Repeat([]byte{'a' + byte(i)}, i+1); !bytes.Equal(f.Content, want) || f.FileKey != k {
			t.Errorf("Get %+v = %+v %q, want %q", k, f.FileKey, f.Content, want)
		}
		got, err := s.List(ctx, tools.FileFilter{Tenant: k.Tenant, Agent: k.Agent})
		if err != nil || len(got) != 1 || got[0].FileKey != k {
			t.Errorf("List of %s/%q = %+v, %v; want only its own file", k.Tenant, k.Agent, got, err)
		}
	}
	if u := fileUsage(t, s, "acme"); u != (tools.FileUsage{Bytes: 1 + 2 + 3, Files: 3}) {
		t.Errorf("acme usage = %+v, want 6 bytes in 3 files", u)
	}
	if u := fileUsage(t, s, "globex"); u != (tools.FileUsage{Bytes: 4, Files: 1}) {
		t.Errorf("globex usage = %+v, want 4 bytes in 1 file", u)
	}
	if u := fileUsage(t, s, "initech"); u != (tools.FileUsage{}) {
		t.Errorf("a tenant without files has usage %+v", u)
	}
	// Deleting one area's file leaves the others'.
	if err := s.Delete(ctx, keys[0], 0); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys[1:] {
		fileGet(t, s, k)
	}
	if _, err := s.Get(ctx, fileKey("acme", "carol-bot", "report.md")); !errors.Is(err, tools.ErrFileNotFound) {
		t.Errorf("Get in an area without the file: %v", err)
	}
}

// Listings are in byte order of the paths, filtered by prefix, paged with
// After and Limit; every prefix and page matches a brute-force filter of
// the area's paths.
func testFileList(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	paths := []string{
		"a", "a b", "a-b", "a.b", "a/b", "a/b/c", "a/bc", "a/c", "ab", "b", "B", "reports/2026-01.md",
		"reports/2026-02.md", "reports/2027-01.md", "résumé.txt", "r", "rz", "ノート/1", "ノート/2", "ノーツ", "z~",
		"\u007e\u00a1", "\U0001F600.png", "\U0001F600\U0001F600",
	}
	for _, p := range paths {
		filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "bot", p), Content: []byte(p), Now: fileT0})
	}
	// Noise in other areas and tenants.
	filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "", "a/shared"), Now: fileT0})
	filePut(t, s, tools.FilePut{FileKey: fileKey("acme", "bot2", "a/other"), Now: fileT0})
	filePut(t, s, tools.FilePut{FileKey: fileKey("globex", "bot", "a/globex"), Now: fileT0})

	sorted := slices.Clone(paths)
	slices.Sort(sorted) // byte order
	for _, prefix := range []string{"", "a", "a/", "a/b", "reports/2026-", "r", "ノ", "ノート", "ノート/", "\U0001F600", "zz", "~", "résumé.txt"} {
		var want []string
		for _, p := range sorted {
			if strings.HasPrefix(p, prefix) {
				want = append(want, p)
			}
		}
		got, err := s.List(ctx, tools.FileFilter{Tenant: "acme", Agent: "bot", Prefix: prefix})
		if err != nil {
			t.Fatalf("List prefix %q: %v", prefix, err)
		}
		if d := gocmp.Diff(want, filePaths(got), gocmpEmpty); d != "" {
			t.Errorf("List prefix %q (-want +got):\n%s", prefix, d)
		}
		for _, limit := range []int{1, 2, 5} {
			var paged []string
			after := ""
			for range len(want) + 2 {
				page, err := s.List(ctx, tools.FileFilter{Tenant: "acme", Agent: "bot", Prefix: prefix, After: after, Limit: limit})
				if err != nil {
					t.Fatalf("List prefix %q after %q: %v", prefix, after, err)
				}
				if len(page) > limit {
					t.Fatalf("List with limit %d returned %d", limit, len(page))
				}
				paged = append(paged, filePaths(page)...)
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].Path
			}
			if d := gocmp.Diff(want, paged, gocmpEmpty); d != "" {
				t.Errorf("List prefix %q in pages of %d (-want +got):\n%s", prefix, limit, d)
			}
		}
	}
	// After, whether or not a path, before or past the prefix's range.
	for _, c := range []struct {
		prefix, after string
		want          []string
	}{
		{"a/", "", []string{"a/b", "a/b/c", "a/bc", "a/c"}},
		{"a/", "a", []string{"a/b", "a/b/c", "a/bc", "a/c"}},
		{"a/", "a/b/", []string{"a/b/c", "a/bc", "a/c"}},
		{"a/", "a/bb", []string{"a/bc", "a/c"}},
		{"a/", "a/c", []string{}},
		{"a/", "b", []string{}},
		{"", "ノート/1", []string{"ノート/2", "\U0001F600.png", "\U0001F600\U0001F600"}}, // ツ sorts before ト
	} {
		got, err := s.List(ctx, tools.FileFilter{Tenant: "acme", Agent: "bot", Prefix: c.prefix, After: c.after})
		if err != nil {
			t.Fatalf("List prefix %q after %q: %v", c.prefix, c.after, err)
		}
		if d := gocmp.Diff(c.want, filePaths(got), gocmpEmpty); d != "" {
			t.Errorf("List prefix %q after %q (-want +got):\n%s", c.prefix, c.after, d)
		}
	}
	// Every field of a listed file is as stored.
	got, err := s.List(ctx, tools.FileFilter{Tenant: "acme", Agent: "bot", Prefix: "reports/2027"})
	if err != nil || len(got) != 1 {
		t.Fatalf("List = %v, %v", got, err)
	}
	if want := fileGet(t, s, got[0].FileKey).FileInfo; got[0] != want {
		t.Errorf("listed %+v, stored %+v", got[0], want)
	}
	// An empty area lists as an empty page, not nil.
	if got, err := s.List(ctx, tools.FileFilter{Tenant: "acme", Agent: "nobody"}); err != nil || got == nil || len(got) != 0 {
		t.Errorf("List of an empty area = %#v, %v; want an empty page", got, err)
	}
}

// gocmpEmpty makes nil and empty slices equal.
var gocmpEmpty = gocmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

func testFileInvalid(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	for _, c := range []struct {
		name string
		put  tools.FilePut
		want error
	}{
		{"no tenant", tools.FilePut{FileKey: fileKey("", "bot", "a")}, tools.ErrInvalidFile},
		{"tenant with NUL", tools.FilePut{FileKey: fileKey("ac\x00me", "bot", "a")}, tools.ErrInvalidFile},
		{"tenant not UTF-8", tools.FilePut{FileKey: fileKey("ac\xffme", "bot", "a")}, tools.ErrInvalidFile},
		{"tenant too long", tools.FilePut{FileKey: fileKey(strings.Repeat("t", tools.MaxFileKeyText+1), "bot", "a")}, tools.ErrInvalidFile},
		{"agent with NUL", tools.FilePut{FileKey: fileKey("acme", "b\x00t", "a")}, tools.ErrInvalidFile},
		{"agent too long", tools.FilePut{FileKey: fileKey("acme", strings.Repeat("a", tools.MaxFileKeyText+1), "a")}, tools.ErrInvalidFile},
		{"empty path", tools.FilePut{FileKey: fileKey("acme", "bot", "")}, tools.ErrInvalidFile},
		{"absolute path", tools.FilePut{FileKey: fileKey("acme", "bot", "/etc/passwd")}, tools.ErrInvalidFile},
		{"dot-dot", tools.FilePut{FileKey: fileKey("acme", "bot", "a/../b")}, tools.ErrInvalidFile},
		{"dot", tools.FilePut{FileKey: fileKey("acme", "bot", "./a")}, tools.ErrInvalidFile},
		{"double slash", tools.FilePut{FileKey: fileKey("acme", "bot", "a//b")}, tools.ErrInvalidFile},
		{"trailing slash", tools.FilePut{FileKey: fileKey("acme", "bot", "a/")}, tools.ErrInvalidFile},
		{"NUL in path", tools.FilePut{FileKey: fileKey("acme", "bot", "a\x00b")}, tools.ErrInvalidFile},
		{"control in path", tools.FilePut{FileKey: fileKey("acme", "bot", "a\nb")}, tools.ErrInvalidFile},
		{"invalid UTF-8 path", tools.FilePut{FileKey: fileKey("acme", "bot", "a\xc3")}, tools.ErrInvalidFile},
		{"path too long", tools.FilePut{FileKey: fileKey("acme", "bot", strings.Repeat("p", tools.MaxFilePath+1))}, tools.ErrInvalidFile},
		{"content type with NUL", tools.FilePut{FileKey: fileKey("acme", "bot", "a"), ContentType: "text/\x00"}, tools.ErrInvalidFile},
		{"content type too long", tools.FilePut{FileKey: fileKey("acme", "bot", "a"), ContentType: strings.Repeat("x", tools.MaxFileContentType+1)}, tools.ErrInvalidFile},
		{"negative version", tools.FilePut{FileKey: fileKey("acme", "bot", "a"), IfVersion: version(-1)}, tools.ErrInvalidFile},
		{"too large", tools.FilePut{FileKey: fileKey("acme", "bot", "a"), Content: make([]byte, tools.MaxFileSize+1)}, tools.ErrFileTooLarge},
	} {
		if _, err := s.Put(ctx, c.put); !errors.Is(err, c.want) {
			t.Errorf("%s: Put: %v, want %v", c.name, err, c.want)
		}
	}
	if u := fileUsage(t, s, "acme"); u != (tools.FileUsage{}) {
		t.Errorf("refused puts left usage %+v", u)
	}
	for _, k := range []tools.FileKey{fileKey("", "a", "p"), fileKey("acme", "a", "/p"), fileKey("acme", "\xff", "p"), fileKey("acme", "a", "p\x00")} {
		if _, err := s.Get(ctx, k); !errors.Is(err, tools.ErrInvalidFile) {
			t.Errorf("Get %#v: %v, want ErrInvalidFile", k, err)
		}
		if err := s.Delete(ctx, k, 0); !errors.Is(err, tools.ErrInvalidFile) {
			t.Errorf("Delete %#v: %v, want ErrInvalidFile", k, err)
		}
	}
	if err := s.Delete(ctx, fileKey("acme", "a", "p"), -1); !errors.Is(err, tools.ErrInvalidFile) {
		t.Errorf("Delete at version -1: %v, want ErrInvalidFile", err)
	}
	for _, f := range []tools.FileFilter{
		{Agent: "bot"},
		{Tenant: "acme", Prefix: "/a"},
		{Tenant: "acme", Prefix: "a\x00"},
		{Tenant: "acme", Prefix: "a\x7f"},
		{Tenant: "acme", Prefix: strings.Repeat("p", tools.MaxFilePath+1)},
		{Tenant: "acme", After: "a\xff"},
		{Tenant: "acme", Agent: "\x00"},
	} {
		if _, err := s.List(ctx, f); !errors.Is(err, tools.ErrInvalidFile) {
			t.Errorf("List %#v: %v, want ErrInvalidFile", f, err)
		}
	}
	for _, tenant := range []string{"", "a\x00", "\xff"} {
		if _, err := s.Usage(ctx, tenant); !errors.Is(err, tools.ErrInvalidFile) {
			t.Errorf("Usage(%q): %v, want ErrInvalidFile", tenant, err)
		}
	}
}

func testFileQuota(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	q := tools.FileQuota{Bytes: 10, Files: 3}
	put := func(path string, size int, q tools.FileQuota) (tools.FileInfo, error) {
		return s.Put(ctx, tools.FilePut{FileKey: fileKey("acme", "bot", path), Content: bytes.Repeat([]byte("x"), size), Quota: q, Now: fileT0})
	}
	mustPut := func(path string, size int, q tools.FileQuota) {
		t.Helper()
		if _, err := put(path, size, q); err != nil {
			t.Fatalf("put %s of %d bytes under %+v: %v", path, size, q, err)
		}
	}
	refused := func(path string, size int, q tools.FileQuota, want tools.QuotaError) {
		t.Helper()
		before := fileUsage(t, s, "acme")
		_, err := put(path, size, q)
		var qe *tools.QuotaError
		if !errors.As(err, &qe) || !errors.Is(err, tools.ErrQuotaExceeded) {
			t.Fatalf("put %s of %d bytes under %+v: %v, want a *QuotaError", path, size, q, err)
		}
		if *qe != want {
			t.Errorf("put %s of %d bytes: %+v, want %+v", path, size, *qe, want)
		}
		if after := fileUsage(t, s, "acme"); after != before {
			t.Errorf("a refused put moved usage from %+v to %+v", before, after)
		}
	}
	mustPut("a", 4, q)
	mustPut("b", 6, q) // exactly the quota
	refused("c", 1, q, tools.QuotaError{Tenant: "acme", Kind: tools.QuotaBytes, Quota: 10, Used: 10, Want: 11})
	refused("a", 5, q, tools.QuotaError{Tenant: "acme", Kind: tools.QuotaBytes, Quota: 10, Used: 10, Want: 11})
	mustPut("a", 1, q) // a replace that shrinks
	mustPut("c", 0, q) // the third file, of 0 bytes
	refused("d", 0, q, tools.QuotaError{Tenant: "acme", Kind: tools.QuotaFiles, Quota: 3, Used: 3, Want: 4})
	mustPut("c", 3, q) // a replace at the file limit, back to 10 bytes
	if _, err := s.Get(ctx, fileKey("acme", "bot", "d")); !errors.Is(err, tools.ErrFileNotFound) {
		t.Errorf("a refused put created its file: %v", err)
	}
	// Quotas span areas: the shared area counts too.
	if _, err := s.Put(ctx, tools.FilePut{FileKey: fileKey("acme", "", "s"), Content: []byte("s"), Quota: tools.FileQuota{Bytes: 10}}); !errors.Is(err, tools.ErrQuotaExceeded) {
		t.Errorf("a put in the shared area past the tenant's quota: %v", err)
	}
	// A lowered quota: the tenant over it may shrink, replace at equal
	// size and delete, but not grow.
	low := tools.FileQuota{Bytes: 5, Files: 1}
	mustPut("b", 6, low)
	mustPut("b", 2, low)
	refused("b", 3, low, tools.QuotaError{Tenant: "acme", Kind: tools.QuotaBytes, Quota: 5, Used: 6, Want: 7})
	if err := s.Delete(ctx, fileKey("acme", "bot", "c"), 0); err != nil {
		t.Fatal(err)
	}
	// No limit: zero bounds nothing.
	mustPut("big", 100, tools.FileQuota{})
	// Other tenants are not counted.
	if _, err := s.Put(ctx, tools.FilePut{FileKey: fileKey("globex", "bot", "g"), Content: []byte("0123456789"), Quota: q}); err != nil {
		t.Errorf("globex's first put under acme's quota: %v", err)
	}
}

// The usage a store reports follows every put, replace and delete,
// across areas and tenants, as a model of the files counts it, and is
// what a listing of every area adds up to.
func testFileUsage(t *testing.T, s tools.FileStore) {
	ctx := ctxT(t)
	r := newRand(t)
	type file struct{ size int64 }
	model := map[tools.FileKey]file{}
	tenants, agents := []string{"acme", "globex"}, []string{"", "a", "b"}
	for step := range 300 {
		k := fileKey(tenants[r.IntN(len(tenants))], agents[r.IntN(len(agents))], fmt.Sprintf("f%d", r.IntN(8)))
		if _, ok := model[k]; ok && r.IntN(3) == 0 {
			if err := s.Delete(ctx, k, 0); err != nil {
				t.Fatalf("step %d: Delete %+v: %v", step, k, err)
			}
			delete(model, k)
		} else {
			size := r.IntN(50)
			filePut(t, s, tools.FilePut{FileKey: k, Content: make([]byte, size), Now: fileT0})
			model[k] = file{int64(size)}
		}
		for _, tenant := range tenants {
			var want tools.FileUsage
			for k, f := range model {
				if k.Tenant == tenant {
					want.Bytes += f.size
					want.Files++
				}
			}
			if got := fileUsage(t, s, tenant); got != want {
				t.Fatalf("step %d: %s usage %+v, want %+v", step, tenant, got, want)
			}
		}
	}
	for _, tenant := range tenants {
		var listed tools.FileUsage
		for _, agent := range agents {
			fs, err := s.List(ctx, tools.FileFilter{Tenant: tenant, Agent: agent})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				listed.Bytes += f.Size
				listed.Files++
			}
		}
		if got := fileUsage(t, s, tenant); got != listed {
			t.Errorf("%s usage %+v, its listings add up to %+v", tenant, got, listed)
		}
	}
}

// A file of the platform's default limit, 10 MiB of bytes of every value,
// reads back byte for byte.
func testFileLarge(t *testing.T, s tools.FileStore) {
	content := make([]byte, 10<<20)
	for i := range content {
		content[i] = byte(i*7 + i>>16)
	}
	k := fileKey("acme", "bot", "large.bin")
	fi := filePut(t, s, tools.FilePut{FileKey: k, Content: content, Quota: tools.FileQuota{Bytes: 10 << 20}, Now: fileT0})
	if fi.Size != int64(len(content)) || fi.SHA256 != fileSum(content) {
		t.Errorf("Put = size %d sha %s", fi.Size, fi.SHA256)
	}
	if got := fileGet(t, s, k); !bytes.Equal(got.Content, content) {
		t.Errorf("a %d-byte file read back as %d bytes, or changed", len(content), len(got.Content))
	}
	if u := fileUsage(t, s, "acme"); u.Bytes != int64(len(content)) {
		t.Errorf("usage %+v", u)
	}
}

// Many concurrent puts of new files, through the handles store gives,
// never take a tenant past its quota: of puts that each fit alone, as
// many succeed as the quota holds, the rest fail with a *QuotaError, and
// usage is what the successful ones wrote. The byte quota and the file
// quota are raced in turn.
func testFileQuotaRace(t *testing.T, store func(i int) tools.FileStore) {
	ctx := ctxT(t)
	const writers, size = 24, 100
	for _, c := range []struct {
		name   string
		tenant string
		quota  tools.FileQuota
		fit    int
		kind   string
	}{
		{"bytes", "bytes-tenant", tools.FileQuota{Bytes: 7*size + size/2}, 7, tools.QuotaBytes},
		{"files", "files-tenant", tools.FileQuota{Files: 5}, 5, tools.QuotaFiles},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := make([]error, writers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range writers {
				wg.Go(func() {
					s := store(i)
					agent := []string{"", "a", "b"}[i%3]
					<-start
					_, errs[i] = s.Put(ctx, tools.FilePut{FileKey: fileKey(c.tenant, agent, fmt.Sprintf("w%02d", i)),
						Content: bytes.Repeat([]byte{byte(i)}, size), Quota: c.quota, Now: fileT0})
				})
			}
			close(start)
			wg.Wait()
			ok := 0
			for i, err := range errs {
				var qe *tools.QuotaError
				switch {
				case err == nil:
					ok++
				case errors.As(err, &qe) && qe.Kind == c.kind:
				default:
					t.Errorf("writer %d: %v, want success or a %s *QuotaError", i, err, c.kind)
				}
			}
			if ok != c.fit {
				t.Errorf("%d of %d puts succeeded, want %d", ok, writers, c.fit)
			}
			if u := fileUsage(t, store(0), c.tenant); u != (tools.FileUsage{Bytes: int64(ok * size), Files: int64(ok)}) {
				t.Errorf("usage %+v after %d puts of %d bytes", u, ok, size)
			}
		})
	}
	// Replaces that grow race too: each grows one file from size to
	// 2*size, and the quota has room for three of them.
	t.Run("replaces", func(t *testing.T) {
		const tenant, files = "grow-tenant", 8
		q := tools.FileQuota{Bytes: files*size + 3*size}
		for i := range files {
			filePut(t, store(i), tools.FilePut{FileKey: fileKey(tenant, "a", fmt.Sprintf("g%d", i)), Content: make([]byte, size), Quota: q, Now: fileT0})
		}
		errs := make([]error, files)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range files {
			wg.Go(func() {
				s := store(i)
				<-start
				_, errs[i] = s.Put(ctx, tools.FilePut{FileKey: fileKey(tenant, "a", fmt.Sprintf("g%d", i)), Content: make([]byte, 2*size), Quota: q, Now: fileT0})
			})
		}
		close(start)
		wg.Wait()
		ok := 0
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, tools.ErrQuotaExceeded):
				t.Errorf("replace %d: %v", i, err)
			}
		}
		if ok != 3 {
			t.Errorf("%d replaces succeeded, want 3", ok)
		}
		if u := fileUsage(t, store(0), tenant); u != (tools.FileUsage{Bytes: files*size + int64(ok)*size, Files: files}) {
			t.Errorf("usage %+v after %d grown files", u, ok)
		}
	})
}

// Of many concurrent puts and deletes of one file at its current
// version, through the handles store gives, exactly one wins; the losers
// get ErrFileConflict (or, once the file is deleted, ErrFileConflict and
// ErrFileNotFound) and write nothing.
func testFileConditionalRace(t *testing.T, store func(i int) tools.FileStore) {
	ctx := ctxT(t)
	const writers = 16
	k := fileKey("acme", "bot", "race.txt")
	for round, del := range []bool{false, true} {
		base := filePut(t, store(0), tools.FilePut{FileKey: k, Content: []byte("base"), Now: fileT0})
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				s := store(i)
				<-start
				if del && i%2 == 0 {
					errs[i] = s.Delete(ctx, k, base.Version)
					return
				}
				_, errs[i] = s.Put(ctx, tools.FilePut{FileKey: k, Content: []byte(fmt.Sprintf("writer %02d", i)), IfVersion: version(base.Version), Now: fileT0})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Errorf("round %d: writers %d and %d both won", round, winner, i)
				}
				winner = i
			case errors.Is(err, tools.ErrFileConflict), errors.Is(err, tools.ErrFileNotFound) && del && i%2 == 0:
			default:
				t.Errorf("round %d: writer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won", round)
		}
		f, err := store(1).Get(ctx, k)
		switch {
		case del && winner%2 == 0:
			if !errors.Is(err, tools.ErrFileNotFound) {
				t.Errorf("round %d: the winner deleted the file, Get: %+v, %v", round, f.FileInfo, err)
			}
		case err != nil || string(f.Content) != fmt.Sprintf("writer %02d", winner):
			t.Errorf("round %d: Get = %q, %v; want writer %d's content", round, f.Content, err, winner)
		}
		wantFiles := int64(1)
		if del && winner%2 == 0 {
			wantFiles = 0
		}
		if u := fileUsage(t, store(0), "acme"); u.Files != wantFiles {
			t.Errorf("round %d: usage %+v, want %d files", round, u, wantFiles)
		}
	}
}
