package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/instrument"
	"novaos.dev/novaos/internal/toolgw"
	"novaos.dev/novaos/netguard"
	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/strictjson"
	"novaos.dev/novaos/tools"
)

// Connector tiers, as the connector host's catalog names them. A
// standard connector's tools are novaos.connector.<id>.<op>; a licensed
// or ext one's carry the tier as one more segment,
// novaos.connector.licensed.<id>.<op> and novaos.connector.ext.<id>.<op>.
const (
	TierStandard = "standard"
	TierLicensed = "licensed"
	TierExt      = "ext"
)

// Scopes a connector call needs, besides mcp:tools:<name>:
// ScopeConnectorInvoke and connector:<id>:<op> always, and the tier's
// scope for a licensed or ext connector.
const (
	ScopeConnectorInvoke   = "connector:invoke"
	ScopeConnectorLicensed = "connector:licensed"
	ScopeConnectorExt      = "connector:ext"
)

// Paths on the connector host.
const (
	ConnectorCatalogPath = "/api/v1/connectors"
	// A call goes to ConnectorCatalogPath/{id}/{op}.
)

// Defaults of ConnectorOptions.
const (
	DefaultCatalogTTL                = 60 * time.Second
	DefaultCatalogTimeout            = 10 * time.Second
	DefaultConnectorTimeout          = toolgw.DefaultBuiltinTimeout
	DefaultMaxConnectorResponseBytes = 4 << 20
	DefaultMaxCatalogBytes           = 4 << 20
	DefaultMaxConnectorArgumentBytes = 1 << 20
)

// catalogRetry is how long a catalog that could not be read is not asked
// for again: the host is not hammered while it is down, and is asked
// again soon after it is back.
const catalogRetry = 5 * time.Second

// Bounds of what the catalog may say about one operation.
const (
	maxConnectorIDLen       = 64
	maxConnectorSchemaBytes = 64 << 10
	maxConnectorDescription = 1024
)

// ConnectorOptions configure the connector servers. Zero fields mean the
// defaults; with no ConnectorHostURL connectors are disabled.
type ConnectorOptions struct {
	// ConnectorHostURL is the connector host's base URL (http or https,
	// no query). Empty, connectors are disabled: every connector tool
	// answers SERVICE_DISABLED.
	ConnectorHostURL string
	// ConnectorToken is the bearer token the gateway authenticates to the
	// connector host with; the caller's own token is never sent. Zero
	// sends no Authorization header.
	ConnectorToken secret.Value
	// HTTPClient calls the host (default: a client with no proxy and no
	// overall timeout; the timeouts below bound each exchange). The host
	// is the operator's, so no SSRF guard applies to it.
	HTTPClient *http.Client
	// CatalogTTL is how long the host's catalog is kept (DefaultCatalogTTL);
	// CatalogTimeout bounds reading it (DefaultCatalogTimeout).
	CatalogTTL     time.Duration
	CatalogTimeout time.Duration
	// Timeout bounds one call (DefaultConnectorTimeout).
	Timeout time.Duration
	// MaxResponseBytes bounds the host's answer to a call
	// (DefaultMaxConnectorResponseBytes); MaxCatalogBytes its catalog
	// (DefaultMaxCatalogBytes); MaxArgumentBytes a call's arguments
	// (DefaultMaxConnectorArgumentBytes).
	MaxResponseBytes int64
	MaxCatalogBytes  int64
	MaxArgumentBytes int64
	// Logger hears catalog reads and failed calls (never arguments,
	// answers or tokens); nil discards.
	Logger *slog.Logger
	// Now is the clock of the catalog's cache; nil means time.Now.
	Now func() time.Time
}

func (o *ConnectorOptions) withDefaults() ConnectorOptions {
	var v ConnectorOptions
	if o != nil {
		v = *o
	}
	if v.HTTPClient == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		v.HTTPClient = &http.Client{Transport: instrument.Transport(tr)}
	}
	if v.CatalogTTL <= 0 {
		v.CatalogTTL = DefaultCatalogTTL
	}
	if v.CatalogTimeout <= 0 {
		v.CatalogTimeout = DefaultCatalogTimeout
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultConnectorTimeout
	}
	if v.MaxResponseBytes <= 0 {
		v.MaxResponseBytes = DefaultMaxConnectorResponseBytes
	}
	if v.MaxCatalogBytes <= 0 {
		v.MaxCatalogBytes = DefaultMaxCatalogBytes
	}
	if v.MaxArgumentBytes <= 0 {
		v.MaxArgumentBytes = DefaultMaxConnectorArgumentBytes
	}
	if v.Logger == nil {
		v.Logger = slog.New(slog.DiscardHandler)
	}
	if v.Now == nil {
		v.Now = time.Now
	}
	return v
}

