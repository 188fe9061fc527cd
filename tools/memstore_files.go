package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryFileStore is a [FileStore] in process memory, for tests and for
// a server without a database. It keeps what the SQL stores keep, the
// way they keep it: times to the microsecond in UTC, content byte for
// byte; the content it returns is the caller's to change. One lock
// serializes its writes, which is how a put's quota check and write are
// one step. Each area keeps its paths sorted, so a listing reads only
// the page it returns.
type MemoryFileStore struct {
	mu      sync.RWMutex
	tenants map[string]*memFileTenant
}

var _ FileStore = (*MemoryFileStore)(nil)

// NewMemoryFileStore returns an empty MemoryFileStore.
func NewMemoryFileStore() *MemoryFileStore {
	return &MemoryFileStore{tenants: map[string]*memFileTenant{}}
}

// memFileTenant is one tenant's files and the counters a put checks.
type memFileTenant struct {
	usage FileUsage
	last  int64 // the last version given
	areas map[string]*memFileArea
}

// memFileArea is one area's files, by path, and their paths in byte
// order.
type memFileArea struct {
	files map[string]*File
	paths []string
}

func (s *MemoryFileStore) Put(ctx context.Context, p FilePut) (FileInfo, error) {
	what := "tools: put file " + p.Path
	if err := p.Validate(); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := ctx.Err(); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", what, err)
	}
	now := p.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = time.UnixMicro(now.UnixMicro()).UTC()
	sum := sha256.Sum256(p.Content)
	f := &File{
		FileInfo: FileInfo{FileKey: p.FileKey, Size: int64(len(p.Content)), ContentType: p.ContentType,
			SHA256: hex.EncodeToString(sum[:]), CreatedAt: now, UpdatedAt: now},
		Content: slices.Clone(p.Content),
	}
	if f.Content == nil {
		f.Content = []byte{}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tenants[p.Tenant]
	if t == nil {
		t = &memFileTenant{areas: map[string]*memFileArea{}}
	}
	a := t.areas[p.Agent]
	var old *File
	if a != nil {
		old = a.files[p.Path]
	}
	if p.IfVersion != nil {
		switch {
		case *p.IfVersion == 0 && old != nil:
			return FileInfo{}, fmt.Errorf("%s: it exists, at version %d: %w", what, old.Version, ErrFileConflict)
		case *p.IfVersion != 0 && old == nil:
			return FileInfo{}, fmt.Errorf("%s: expected version %d, but it does not exist: %w", what, *p.IfVersion, ErrFileConflict)
		case *p.IfVersion != 0 && old.Version != *p.IfVersion:
			return FileInfo{}, fmt.Errorf("%s: version %d is not the current %d: %w", what, *p.IfVersion, old.Version, ErrFileConflict)
		}
	}
	after := t.usage
	after.Bytes += f.Size
	if old != nil {
		after.Bytes -= old.Size
		f.CreatedAt = old.CreatedAt
	} else {
		after.Files++
	}
	if err := p.Quota.Check(p.Tenant, t.usage, after); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", what, err)
	}

	s.tenants[p.Tenant] = t
	if a == nil {
		a = &memFileArea{files: map[string]*File{}}
		t.areas[p.Agent] = a
	}
	if old == nil {
		i, _ := slices.BinarySearch(a.paths, p.Path)
		a.paths = slices.Insert(a.paths, i, p.Path)
	}
	t.last++
	t.usage = after
	f.Version = t.last
	a.files[p.Path] = f
	return f.FileInfo, nil
}

func (s *MemoryFileStore) Get(ctx context.Context, k FileKey) (File, error) {
	what := "tools: get file " + k.Path
	if err := k.Validate(); err != nil {
		return File{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := ctx.Err(); err != nil {
		return File{}, fmt.Errorf("%s: %w", what, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	f := s.find(k)
	if f == nil {
		return File{}, fmt.Errorf("%s: %w", what, ErrFileNotFound)
	}
	out := *f
	out.Content = slices.Clone(f.Content)
	return out, nil
}

// find returns the stored file k names, nil when there is none. s.mu is
// held.
func (s *MemoryFileStore) find(k FileKey) *File {
	t := s.tenants[k.Tenant]
	if t == nil {
		return nil
	}
	a := t.areas[k.Agent]
	if a == nil {
		return nil
	}
	return a.files[k.Path]
}

func (s *MemoryFileStore) List(ctx context.Context, f FileFilter) ([]FileInfo, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("tools: list files: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("tools: list files: %w", err)
	}
	limit := f.Limit
	if limit <= 0 || limit > MaxFilePage {
		limit = MaxFilePage
	}
	out := []FileInfo{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.tenants[f.Tenant]
	if t == nil {
		return out, nil
	}
	a := t.areas[f.Agent]
	if a == nil {
		return out, nil
	}
	// The page starts at the first path past both After and the start of
	// the prefix's range, and ends at the first path out of that range.
	i, _ := slices.BinarySearch(a.paths, f.Prefix)
	if f.After >= f.Prefix {
		j, found := slices.BinarySearch(a.paths, f.After)
		if found {
			j++
		}
		i = j
	}
	for ; i < len(a.paths) && len(out) < limit; i++ {
		p := a.paths[i]
		if !strings.HasPrefix(p, f.Prefix) {
			break
		}
		out = append(out, a.files[p].FileInfo)
	}
	return out, nil
}

func (s *MemoryFileStore) Delete(ctx context.Context, k FileKey, ifVersion int64) error {
	what := "tools: delete file " + k.Path
	if err := k.Validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if ifVersion < 0 {
		return fmt.Errorf("%s: %w: expected version %d is negative", what, ErrInvalidFile, ifVersion)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.find(k)
	switch {
	case f == nil:
		return fmt.Errorf("%s: %w", what, ErrFileNotFound)
	case ifVersion != 0 && f.Version != ifVersion:
		return fmt.Errorf("%s: version %d is not the current %d: %w", what, ifVersion, f.Version, ErrFileConflict)
	}
	t := s.tenants[k.Tenant]
	a := t.areas[k.Agent]
	delete(a.files, k.Path)
	if i, found := slices.BinarySearch(a.paths, k.Path); found {
		a.paths = slices.Delete(a.paths, i, i+1)
	}
	if len(a.files) == 0 {
		delete(t.areas, k.Agent)
	}
	// The tenant stays, with its last version, so that versions keep
	// growing.
	t.usage.Bytes -= f.Size
	t.usage.Files--
	return nil
}

func (s *MemoryFileStore) Usage(ctx context.Context, tenant string) (FileUsage, error) {
	if err := validKeyText("tenant", tenant, false); err != nil {
		return FileUsage{}, fmt.Errorf("tools: file usage: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return FileUsage{}, fmt.Errorf("tools: file usage: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if t := s.tenants[tenant]; t != nil {
		return t.usage, nil
	}
	return FileUsage{}, nil
}
