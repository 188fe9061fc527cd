package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// FileStore keeps the files of novaos.files.*: small documents an agent
// writes for itself or shares with its tenant, with a quota per tenant.
//
// A file is named by a FileKey: its tenant, its area and its path. The
// area is an agent's own (Agent set to the agent's id), which only that
// agent reads and writes, or the tenant's shared area (Agent ""), which
// every agent of the tenant with the shared scopes reads and writes.
//
// Content lives in the database, beside the file's record, not on a file
// system or in an object store: one backup holds it, the quota is checked
// and the content written in one transaction, and every replica sees the
// same files. That suits what agents keep here (notes, reports, small
// data sets), and bounds a file at MaxFileSize; a platform sets its own,
// smaller limit (10 MiB by default).
//
// Every method is safe for concurrent use, by several processes where the
// database is shared. Errors wrap ErrInvalidFile, ErrFileTooLarge,
// ErrFileNotFound, ErrFileConflict and ErrQuotaExceeded (a *QuotaError)
// with context; callers branch with errors.Is and errors.As.
type FileStore interface {
	// Put creates the file p names or replaces it, as one step with the
	// check of p.IfVersion and of the tenant's quota: a put that would
	// take the tenant's usage past p.Quota fails with a *QuotaError and
	// changes nothing, however many puts run at once, on however many
	// replicas. The file's new version is the tenant's next (versions are
	// unique in a tenant and only grow, so a file deleted and written
	// again never gets back a version it had). CreatedAt is kept on a
	// replace; UpdatedAt is p.Now.
	Put(ctx context.Context, p FilePut) (FileInfo, error)
	// Get returns a file and its content.
	Get(ctx context.Context, k FileKey) (File, error)
	// List returns the files of one area whose path starts with
	// f.Prefix and sorts after f.After, in byte order of their paths.
	List(ctx context.Context, f FileFilter) ([]FileInfo, error)
	// Delete removes a file, if its version is ifVersion when that is
	// not 0 (ErrFileConflict otherwise), and gives its bytes back to the
	// tenant's quota.
	Delete(ctx context.Context, k FileKey, ifVersion int64) error
	// Usage returns the tenant's usage, over every area: what Put counts
	// against a quota.
	Usage(ctx context.Context, tenant string) (FileUsage, error)
}

// Errors of a FileStore.
var (
	// ErrInvalidFile: a key, path, prefix, content type or condition
	// that breaks the rules of FileKey, ValidateFilePath or FilePut.
	ErrInvalidFile = errors.New("tools: invalid file")
	// ErrFileTooLarge: content longer than the limit (MaxFileSize in a
	// store, a platform's own limit before it).
	ErrFileTooLarge = errors.New("tools: file too large")
	// ErrFileNotFound: no file by that key.
	ErrFileNotFound = errors.New("tools: file not found")
	// ErrFileConflict: a put or delete named a version that is not the
	// file's (or, for a put with IfVersion 0, the file exists).
	ErrFileConflict = errors.New("tools: file version conflict")
	// ErrQuotaExceeded: a put would take the tenant past its quota. The
	// error is a *QuotaError.
	ErrQuotaExceeded = errors.New("tools: file quota exceeded")
)

// Limits of a stored file.
const (
	// MaxFileSize bounds a file's content in every store: a row that
	// large still moves through a database without trouble.
	MaxFileSize = 64 << 20
	// MaxFilePath bounds a path, in bytes.
	MaxFilePath = 512
	// MaxFileKeyText bounds a key's tenant and agent, in bytes.
	MaxFileKeyText = 256
	// MaxFileContentType bounds a content type, in bytes.
	MaxFileContentType = 255
	// MaxFilePage is the longest page List returns.
	MaxFilePage = 1000
)

// FileKey names a file.
type FileKey struct {
	Tenant string
	// Agent is the agent whose own area holds the file; "" is the
	// tenant's shared area.
	Agent string
	// Path is where the file is in its area (see ValidateFilePath).
	Path string
}