// Connectors returns the connector servers: every operation the
// connector host's catalog lists, as novaos.connector[.licensed|.ext].<id>.<op>,
// each call a POST of its arguments to the host. With no
// ConnectorHostURL it lists nothing and answers every connector tool
// name with SERVICE_DISABLED. A ConnectorHostURL that is not an absolute
// http(s) URL without user information, query or fragment is an error.
func Connectors(opts *ConnectorOptions) (toolgw.Provider, error) {
	o := opts.withDefaults()
	c := &connectors{o: o}
	if o.ConnectorHostURL != "" {
		u, _, err := netguard.ParseURL(o.ConnectorHostURL)
		if err != nil {
			return nil, fmt.Errorf("builtin: the connector host URL: %w", err)
		}
		if u.RawQuery != "" || u.ForceQuery {
			return nil, errors.New("builtin: the connector host URL must not have a query")
		}
		c.base = strings.TrimSuffix(u.String(), "/")
		c.cache = &catalogCache{fetch: c.fetchCatalog, ttl: o.CatalogTTL, now: o.Now, log: o.Logger}
	}
	return c, nil
}

type connectors struct {
	o     ConnectorOptions
	base  string // "" when disabled
	cache *catalogCache
}

var _ toolgw.Provider = (*connectors)(nil)

func (c *connectors) disabled() error {
	return toolgw.Failf(tools.ReasonServiceDisabled, "connectors are not enabled on this server (no connector host is configured)")
}

func (c *connectors) Tools(ctx context.Context, _ *toolgw.Caller) ([]toolgw.Tool, error) {
	if c.base == "" {
		return nil, nil
	}
	cat, err := c.cache.get(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]toolgw.Tool, len(cat.list))
	for i := range cat.list {
		out[i] = cloneTool(&cat.list[i])
	}
	return out, nil
}

// Find resolves a connector tool name. With connectors disabled, a name
// of a connector tool's shape answers SERVICE_DISABLED (the error), not
// "no such tool", so a caller learns why.
func (c *connectors) Find(ctx context.Context, _ *toolgw.Caller, name string) (*toolgw.Tool, bool, error) {
	if _, _, _, ok := parseConnectorName(name); !ok {
		return nil, false, nil
	}
	if c.base == "" {
		return nil, false, c.disabled()
	}
	cat, err := c.cache.get(ctx)
	if err != nil {
		return nil, false, err
	}
	i, ok := cat.index[name]
	if !ok {
		return nil, false, nil
	}
	t := cloneTool(&cat.list[i])
	return &t, true, nil
}

