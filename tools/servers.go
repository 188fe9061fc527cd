package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Transports an upstream server is reached over.
const (
	// TransportHTTP is MCP's Streamable HTTP, at UpstreamServer.URL.
	TransportHTTP = "http"
	// TransportStdio runs UpstreamServer.Command and speaks MCP over its standard
	// input and output; only commands the operator allowed may run.
	TransportStdio = "stdio"
)

// Timeouts of an upstream server's calls: DefaultServerTimeout when its
// registration names none, never more than MaxServerTimeout.
const (
	DefaultServerTimeout = 30 * time.Second
	MaxServerTimeout     = 120 * time.Second
)

// Bounds of a registration, which every ServerStore refuses to exceed.
const (
	MaxServerNameLen   = 32
	MaxServerURLBytes  = 2048
	MaxServerCmdBytes  = 1024
	MaxServerArgs      = 64
	MaxServerArgBytes  = 4096 // each argument
	MaxServerEnv       = 32
	MaxServerHeaders   = 32
	MaxServerNameBytes = 128 // an environment variable's or header's name
)

// UpstreamServer is an upstream MCP server a tenant registered: its tools are
// served behind the gateway as novaos.<Name>.<tool>.
type UpstreamServer struct {
	TenantID string `json:"tenant_id"`
	// Name is the server's segment of its tools' names (ValidServerName).
	Name string `json:"name"`
	// Transport is TransportHTTP or TransportStdio.
	Transport string `json:"transport"`
	// URL is an http server's MCP endpoint.
	URL string `json:"url,omitempty"`
	// Command and Args run a stdio server.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env names the environment variables a stdio server is given, and
	// Headers the HTTP headers sent to an http server, in canonical form.
	// Their values are secrets: they are kept only in SealedCredentials.
	Env     []string `json:"env,omitempty"`
	Headers []string `json:"headers,omitempty"`
	// SealedCredentials are the values of Env and Headers, sealed at rest
	// by the service that registered the server; stores keep the bytes
	// exactly as given.
	SealedCredentials []byte `json:"-"`
	// Timeout bounds one call; zero means DefaultServerTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Disabled keeps the registration but serves none of its tools.
	Disabled bool `json:"disabled,omitempty"`

	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CallTimeout is the ceiling of one call of the server's tools.
func (s *UpstreamServer) CallTimeout() time.Duration {
	switch {
	case s.Timeout <= 0:
		return DefaultServerTimeout
	case s.Timeout > MaxServerTimeout:
		return MaxServerTimeout
	}
	return s.Timeout
}

// ServerStore keeps the upstream servers tenants registered.
// store/sqlite and store/postgres implement it, MemoryServerStore keeps
// it in memory; store/storetest is its contract suite. Implementations
// are safe for concurrent use.
type ServerStore interface {
	// PutServer stores s under its tenant and name when the stored
	// version is expectVersion (0: none stored yet), else ErrConflict. It
	// refuses a server that breaks Check. The server comes back as
	// stored: the next version, UpdatedAt the write's time (s.UpdatedAt,
	// or now when zero), CreatedAt that time on creation and the stored
	// one on a replace.
	PutServer(ctx context.Context, s UpstreamServer, expectVersion int64) (UpstreamServer, error)
	// GetServer returns the tenant's server; ErrNotFound when none.
	GetServer(ctx context.Context, tenantID, name string) (UpstreamServer, error)
	// ListServers returns the tenant's servers by name (none: empty).
	ListServers(ctx context.Context, tenantID string) ([]UpstreamServer, error)
	// DeleteServer removes the tenant's server; ErrNotFound when none.
	DeleteServer(ctx context.Context, tenantID, name string) error
}

// ErrInvalidServer is matched (errors.Is) by the error of a server that
// breaks Check.
var ErrInvalidServer = errors.New("tools: invalid server")

// ValidServerName reports whether name can name an upstream server: 1 to
// 32 of a-z, 0-9, '_' and '-', starting with a letter, and none of
// BuiltinServers.
func ValidServerName(name string) bool {
	if name == "" || len(name) > MaxServerNameLen || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return !slices.Contains(BuiltinServers, name)
}

// reservedHeaders are the headers a registration may not set: HTTP's own
// framing and connection headers, and MCP's, which the client writes.
var reservedHeaders = []string{"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Keep-Alive",
	"Last-Event-Id", "Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Mcp-Session-Id", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// Check reports what makes s unusable as a registration, as an error
// matching ErrInvalidServer, or nil: a tenant, a valid name, a known
// transport with its target (a URL, or a command), names within bounds
// and not reserved, and a timeout within MaxServerTimeout.
func (s *UpstreamServer) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidServer, fmt.Sprintf(format, args...))
	}
	switch {
	case s.TenantID == "":
		return bad("no tenant")
	case !ValidServerName(s.Name):
		return bad("name %.40q is not 1 to %d of a-z, 0-9, '_' and '-' starting with a letter, or is a built-in server's",
			s.Name, MaxServerNameLen)
	case s.Timeout < 0 || s.Timeout > MaxServerTimeout:
		return bad("timeout %v is not within 0 and %v", s.Timeout, MaxServerTimeout)
	case len(s.Env) > MaxServerEnv:
		return bad("more than %d environment variables", MaxServerEnv)
	case len(s.Headers) > MaxServerHeaders:
		return bad("more than %d headers", MaxServerHeaders)
	}
	switch s.Transport {
	case TransportHTTP:
		switch {
		case s.URL == "":
			return bad("an http server needs a url")
		case len(s.URL) > MaxServerURLBytes:
			return bad("url longer than %d bytes", MaxServerURLBytes)
		case s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0:
			return bad("an http server has no command, args or env")
		}
	case TransportStdio:
		switch {
		case s.Command == "":
			return bad("a stdio server needs a command")
		case len(s.Command) > MaxServerCmdBytes || strings.ContainsRune(s.Command, 0):
			return bad("command longer than %d bytes or holding NUL", MaxServerCmdBytes)
		case s.URL != "" || len(s.Headers) > 0:
			return bad("a stdio server has no url or headers")
		case len(s.Args) > MaxServerArgs:
			return bad("more than %d args", MaxServerArgs)
		}
		for i, a := range s.Args {
			if len(a) > MaxServerArgBytes || strings.ContainsRune(a, 0) {
				return bad("args[%d] is longer than %d bytes or holds NUL", i, MaxServerArgBytes)
			}
		}
	default:
		return bad("transport %.20q is neither %q nor %q", s.Transport, TransportHTTP, TransportStdio)
	}
	for i, n := range s.Env {
		if !validEnvName(n) {
			return bad("env[%d] is not a variable name (A-Z a-z 0-9 _, not starting with a digit, at most %d bytes)", i, MaxServerNameBytes)
		}
		if slices.Contains(s.Env[:i], n) {
			return bad("env[%d] names %s twice", i, n)
		}
	}
	for i, h := range s.Headers {
		switch {
		case !validHeaderName(h) || http.CanonicalHeaderKey(h) != h:
			return bad("headers[%d] is not a header name in canonical form (at most %d bytes)", i, MaxServerNameBytes)
		case slices.Contains(reservedHeaders, h) || strings.HasPrefix(h, "Mcp-"):
			return bad("headers[%d]: %s is a header the MCP client writes itself", i, h)
		case slices.Contains(s.Headers[:i], h):
			return bad("headers[%d] names %s twice", i, h)
		}
	}
	return nil
}