// Validate checks k: a tenant of 1 to MaxFileKeyText bytes, an agent of
// at most that many, both valid UTF-8 without NUL (what every database
// stores as text), and a path ValidateFilePath accepts.
func (k FileKey) Validate() error {
	if err := validKeyText("tenant", k.Tenant, false); err != nil {
		return err
	}
	if err := validKeyText("agent", k.Agent, true); err != nil {
		return err
	}
	return ValidateFilePath(k.Path)
}

func validKeyText(what, s string, empty bool) error {
	switch {
	case s == "" && !empty:
		return fmt.Errorf("%w: no %s", ErrInvalidFile, what)
	case len(s) > MaxFileKeyText:
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalidFile, what, MaxFileKeyText)
	case !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %s is not valid UTF-8 text without NUL", ErrInvalidFile, what)
	}
	return nil
}

// ValidateFilePath checks a file's path: 1 to MaxFilePath bytes of
// UTF-8, relative (no leading "/"), made of segments joined by "/" where
// each segment is one or more printable characters (unicode.IsPrint: no
// control characters, no NUL) and neither "." nor "..". Such a path is
// already clean (path.Clean leaves it as it is) and names one place in
// its area, however a client maps it onto a file system.
func ValidateFilePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", ErrInvalidFile)
	case len(p) > MaxFilePath:
		return fmt.Errorf("%w: path longer than %d bytes", ErrInvalidFile, MaxFilePath)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: path is not valid UTF-8", ErrInvalidFile)
	case p[0] == '/':
		return fmt.Errorf("%w: path %q is absolute; paths are relative to their area", ErrInvalidFile, p)
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: path %q has an empty segment", ErrInvalidFile, p)
		case ".", "..":
			return fmt.Errorf("%w: path %q has a %q segment", ErrInvalidFile, p, seg)
		}
		if err := printable(seg, false); err != nil {
			return fmt.Errorf("%w: path %q %s", ErrInvalidFile, p, err)
		}
	}
	return nil
}

// ValidateFilePrefix checks a listing's prefix: what may begin a path.
// The empty prefix lists a whole area; otherwise it is at most
// MaxFilePath bytes of printable UTF-8 and "/", not starting with "/". It
// may end in the middle of a segment ("reports/2026-") or after a "/".
func ValidateFilePrefix(p string) error {
	switch {
	case p == "":
		return nil
	case len(p) > MaxFilePath:
		return fmt.Errorf("%w: prefix longer than %d bytes", ErrInvalidFile, MaxFilePath)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: prefix is not valid UTF-8", ErrInvalidFile)
	case p[0] == '/':
		return fmt.Errorf("%w: prefix %q is absolute; paths are relative to their area", ErrInvalidFile, p)
	}
	if err := printable(p, true); err != nil {
		return fmt.Errorf("%w: prefix %q %s", ErrInvalidFile, p, err)
	}
	return nil
}

// printable says what in s is not printable (a "/" counts as printable
// when slash is set), nil when nothing is. s is valid UTF-8.
func printable(s string, slash bool) error {
	for i, r := range s {
		if !unicode.IsPrint(r) || r == '/' && !slash {
			return fmt.Errorf("has the unprintable character %U at byte %d", r, i)
		}
	}
	return nil
}

// FileInfo describes a stored file.
type FileInfo struct {
	FileKey
	// Size is the content's length in bytes.
	Size int64
	// Version is the tenant's version counter at the file's last put.
	Version int64
	// ContentType is the media type the writer gave, as given ("" when
	// none was).
	ContentType string
	// SHA256 is the content's SHA-256 digest in lower-case hex.
	SHA256 string
	// CreatedAt is when the file was created (since it was last
	// deleted); UpdatedAt when it was last put. Stores keep them to the
	// microsecond, in UTC.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// File is a stored file with its content.
type File struct {
	FileInfo
	Content []byte
}

// FilePut is one write of a file.
type FilePut struct {
	FileKey
	Content []byte
	// ContentType is stored as given: at most MaxFileContentType bytes of
	// valid UTF-8 without NUL.
	ContentType string
	// IfVersion, when not nil, makes the put conditional: the file's
	// version must be *IfVersion, where 0 means that the file must not
	// exist. Otherwise the put fails with ErrFileConflict.
	IfVersion *int64
	// Quota is what the tenant may hold once the put is done.
	Quota FileQuota
	// Now is the put's time; zero means the store's clock.
	Now time.Time
}

// Validate checks p: its key (FileKey.Validate), its content (at most
// MaxFileSize bytes, ErrFileTooLarge beyond), its content type and its
// condition (not negative).
func (p *FilePut) Validate() error {
	if err := p.FileKey.Validate(); err != nil {
		return err
	}
	if len(p.Content) > MaxFileSize {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrFileTooLarge, len(p.Content), MaxFileSize)
	}
	if len(p.ContentType) > MaxFileContentType || !utf8.ValidString(p.ContentType) || strings.IndexByte(p.ContentType, 0) >= 0 {
		return fmt.Errorf("%w: content type is not at most %d bytes of UTF-8 text without NUL", ErrInvalidFile, MaxFileContentType)
	}
	if p.IfVersion != nil && *p.IfVersion < 0 {
		return fmt.Errorf("%w: expected version %d is negative", ErrInvalidFile, *p.IfVersion)
	}
	return nil
}

