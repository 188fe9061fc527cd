package files

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/strictjson"
	"novaos.dev/novaos/tools"
)

// The provider's tools.
const (
	ToolWrite  = tools.Prefix + tools.ServerFiles + ".write"
	ToolRead   = tools.Prefix + tools.ServerFiles + ".read"
	ToolList   = tools.Prefix + tools.ServerFiles + ".list"
	ToolDelete = tools.Prefix + tools.ServerFiles + ".delete"
)

// The areas a call names in its scope argument.
const (
	// AreaAgent is the calling agent's own area, the default: files only
	// that agent reads and writes.
	AreaAgent = "agent"
	// AreaTenant is the tenant's shared area: files every agent of the
	// tenant with the tenant scopes reads and writes.
	AreaTenant = "tenant"
)

// Scopes a call needs, files:<read|write>:<area>. A tool's Tool.Scopes
// name the agent area's, which the gateway requires of every call (and
// tools/list filters by); a call in the tenant's area needs the tenant
// scope as well, which the provider checks. files:read:* grants both
// areas' reads, files:* everything.
const (
	ScopeReadAgent   = "files:read:agent"
	ScopeWriteAgent  = "files:write:agent"
	ScopeReadTenant  = "files:read:tenant"
	ScopeWriteTenant = "files:write:tenant"
)

// Reasons of the provider's failed results, beside tools.ReasonInvalidArguments
// (a path, prefix, cursor, encoding or content type that breaks the rules).
const (
	ReasonQuotaExceeded   = "QUOTA_EXCEEDED"
	ReasonFileNotFound    = "FILE_NOT_FOUND"
	ReasonVersionConflict = "VERSION_CONFLICT"
	ReasonFileTooLarge    = "FILE_TOO_LARGE"
)

// Encodings of a file's content in a write's arguments and a read's
// result.
const (
	EncodingText   = "text"
	EncodingBase64 = "base64"
)

// Defaults of Options.
const (
	DefaultTenantQuotaBytes = 1 << 30
	DefaultTenantMaxFiles   = 10_000
	DefaultMaxFileBytes     = 10 << 20
)

// Page sizes of novaos.files.list.
const (
	DefaultListLimit = 100
	MaxListLimit     = 500
)

// Options tune a Provider. Nil means the defaults.
type Options struct {
	// TenantQuotaBytes bounds the content bytes of a tenant's files, over
	// every area (default DefaultTenantQuotaBytes, 1 GiB).
	TenantQuotaBytes int64
	// TenantMaxFiles bounds how many files a tenant keeps (default
	// DefaultTenantMaxFiles, 10,000).
	TenantMaxFiles int64
	// MaxFileBytes bounds one file's content (default
	// DefaultMaxFileBytes, 10 MiB; at most tools.MaxFileSize). A write's
	// arguments may be up to six times as long, plus 64 KiB: text
	// content in JSON escapes, base64 content four bytes for three.
	MaxFileBytes int64
	// Now is the clock of writes (default: the store's).
	Now func() time.Time
	// Logger receives the store's failures, which a caller sees only as
	// tools.ReasonUnavailable (default: discarded).
	Logger *slog.Logger
}

// Provider serves novaos.files.*, files an agent keeps for itself or
// shares with its tenant, from a tools.FileStore (see the package doc).
type Provider struct {
	store tools.FileStore
	o     Options
}

var _ toolgw.Provider = (*Provider)(nil)

// New returns a Provider of the files in store. A nil store still lists
// the tools, whose calls then fail with tools.ReasonServiceDisabled: a
// platform without file storage says so instead of hiding the tools.
func New(store tools.FileStore, opts *Options) (*Provider, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.TenantQuotaBytes < 0 || o.TenantMaxFiles < 0 || o.MaxFileBytes < 0:
		return nil, errors.New("files: negative limits in the options")
	case o.MaxFileBytes > tools.MaxFileSize:
		return nil, fmt.Errorf("files: MaxFileBytes %d is more than a store keeps, %d", o.MaxFileBytes, tools.MaxFileSize)
	}
	if o.TenantQuotaBytes == 0 {
		o.TenantQuotaBytes = DefaultTenantQuotaBytes
	}
	if o.TenantMaxFiles == 0 {
		o.TenantMaxFiles = DefaultTenantMaxFiles
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Provider{store: store, o: o}, nil
}

// Tools lists the four tools, for any caller: the gateway filters them
// by scope. Each call returns values of its own.
func (p *Provider) Tools(ctx context.Context, c *toolgw.Caller) ([]toolgw.Tool, error) {
	return catalog(), nil
}