func (c *connectors) Call(parent context.Context, r *toolgw.Request) (*mcp.CallToolResult, error) {
	if r == nil || r.Tool == nil || r.Caller == nil {
		return nil, errors.New("builtin: a call needs a caller and a tool")
	}
	_, id, op, ok := parseConnectorName(r.Tool.Name)
	if !ok {
		return nil, toolgw.Failf(tools.ReasonToolNotFound, "%.128q is not a connector tool", r.Tool.Name)
	}
	if c.base == "" {
		return nil, c.disabled()
	}
	args := r.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if int64(len(args)) > c.o.MaxArgumentBytes {
		return invalidf("the arguments are larger than %d bytes", c.o.MaxArgumentBytes), nil
	}
	if err := strictjson.Check(args, &strictjson.Options{Object: true, MaxDepth: maxArgDepth}); err != nil {
		return invalidf("the arguments are not a JSON object: %v", err), nil
	}
	ctx, cancel := context.WithTimeout(parent, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+ConnectorCatalogPath+"/"+id+"/"+op, bytes.NewReader(args))
	if err != nil {
		return nil, fmt.Errorf("builtin: connector request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	setIf := func(k, v string) {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	setIf(tools.TenantHeader, r.Caller.Tenant)
	setIf(identity.HeaderAgentID, r.Caller.Agent)
	setIf(identity.HeaderRunID, r.Caller.Run)
	setIf(identity.HeaderInstanceID, r.Caller.Instance)
	setIf(identity.HeaderUserID, r.Caller.User)
	// The gateway runs an approved write once; the key lets the host
	// make a retried delivery of it harmless too.
	setIf("Idempotency-Key", r.CallID)
	log := c.o.Logger.With("tool", r.Tool.Name, "tenant", r.Caller.Tenant, "call_id", r.CallID)
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		log.Warn("builtin: connector call failed", "err", errText(err))
		return failure(parent, ctx, err, "the connector host", c.o.Timeout)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.o.MaxResponseBytes+1))
	if err != nil {
		log.Warn("builtin: connector answer cut short", "err", errText(err))
		return failure(parent, ctx, err, "the connector host", c.o.Timeout)
	}
	if int64(len(body)) > c.o.MaxResponseBytes {
		log.Warn("builtin: connector answer too large", "limit", c.o.MaxResponseBytes)
		return nil, toolgw.Failf(tools.ReasonUnavailable, "the connector host's answer is larger than %d bytes", c.o.MaxResponseBytes)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if err := strictjson.Check(body, &strictjson.Options{Object: true}); err != nil {
			log.Warn("builtin: connector answer is not a JSON object", "status", resp.StatusCode)
			return nil, toolgw.Failf(tools.ReasonUnavailable, "the connector host answered something other than a JSON object")
		}
		return toolgw.JSONResult(json.RawMessage(body))
	}
	he := parseHostError(body)
	log.Info("builtin: connector refused the call", "status", resp.StatusCode, "code", he.code)
	msg := he.message
	if msg == "" {
		msg = "no reason given"
	}
	switch {
	case he.code == tools.ReasonServiceDisabled:
		return nil, toolgw.Failf(tools.ReasonServiceDisabled, "the connector host is disabled: %s", msg)
	case resp.StatusCode == http.StatusUnauthorized:
		// The host refused the gateway's own credentials: the operator's
		// to fix, not the caller's.
		return nil, toolgw.Failf(tools.ReasonUnavailable, "the connector host refused the gateway's credentials (HTTP 401)")
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return nil, toolgw.Failf(tools.ReasonUnavailable, "the connector host answered HTTP %d: %s", resp.StatusCode, msg)
	}
	code := he.code
	if code == "" {
		code = "CONNECTOR_ERROR"
	}
	return errorResult(code, msg, map[string]any{"status": resp.StatusCode}), nil
}

func (c *connectors) authorize(req *http.Request) {
	if !c.o.ConnectorToken.IsZero() {
		req.Header.Set("Authorization", "Bearer "+c.o.ConnectorToken.Reveal())
	}
}

// hostError is what a connector host's error answer says: a code, when
// it gives one of upper-case letters, digits and '_', and a message.
type hostError struct{ code, message string }

// parseHostError reads the usual shapes of an error body: {"error":
// "…"}, {"error": {"code", "message"}}, {"code", "message"} and RFC 9457
// problem details ({"title", "detail"}). Anything else gives nothing.
func parseHostError(b []byte) hostError {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return hostError{}
	}
	str := func(m map[string]json.RawMessage, k string) string {
		var s string
		if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil {
			return s
		}
		return ""
	}
	var he hostError
	if raw, ok := m["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			he.code, he.message = str(inner, "code"), str(inner, "message")
		} else {
			he.message = str(m, "error")
		}
	}
	if he.code == "" {
		he.code = str(m, "code")
	}
	for _, k := range []string{"message", "detail", "title"} {
		if he.message == "" {
			he.message = str(m, k)
		}
	}
	if !isCode(he.code) {
		he.code = ""
	}
	he.message = clip(he.message, 512)
	return he
}

func isCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// parseConnectorName splits a connector tool name into its tier, id and
// operation; ok is false when name is not one.
func parseConnectorName(name string) (tier, id, op string, ok bool) {
	if !tools.ValidName(name) {
		return "", "", "", false
	}
	rest, found := strings.CutPrefix(name, tools.Prefix+tools.ServerConnector+".")
	if !found {
		return "", "", "", false
	}
	segs := strings.Split(rest, ".")
	switch {
	case len(segs) == 2:
		tier, id, op = TierStandard, segs[0], segs[1]
	case len(segs) == 3 && (segs[0] == TierLicensed || segs[0] == TierExt):
		tier, id, op = segs[0], segs[1], segs[2]
	default:
		return "", "", "", false
	}
	if len(id) > maxConnectorIDLen || len(op) > maxConnectorIDLen {
		return "", "", "", false
	}
	return tier, id, op, true
}

// connectorName is the tool name of operation op of connector id on tier.
func connectorName(tier, id, op string) string {
	if tier == TierStandard {
		return tools.Prefix + tools.ServerConnector + "." + id + "." + op
	}
	return tools.Prefix + tools.ServerConnector + "." + tier + "." + id + "." + op
}