// FileFilter selects the files of one area.
type FileFilter struct {
	Tenant string
	// Agent names the area, as in FileKey: "" is the tenant's shared
	// area.
	Agent string
	// Prefix, when set, selects the paths that start with it (see
	// ValidateFilePrefix).
	Prefix string
	// After continues a listing after this path.
	After string
	// Limit bounds the page; zero or more than MaxFilePage means
	// MaxFilePage.
	Limit int
}

// Validate checks f's tenant, agent and prefix as FileKey.Validate and
// ValidateFilePrefix do, and that After, when set, is valid UTF-8 text
// of at most MaxFilePath bytes without NUL.
func (f *FileFilter) Validate() error {
	if err := validKeyText("tenant", f.Tenant, false); err != nil {
		return err
	}
	if err := validKeyText("agent", f.Agent, true); err != nil {
		return err
	}
	if err := ValidateFilePrefix(f.Prefix); err != nil {
		return err
	}
	if len(f.After) > MaxFilePath || !utf8.ValidString(f.After) || strings.IndexByte(f.After, 0) >= 0 {
		return fmt.Errorf("%w: the path to list after is not at most %d bytes of UTF-8 text without NUL", ErrInvalidFile, MaxFilePath)
	}
	return nil
}

// FileUsage is what a tenant's files take.
type FileUsage struct {
	// Bytes is the sum of their sizes.
	Bytes int64
	// Files is how many there are.
	Files int64
}

// FileQuota bounds a tenant's usage. A limit of zero (or less) sets no
// bound of its kind.
type FileQuota struct {
	Bytes int64
	Files int64
}

// Kinds of a QuotaError.
const (
	QuotaBytes = "bytes"
	QuotaFiles = "files"
)

// QuotaError is a put refused because it would take a tenant past its
// quota. It matches ErrQuotaExceeded.
type QuotaError struct {
	Tenant string
	// Kind is what would run out: QuotaBytes or QuotaFiles.
	Kind string
	// Quota is the limit; Used the usage before the put and Want what it
	// would have been after.
	Quota, Used, Want int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("tools: file quota exceeded: tenant %q would hold %d %s, its quota is %d (it holds %d)",
		e.Tenant, e.Want, e.Kind, e.Quota, e.Used)
}

// Is makes a *QuotaError match ErrQuotaExceeded.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// Check says whether the tenant's usage may go from before to after: nil,
// or a *QuotaError naming the limit it would break. Only growth is
// refused: a put that takes no more bytes (or files) than before passes
// even when the tenant is over its quota already (a lowered quota), so a
// tenant can always shrink its files.
func (q FileQuota) Check(tenant string, before, after FileUsage) error {
	if q.Bytes > 0 && after.Bytes > q.Bytes && after.Bytes > before.Bytes {
		return &QuotaError{Tenant: tenant, Kind: QuotaBytes, Quota: q.Bytes, Used: before.Bytes, Want: after.Bytes}
	}
	if q.Files > 0 && after.Files > q.Files && after.Files > before.Files {
		return &QuotaError{Tenant: tenant, Kind: QuotaFiles, Quota: q.Files, Used: before.Files, Want: after.Files}
	}
	return nil
}