func (p *Provider) Find(ctx context.Context, c *toolgw.Caller, name string) (*toolgw.Tool, bool, error) {
	// The gateway asks for every name it is sent: another server's
	// costs no catalog.
	if tools.Server(name) != tools.ServerFiles {
		return nil, false, nil
	}
	for _, t := range catalog() {
		if t.Name == name {
			return &t, true, nil
		}
	}
	return nil, false, nil
}

// maxArgs bounds a call's arguments.
func (p *Provider) maxArgs() int64 { return 6*p.o.MaxFileBytes + 64<<10 }

// Call runs one of the provider's tools. A file that breaks a rule, is
// missing, changed or does not fit answers a result with IsError and one
// of the package's reasons; a caller without the area's scope, a store
// that is off or failing answer a *toolgw.Error.
func (p *Provider) Call(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if r == nil || r.Tool == nil || r.Caller == nil {
		return nil, errors.New("files: a call without its tool or caller")
	}
	if r.Caller.Tenant == "" {
		return nil, errors.New("files: the caller names no tenant")
	}
	if p.store == nil {
		return nil, toolgw.Failf(tools.ReasonServiceDisabled, "file storage is not configured on this platform")
	}
	if int64(len(r.Arguments)) > p.maxArgs() {
		return toolgw.ErrorResult(ReasonFileTooLarge, fmt.Sprintf("the arguments are %d bytes, more than the %d a file of at most %d bytes needs",
			len(r.Arguments), p.maxArgs(), p.o.MaxFileBytes)), nil
	}
	var (
		res *mcp.CallToolResult
		err error
	)
	switch r.Tool.Name {
	case ToolWrite:
		res, err = p.write(ctx, r)
	case ToolRead:
		res, err = p.read(ctx, r)
	case ToolList:
		res, err = p.list(ctx, r)
	case ToolDelete:
		res, err = p.delete(ctx, r)
	default:
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "%s is not a files tool", r.Tool.Name)
	}
	if err != nil {
		return p.failure(ctx, r, err)
	}
	return res, nil
}

// badArgs is a call's arguments that break a rule: a result the caller
// reads, with tools.ReasonInvalidArguments.
type badArgs struct{ msg string }

func (e *badArgs) Error() string { return e.msg }

func invalid(format string, args ...any) error { return &badArgs{fmt.Sprintf(format, args...)} }

// failure turns what went wrong in a call into its answer: a result with
// IsError for what the caller can mend, an error otherwise. A store's
// own failures are logged and reported without their detail.
func (p *Provider) failure(ctx context.Context, r *toolgw.Request, err error) (*mcp.CallToolResult, error) {
	var (
		bad *badArgs
		qe  *tools.QuotaError
		te  *toolgw.Error
	)
	switch {
	case errors.As(err, &te):
		return nil, te
	case errors.As(err, &bad):
		return toolgw.ErrorResult(tools.ReasonInvalidArguments, bad.msg), nil
	case errors.As(err, &qe):
		return toolgw.ErrorResult(ReasonQuotaExceeded, quotaMessage(qe)), nil
	case errors.Is(err, tools.ErrFileNotFound):
		return toolgw.ErrorResult(ReasonFileNotFound, "no such file"), nil
	case errors.Is(err, tools.ErrFileConflict):
		return toolgw.ErrorResult(ReasonVersionConflict, "the file is not at the version if_version names (it was written or deleted since); read it again"), nil
	case errors.Is(err, tools.ErrFileTooLarge):
		return toolgw.ErrorResult(ReasonFileTooLarge, fmt.Sprintf("a file holds at most %d bytes", p.o.MaxFileBytes)), nil
	case errors.Is(err, tools.ErrInvalidFile):
		// The provider checks keys before the store; this is a rule
		// only the store knows.
		return toolgw.ErrorResult(tools.ReasonInvalidArguments, "the store refused the file's key or content type"), nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("files: %s: %w", r.Tool.Name, ctx.Err())
	}
	p.o.Logger.ErrorContext(ctx, "files: the file store failed", "tool", r.Tool.Name, "tenant", r.Caller.Tenant, "call", r.CallID, "err", err)
	return nil, toolgw.Failf(tools.ReasonUnavailable, "the file store failed; try again later")
}

func quotaMessage(qe *tools.QuotaError) string {
	if qe.Kind == tools.QuotaFiles {
		return fmt.Sprintf("the tenant keeps %d files, its quota is %d: delete some first", qe.Used, qe.Quota)
	}
	return fmt.Sprintf("the tenant's files take %d bytes and would take %d, its quota is %d: delete or shrink some first",
		qe.Used, qe.Want, qe.Quota)
}