// validConnectorID reports whether s may be a connector id or operation:
// 1-64 of A-Z, a-z, 0-9, '_' and '-'.
func validConnectorID(s string) bool {
	if s == "" || len(s) > maxConnectorIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// catalog is the connector host's catalog as tools.
type catalog struct {
	list  []toolgw.Tool // sorted by name
	index map[string]int
}

type catalogConnector struct {
	ID         string      `json:"id"`
	Tier       string      `json:"tier"`
	Operations []catalogOp `json:"operations"`
}

type catalogOp struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	ReadOnly    *bool           `json:"read_only"`
}

// catalogDepth bounds the nesting of a catalog, input schemas included.
const catalogDepth = 128

// decodeCatalog reads the host's catalog: a JSON array of connectors.
// An entry that cannot be a tool (an id outside the character set, an
// unknown tier, an input schema that is not an object schema, a name
// over 128 bytes, a name listed before) is left out and logged; the rest
// stand.
func (c *connectors) decodeCatalog(b []byte) (*catalog, error) {
	if err := strictjson.Check(b, &strictjson.Options{MaxDepth: catalogDepth}); err != nil {
		return nil, fmt.Errorf("the catalog is not valid JSON: %w", err)
	}
	var conns []catalogConnector
	if err := json.Unmarshal(b, &conns); err != nil {
		return nil, errors.New("the catalog is not a JSON array of connectors")
	}
	cat := &catalog{index: map[string]int{}}
	skip := func(why string, args ...any) {
		c.o.Logger.Warn("builtin: a connector operation is left out of the catalog", "why", fmt.Sprintf(why, args...))
	}
	for _, conn := range conns {
		tier := conn.Tier
		if tier == "" {
			tier = TierStandard
		}
		if tier != TierStandard && tier != TierLicensed && tier != TierExt {
			skip("connector %.64q has an unknown tier %.16q", conn.ID, conn.Tier)
			continue
		}
		if !validConnectorID(conn.ID) {
			skip("connector id %.64q is not 1-64 of A-Z, a-z, 0-9, _ and -", conn.ID)
			continue
		}
		for _, op := range conn.Operations {
			if !validConnectorID(op.Name) {
				skip("connector %s: operation %.64q is not 1-64 of A-Z, a-z, 0-9, _ and -", conn.ID, op.Name)
				continue
			}
			name := connectorName(tier, conn.ID, op.Name)
			if !tools.ValidName(name) {
				skip("%.140s is longer than 128 bytes", name)
				continue
			}
			if _, dup := cat.index[name]; dup {
				skip("%s is listed twice", name)
				continue
			}
			schema, err := objectSchema(op.InputSchema)
			if err != nil {
				skip("%s: %v", name, err)
				continue
			}
			cat.index[name] = len(cat.list)
			cat.list = append(cat.list, c.tool(tier, conn.ID, op, name, schema))
		}
	}
	// Sorted so that tools/list is deterministic.
	sortTools(cat)
	return cat, nil
}

func sortTools(cat *catalog) {
	slices.SortFunc(cat.list, func(a, b toolgw.Tool) int { return strings.Compare(a.Name, b.Name) })
	for i := range cat.list {
		cat.index[cat.list[i].Name] = i
	}
}

// objectSchema returns an operation's input schema as MCP wants it: a
// JSON object schema of type "object". None given is any object.
func objectSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	if len(raw) > maxConnectorSchemaBytes {
		return nil, fmt.Errorf("the input schema is larger than %d bytes", maxConnectorSchemaBytes)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, errors.New("the input schema is not a JSON object")
	}
	typ, ok := m["type"]
	if !ok {
		m["type"] = json.RawMessage(`"object"`)
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	var s string
	if json.Unmarshal(typ, &s) != nil || s != "object" {
		return nil, errors.New(`the input schema's type is not "object"`)
	}
	return bytes.Clone(raw), nil
}