// ReservedHeader reports whether a registration may not set the header
// name: the HTTP and MCP client sets it itself.
func ReservedHeader(name string) bool {
	name = http.CanonicalHeaderKey(name)
	return slices.Contains(reservedHeaders, name) || strings.HasPrefix(name, "Mcp-")
}

func validEnvName(n string) bool {
	if n == "" || len(n) > MaxServerNameBytes || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// validHeaderName reports whether n is an RFC 9110 token.
func validHeaderName(n string) bool {
	if n == "" || len(n) > MaxServerNameBytes {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// PrepareServer checks a server a ServerStore is about to write and sets
// what a store assigns: the version after expect (0 creates) and the
// times, to the microsecond in UTC (empty lists become nil): UpdatedAt is the write's time
// (time.Now when zero), and on creation CreatedAt too. Stores use it to
// behave alike.
func PrepareServer(s *UpstreamServer, expect int64) error {
	if err := s.Check(); err != nil {
		return err
	}
	if expect < 0 {
		return fmt.Errorf("expected version %d is negative", expect)
	}
	now := s.UpdatedAt
	if now.IsZero() {
		now = time.Now()
	}
	now = time.UnixMicro(now.UnixMicro()).UTC()
	// Empty lists read back from a store's encoding as none.
	for _, l := range []*[]string{&s.Args, &s.Env, &s.Headers} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	s.Version, s.UpdatedAt = expect+1, now
	if expect == 0 {
		s.CreatedAt = now
	}
	return nil
}

// The admin API of upstream servers, for a tenant's admins (scope
// ScopeAdmin, or the operator naming the tenant with TenantHeader):
//
//	GET    ServersPath          the tenant's servers, a ServerList
//	PUT    ServersPath/{name}   create or replace one from a ServerRequest
//	GET    ServersPath/{name}   one, a ServerInfo
//	DELETE ServersPath/{name}   remove one
//
// A server's version is its ETag: a PUT with If-Match: "<version>"
// replaces only that version, one with If-None-Match: * only creates,
// either answering 412 otherwise; a PUT with neither creates or replaces
// whatever is there. Header and environment values are write-only: no
// answer carries them.
const ServersPath = "/api/v1/tools/servers"

// ScopeAdmin lets a token manage its tenant's upstream servers.
const ScopeAdmin = "tools:admin"

// ServerRequest is a whole registration, the body of a PUT.
type ServerRequest struct {
	Transport string   `json:"transport"`
	URL       string   `json:"url,omitempty"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	// Headers (http) and Env (stdio) map names to values. A null value
	// keeps the value stored under that name; a name left out is removed.
	Headers map[string]*string `json:"headers,omitempty"`
	Env     map[string]*string `json:"env,omitempty"`
	// TimeoutMS bounds one call, in milliseconds (0: 30 s; at most
	// 120,000).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	Disabled  bool  `json:"disabled,omitempty"`
}

// ServerInfo is a registration as the admin API answers it: header and
// environment names, never their values.
type ServerInfo struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"`
	URL       string    `json:"url,omitempty"`
	Command   string    `json:"command,omitempty"`
	Args      []string  `json:"args,omitempty"`
	Headers   []string  `json:"headers,omitempty"`
	Env       []string  `json:"env,omitempty"`
	TimeoutMS int64     `json:"timeout_ms"`
	Disabled  bool      `json:"disabled"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Info is s as the admin API answers it.
func (s *UpstreamServer) Info() ServerInfo {
	return ServerInfo{Name: s.Name, Transport: s.Transport, URL: s.URL, Command: s.Command, Args: slices.Clone(s.Args),
		Headers: slices.Clone(s.Headers), Env: slices.Clone(s.Env), TimeoutMS: s.CallTimeout().Milliseconds(),
		Disabled: s.Disabled, Version: s.Version, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// ServerList is the answer of GET ServersPath.
type ServerList struct {
	Servers []ServerInfo `json:"servers"`
}

// Problem types (RFC 9457) of the admin API, beside the platform's
// invalid-request (400), version-conflict (409) and
// precondition-failed (412).
const (
	ProblemServerNotFound = "https://novaos.dev/problems/tool-server-not-found" // 404
	ProblemServerLimit    = "https://novaos.dev/problems/tool-server-limit"     // 409, the tenant has the most servers allowed
)