// decode reads a call's arguments into v: one JSON object with the
// member names fields lists and no other, none twice.
func decode(args json.RawMessage, v any, fields ...string) error {
	names := make(map[string]*strictjson.Fields, len(fields))
	for _, f := range fields {
		names[f] = nil
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := strictjson.Decode(args, v, &strictjson.Options{Object: true, MaxDepth: 2, Fields: &strictjson.Fields{Names: names}}, false); err != nil {
		return invalid("arguments: %v", err)
	}
	return nil
}

// key is the file a call names: path in the area of scope, which the
// caller needs scope prefix+area to reach.
func key(c *toolgw.Caller, scope, path, prefix string) (tools.FileKey, error) {
	k := tools.FileKey{Tenant: c.Tenant, Path: path}
	switch scope {
	case "", AreaAgent:
		if c.Agent == "" {
			return k, invalid("the caller's token names no agent, so it has no agent area; use scope %q", AreaTenant)
		}
		k.Agent, scope = c.Agent, AreaAgent
	case AreaTenant:
	default:
		return k, invalid("scope %q is neither %q nor %q", scope, AreaAgent, AreaTenant)
	}
	if need := prefix + scope; !identity.AnyScopeMatches(c.Scopes, need) {
		return k, &toolgw.Error{Reason: tools.ReasonInsufficientScope, Message: "the call needs scope " + need}
	}
	return k, nil
}

func checkPath(path string) error {
	if err := tools.ValidateFilePath(path); err != nil {
		return invalid("%s", strings.TrimPrefix(err.Error(), tools.ErrInvalidFile.Error()+": "))
	}
	return nil
}

type writeArgs struct {
	Path        string  `json:"path"`
	Content     *string `json:"content"`
	Encoding    string  `json:"encoding"`
	ContentType string  `json:"content_type"`
	Scope       string  `json:"scope"`
	IfVersion   *int64  `json:"if_version"`
}

type writeResult struct {
	Path    string `json:"path"`
	Version int64  `json:"version"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
}

func (p *Provider) write(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	var a writeArgs
	if err := decode(r.Arguments, &a, "path", "content", "encoding", "content_type", "scope", "if_version"); err != nil {
		return nil, err
	}
	k, err := key(r.Caller, a.Scope, a.Path, "files:write:")
	if err != nil {
		return nil, err
	}
	if err := checkPath(a.Path); err != nil {
		return nil, err
	}
	if a.Content == nil {
		return nil, invalid("content is required (an empty string writes an empty file)")
	}
	if a.IfVersion != nil && *a.IfVersion < 0 {
		return nil, invalid("if_version %d is negative", *a.IfVersion)
	}
	var content []byte
	switch a.Encoding {
	case "", EncodingText:
		if int64(len(*a.Content)) > p.o.MaxFileBytes {
			return nil, tools.ErrFileTooLarge
		}
		content = []byte(*a.Content)
	case EncodingBase64:
		if int64(base64.StdEncoding.DecodedLen(len(*a.Content))) > p.o.MaxFileBytes+3 {
			return nil, tools.ErrFileTooLarge
		}
		if content, err = decodeBase64(*a.Content); err != nil {
			return nil, err
		}
		if int64(len(content)) > p.o.MaxFileBytes {
			return nil, tools.ErrFileTooLarge
		}
	default:
		return nil, invalid("encoding %q is neither %q nor %q", a.Encoding, EncodingText, EncodingBase64)
	}
	ct, err := contentType(a.ContentType, a.Encoding, content)
	if err != nil {
		return nil, err
	}
	put := tools.FilePut{FileKey: k, Content: content, ContentType: ct, IfVersion: a.IfVersion,
		Quota: tools.FileQuota{Bytes: p.o.TenantQuotaBytes, Files: p.o.TenantMaxFiles}}
	if p.o.Now != nil {
		put.Now = p.o.Now()
	}
	fi, err := p.store.Put(ctx, put)
	if err != nil {
		return nil, err
	}
	return toolgw.JSONResult(writeResult{Path: fi.Path, Version: fi.Version, Size: fi.Size, SHA256: fi.SHA256})
}

// decodeBase64 reads standard base64, padded or not; line breaks are
// ignored.
func decodeBase64(s string) ([]byte, error) {
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "=\r\n"))
	if err != nil {
		return nil, invalid("content is not base64: %v", err)
	}
	return b, nil
}

// contentType is the content type a write stores: the one given, when it
// parses as a media type, else text/plain for text and what the content
// sniffs as (http.DetectContentType) for base64.
func contentType(given, encoding string, content []byte) (string, error) {
	if given == "" {
		if encoding == EncodingBase64 {
			return http.DetectContentType(content), nil
		}
		return "text/plain; charset=utf-8", nil
	}
	if len(given) > tools.MaxFileContentType {
		return "", invalid("content_type is longer than %d bytes", tools.MaxFileContentType)
	}
	if _, _, err := mime.ParseMediaType(given); err != nil {
		return "", invalid("content_type %q is not a media type: %v", given, err)
	}
	return given, nil
}

// textual reports whether content of type ct is read back as text: a
// text/* or JSON type (application/json, …+json).
func textual(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json")
}

type readArgs struct {
	Path  string `json:"path"`
	Scope string `json:"scope"`
}

type readResult struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Encoding    string `json:"encoding"`
	ContentType string `json:"content_type"`
	Version     int64  `json:"version"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
}

func (p *Provider) read(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	var a readArgs
	if err := decode(r.Arguments, &a, "path", "scope"); err != nil {
		return nil, err
	}
	k, err := key(r.Caller, a.Scope, a.Path, "files:read:")
	if err != nil {
		return nil, err
	}
	if err := checkPath(a.Path); err != nil {
		return nil, err
	}
	f, err := p.store.Get(ctx, k)
	if err != nil {
		return nil, err
	}
	out := readResult{Path: f.Path, ContentType: f.ContentType, Version: f.Version, Size: f.Size, SHA256: f.SHA256}
	if textual(f.ContentType) && utf8.Valid(f.Content) {
		out.Content, out.Encoding = string(f.Content), EncodingText
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(f.Content), EncodingBase64
	}
	return toolgw.JSONResult(out)
}

type listArgs struct {
	Prefix string `json:"prefix"`
	Scope  string `json:"scope"`
	Cursor string `json:"cursor"`
	Limit  *int   `json:"limit"`
}

type listedFile struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	Version     int64  `json:"version"`
	ContentType string `json:"content_type"`
	UpdatedAt   string `json:"updated_at"`
}