func (c *connectors) tool(tier, id string, op catalogOp, name string, schema json.RawMessage) toolgw.Tool {
	desc := strings.TrimSpace(clip(op.Description, maxConnectorDescription))
	if desc != "" && !strings.HasSuffix(desc, ".") {
		desc += "."
	}
	if desc != "" {
		desc += " "
	}
	desc += fmt.Sprintf("Operation %s of the %s connector %s. ", op.Name, tier, id) +
		`Answers the connector host's envelope {"data": …, "provenance": {…}, "meta": {…}}.`
	scopes := []string{ScopeConnectorInvoke, "connector:" + id + ":" + op.Name}
	switch tier {
	case TierLicensed:
		scopes = append(scopes, ScopeConnectorLicensed)
	case TierExt:
		scopes = append(scopes, ScopeConnectorExt)
	}
	var ro *bool
	if op.ReadOnly != nil {
		ro = ptr(*op.ReadOnly)
	}
	return toolgw.Tool{
		Tool: tools.Tool{
			Name: name, Title: id + " " + op.Name, Description: desc, InputSchema: schema,
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"data":{},"provenance":{"type":"object"},"meta":{"type":"object"}}}`),
			// A connector reaches a third party's service; whether an
			// operation writes is the host's word, and the gateway's
			// classifier judges by the operation's name without it.
			Annotations: &tools.Annotations{ReadOnly: ro, OpenWorld: ptr(true)},
		},
		Scopes:  scopes,
		Timeout: c.o.Timeout,
	}
}

// fetchCatalog reads the host's catalog.
func (c *connectors) fetchCatalog(parent context.Context) (*catalog, error) {
	ctx, cancel := context.WithTimeout(parent, c.o.CatalogTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+ConnectorCatalogPath, nil)
	if err != nil {
		return nil, fmt.Errorf("builtin: connector catalog request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	fail := func(format string, args ...any) error {
		return toolgw.Failf(tools.ReasonUnavailable, "the connector host's catalog cannot be read: "+format, args...)
	}
	resp, err := c.o.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fail("no answer within %s", c.o.CatalogTimeout)
		}
		return nil, fail("%s", errText(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.o.MaxCatalogBytes+1))
	switch {
	case err != nil:
		return nil, fail("%s", errText(err))
	case int64(len(body)) > c.o.MaxCatalogBytes:
		return nil, fail("it is larger than %d bytes", c.o.MaxCatalogBytes)
	case resp.StatusCode != http.StatusOK:
		he := parseHostError(body)
		if he.code == tools.ReasonServiceDisabled {
			return nil, toolgw.Failf(tools.ReasonServiceDisabled, "the connector host is disabled: %s", he.message)
		}
		return nil, fail("HTTP %d", resp.StatusCode)
	}
	cat, err := c.decodeCatalog(body)
	if err != nil {
		return nil, fail("%v", err)
	}
	c.o.Logger.Debug("builtin: connector catalog read", "tools", len(cat.list))
	return cat, nil
}

// catalogCache keeps the catalog for its TTL and reads it once for
// every caller waiting at the same time. A catalog that cannot be read
// is not asked for again for catalogRetry; meanwhile, and after, the
// last catalog read is served, stale, until a read succeeds.
type catalogCache struct {
	fetch func(context.Context) (*catalog, error)
	ttl   time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu       sync.Mutex
	cur      *catalog
	at       time.Time
	err      error
	failedAt time.Time
	flight   *catalogFlight
}

type catalogFlight struct {
	done chan struct{}
	cat  *catalog
	err  error
}

func (c *catalogCache) get(ctx context.Context) (*catalog, error) {
	c.mu.Lock()
	now := c.now()
	if c.cur != nil && now.Sub(c.at) < c.ttl {
		cur := c.cur
		c.mu.Unlock()
		return cur, nil
	}
	if c.err != nil && now.Sub(c.failedAt) < catalogRetry {
		cur, err := c.cur, c.err
		c.mu.Unlock()
		if cur != nil {
			return cur, nil
		}
		return nil, err
	}
	f := c.flight
	if f == nil {
		f = &catalogFlight{done: make(chan struct{})}
		c.flight = f
		// The read is nobody's call: it outlives a caller that gives up,
		// and ends within the catalog timeout fetch applies.
		go c.read(f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if f.err != nil {
		c.mu.Lock()
		cur := c.cur
		c.mu.Unlock()
		if cur != nil {
			return cur, nil
		}
		return nil, f.err
	}
	return f.cat, nil
}

func (c *catalogCache) read(f *catalogFlight) {
	cat, err := c.fetch(context.Background())
	c.mu.Lock()
	if err != nil {
		c.err, c.failedAt = err, c.now()
		if c.cur != nil {
			c.log.Warn("builtin: the connector catalog cannot be read; serving the last one read", "err", err)
		} else {
			c.log.Warn("builtin: the connector catalog cannot be read", "err", err)
		}
	} else {
		c.cur, c.at, c.err = cat, c.now(), nil
	}
	c.flight = nil
	c.mu.Unlock()
	f.cat, f.err = cat, err
	close(f.done)
}