type listResult struct {
	Files []listedFile `json:"files"`
	// NextCursor continues the listing; "" when it is complete.
	NextCursor string `json:"next_cursor"`
}

func (p *Provider) list(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	var a listArgs
	if err := decode(r.Arguments, &a, "prefix", "scope", "cursor", "limit"); err != nil {
		return nil, err
	}
	k, err := key(r.Caller, a.Scope, "", "files:read:")
	if err != nil {
		return nil, err
	}
	if err := tools.ValidateFilePrefix(a.Prefix); err != nil {
		return nil, invalid("%s", strings.TrimPrefix(err.Error(), tools.ErrInvalidFile.Error()+": "))
	}
	limit := DefaultListLimit
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > MaxListLimit {
			return nil, invalid("limit %d is not between 1 and %d", *a.Limit, MaxListLimit)
		}
		limit = *a.Limit
	}
	after, err := decodeCursor(a.Cursor)
	if err != nil {
		return nil, err
	}
	// One more than the page tells whether there is a next one.
	fs, err := p.store.List(ctx, tools.FileFilter{Tenant: k.Tenant, Agent: k.Agent, Prefix: a.Prefix, After: after, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	out := listResult{Files: make([]listedFile, 0, min(len(fs), limit))}
	for i, f := range fs {
		if i == limit {
			out.NextCursor = encodeCursor(fs[i-1].Path)
			break
		}
		out.Files = append(out.Files, listedFile{Path: f.Path, Size: f.Size, Version: f.Version, ContentType: f.ContentType,
			UpdatedAt: f.UpdatedAt.UTC().Format(time.RFC3339Nano)})
	}
	return toolgw.JSONResult(out)
}

// A cursor is the last path of the page before, in unpadded URL-safe
// base64: opaque to a caller, and never more than a path.
func encodeCursor(path string) string { return base64.RawURLEncoding.EncodeToString([]byte(path)) }

func decodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	if len(c) > base64.RawURLEncoding.EncodedLen(tools.MaxFilePath) {
		return "", invalid("cursor is not one a listing returned")
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || tools.ValidateFilePath(string(b)) != nil {
		return "", invalid("cursor is not one a listing returned")
	}
	return string(b), nil
}

type deleteArgs struct {
	Path      string `json:"path"`
	Scope     string `json:"scope"`
	IfVersion *int64 `json:"if_version"`
}

func (p *Provider) delete(ctx context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	var a deleteArgs
	if err := decode(r.Arguments, &a, "path", "scope", "if_version"); err != nil {
		return nil, err
	}
	k, err := key(r.Caller, a.Scope, a.Path, "files:write:")
	if err != nil {
		return nil, err
	}
	if err := checkPath(a.Path); err != nil {
		return nil, err
	}
	var v int64
	if a.IfVersion != nil {
		if *a.IfVersion < 1 {
			return nil, invalid("if_version %d is not a version (versions start at 1)", *a.IfVersion)
		}
		v = *a.IfVersion
	}
	if err := p.store.Delete(ctx, k, v); err != nil {
		return nil, err
	}
	return toolgw.JSONResult(struct {
		Deleted bool `json:"deleted"`
	}{true})
}
