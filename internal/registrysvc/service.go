package registrysvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/internal/httpapi"
	"novaos.dev/novaos/registry"
	"novaos.dev/novaos/secret"
)

// Page sizes of List and Search.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
	scanBatch       = 500
)

// ErrBadQuery is wrapped by errors for a query the service cannot run
// (no capabilities, an unknown mode, a threshold outside (0, 1], …).
var ErrBadQuery = errors.New("registry: bad query")

// Options tune New. Nil means the defaults.
type Options struct {
	// Policy is applied to the URL of every registration and update (nil:
	// the zero registry.Policy, which refuses loopback and private hosts;
	// Mount makes nil any public host, plus loopback on a loopback server).
	Policy *registry.Policy
	// LoopbackIfLocal makes Mount add loopback hosts to a Policy when the
	// server is reached on loopback, as it does for a nil Policy.
	LoopbackIfLocal bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NewID makes agent ids (default a2a.NewID, a random UUID).
	NewID func() string
	// Logger receives unexpected store errors (default: discarded).
	Logger *slog.Logger
	// ReadOnly names records that Update and Delete refuse with
	// registry.ErrReadOnly (and that Register cannot take, as they
	// exist): the agents the platform hosts, which Put keeps current.
	ReadOnly []string
	// AdminToken, when set, is the bearer token every write through the
	// Handler must present. When it is empty, the Handler accepts writes
	// from loopback peers only. Reads are open either way.
	AdminToken secret.Value
}

// Service is the agent registry: it validates and stores records and
// answers listings, text searches and capability queries. Its only state
// is a snapshot for capability queries, checked against the Store's
// version at every query, so several replicas may share one Store.
type Service struct {
	store  Store
	opts   Options
	api    *httpapi.API      // the REST plumbing of Handler and DNSHandler
	hosted []*registry.Agent // Mount's, recorded by Start

	mu   sync.Mutex
	snap *snapshot // the records as of a store version, for Find
}

// snapshot is every record at one store version, indexed by capability.
// It is shared by concurrent queries and never changed.
type snapshot struct {
	version int64
	agents  []*registry.Agent
	index   *registry.Index
}

// New returns a Service over store.
func New(store Store, opts *Options) *Service {
	s := &Service{store: store}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Now == nil {
		s.opts.Now = time.Now
	}
	if s.opts.NewID == nil {
		s.opts.NewID = a2a.NewID
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	s.api = &httpapi.API{Name: "registry", Logger: s.opts.Logger, MaxBodyBytes: MaxBodyBytes,
		Auth:       httpapi.AdminRule{Token: s.opts.AdminToken},
		Protect:    func(r *http.Request) bool { return httpapi.IsWrite(r.Method) },
		ProblemFor: problemFor}
	return s
}

func (s *Service) now() time.Time { return s.opts.Now().UTC().Truncate(time.Millisecond) }

// normalize fills defaults and drops what the server assigns.
func normalize(a *registry.Agent) *registry.Agent {
	c := a.Clone()
	if c.Status == "" {
		c.Status = registry.StatusActive
	}
	return c
}

// Register validates a against the policy, assigns an id and timestamps,
// and stores it. The error wraps registry.ErrInvalid (a
// *registry.ValidationError) or registry.ErrExists.
func (s *Service) Register(ctx context.Context, a *registry.Agent) (*registry.Agent, error) {
	if err := registry.Validate(a, s.opts.Policy); err != nil {
		return nil, err
	}
	return s.create(ctx, a)
}

func (s *Service) create(ctx context.Context, a *registry.Agent) (*registry.Agent, error) {
	rec := normalize(a)
	rec.ID = s.opts.NewID()
	rec.CreatedAt = s.now()
	rec.UpdatedAt = rec.CreatedAt
	if err := s.store.Create(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// Update replaces the record with this id or name by a, keeping its id
// and creation time; a.Name renames it unless empty. a.ID, a.CreatedAt
// and a.UpdatedAt are ignored.
func (s *Service) Update(ctx context.Context, ref string, a *registry.Agent) (*registry.Agent, error) {
	old, err := s.writable(ctx, ref)
	if err != nil {
		return nil, err
	}
	rec := normalize(a)
	if rec.Name == "" {
		rec.Name = old.Name
	}
	if err := registry.Validate(rec, s.opts.Policy); err != nil {
		return nil, err
	}
	return s.replace(ctx, old, rec)
}

func (s *Service) replace(ctx context.Context, old, rec *registry.Agent) (*registry.Agent, error) {
	rec.ID, rec.CreatedAt, rec.UpdatedAt = old.ID, old.CreatedAt, s.now()
	if err := s.store.Update(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// Put registers a, or replaces the record of the same name, without the
// policy: for records the platform itself vouches for (the agents it
// hosts, at their loopback URLs). a must still pass registry.Validate's
// field rules.
func (s *Service) Put(ctx context.Context, a *registry.Agent) (*registry.Agent, error) {
	if err := registry.Validate(a, &registry.Policy{AllowLoopback: true, AllowPrivate: true}); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		old, err := s.store.GetByName(ctx, a.Name)
		if errors.Is(err, registry.ErrNotFound) {
			rec, err := s.create(ctx, a)
			// Another replica starting on the same database may have
			// created it meanwhile: replace that one instead.
			if errors.Is(err, registry.ErrExists) && attempt < 3 {
				continue
			}
			return rec, err
		}
		if err != nil {
			return nil, err
		}
		rec, err := s.replace(ctx, old, normalize(a))
		if errors.Is(err, registry.ErrNotFound) && attempt < 3 {
			continue // deleted meanwhile: create it
		}
		return rec, err
	}
}

// Delete removes the record with this id or name.
func (s *Service) Delete(ctx context.Context, ref string) error {
	a, err := s.writable(ctx, ref)
	if err != nil {
		return err
	}
	return s.store.Delete(ctx, a.ID)
}

// writable returns the record ref names unless it is read-only.
func (s *Service) writable(ctx context.Context, ref string) (*registry.Agent, error) {
	a, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	if slices.Contains(s.opts.ReadOnly, a.Name) {
		return nil, fmt.Errorf("registry: %s: %w", a.Name, registry.ErrReadOnly)
	}
	return a, nil
}

// Get returns the record with this id (when ref has the shape of one) or
// name.
func (s *Service) Get(ctx context.Context, ref string) (*registry.Agent, error) {
	if registry.IsID(ref) {
		return s.store.Get(ctx, ref)
	}
	if !registry.ValidName(ref) {
		return nil, fmt.Errorf("registry: get %q: %w", ref, registry.ErrNotFound)
	}
	return s.store.GetByName(ctx, ref)
}

// List returns one page of the records q's filters keep, in name order.
func (s *Service) List(ctx context.Context, q registry.ListQuery) (*registry.Page, error) {
	return s.page(ctx, q, filter(q, nil), s.store.List)
}

// Search is List restricted to records matching text (read from the
// snapshot Find uses): every
// white-space separated word of it, without case, must occur in the
// name, description, a capability (as given or normalized), a tag or a
// domain.
func (s *Service) Search(ctx context.Context, text string, q registry.ListQuery) (*registry.Page, error) {
	words := strings.Fields(strings.ToLower(text))
	if len(words) == 0 {
		return nil, fmt.Errorf("registry: search: %w: empty search text", ErrBadQuery)
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.page(ctx, q, filter(q, words), snap.list)
	if err != nil {
		return nil, err
	}
	for i, a := range p.Agents {
		p.Agents[i] = a.Clone() // the snapshot's records stay unshared
	}
	return p, nil
}

func filter(q registry.ListQuery, words []string) func(*registry.Agent) bool {
	name := strings.ToLower(q.Name)
	return func(a *registry.Agent) bool {
		if q.Status != "" && a.Status != q.Status {
			return false
		}
		if q.Tag != "" && !slices.Contains(a.AllTags(), q.Tag) {
			return false
		}
		if q.Domain != "" && !slices.Contains(a.AllDomains(), q.Domain) {
			return false
		}
		if name != "" && !strings.Contains(a.Name, name) {
			return false
		}
		if len(words) == 0 {
			return true
		}
		hay := haystack(a)
		for _, w := range words {
			if !strings.Contains(hay, w) {
				return false
			}
		}
		return true
	}
}

func haystack(a *registry.Agent) string {
	var b strings.Builder
	add := func(s string) {
		b.WriteString(strings.ToLower(s))
		b.WriteByte('\n')
	}
	add(a.Name)
	add(a.Description)
	for _, c := range a.AllCapabilities() {
		add(c)
		add(registry.NormalizeCapability(c))
	}
	for _, t := range a.AllTags() {
		add(t)
	}
	for _, d := range a.AllDomains() {
		add(d)
	}
	return b.String()
}

// paging is the page-size rule of List and Search.
var paging = httpapi.Paging{Default: DefaultPageSize, Max: MaxPageSize}

// A page token carries the name of the last record of a page.
func pageToken(name string) string { return httpapi.PageToken(name) }

func parsePageToken(tok string) (string, error) {
	name, err := httpapi.ParsePageToken(tok, registry.ValidName)
	if err != nil {
		return "", fmt.Errorf("registry: page token %q: %w", tok, registry.ErrBadPageToken)
	}
	return name, nil
}

// page collects one page of the records keep keeps, reading them in name
// order from list.
func (s *Service) page(ctx context.Context, q registry.ListQuery, keep func(*registry.Agent) bool,
	list func(ctx context.Context, after string, limit int) ([]*registry.Agent, error)) (*registry.Page, error) {
	if q.PageSize < 0 {
		return nil, fmt.Errorf("registry: %w: negative page size", ErrBadQuery)
	}
	size := paging.Clamp(q.PageSize)
	after := ""
	if q.PageToken != "" {
		var err error
		if after, err = parsePageToken(q.PageToken); err != nil {
			return nil, err
		}
	}
	p := &registry.Page{Agents: []*registry.Agent{}}
	for {
		batch, err := list(ctx, after, scanBatch)
		if err != nil {
			return nil, err
		}
		for _, a := range batch {
			if !keep(a) {
				continue
			}
			if len(p.Agents) == size {
				p.NextPageToken = pageToken(p.Agents[size-1].Name)
				return p, nil
			}
			p.Agents = append(p.Agents, a)
		}
		if len(batch) < scanBatch {
			return p, nil
		}
		after = batch[len(batch)-1].Name
	}
}

// all returns every record keep keeps, in name order.
func (s *Service) all(ctx context.Context, keep func(*registry.Agent) bool) ([]*registry.Agent, error) {
	var out []*registry.Agent
	after := ""
	for {
		batch, err := s.store.List(ctx, after, scanBatch)
		if err != nil {
			return nil, err
		}
		for _, a := range batch {
			if keep(a) {
				out = append(out, a)
			}
		}
		if len(batch) < scanBatch {
			return out, nil
		}
		after = batch[len(batch)-1].Name
	}
}

// Find returns the records matching q's capabilities, best score first
// (ties in name order). Without Fuzzy a capability matches an equal name
// after registry.NormalizeCapability; with it, a registry.Similarity of at
// least q.Threshold (default 0.8).
func (s *Service) Find(ctx context.Context, q registry.FindQuery) ([]registry.MatchResult, error) {
	if len(q.Capabilities) == 0 {
		return nil, fmt.Errorf("registry: find: %w: name at least one capability", ErrBadQuery)
	}
	if len(q.Capabilities) > registry.MaxListItems {
		return nil, fmt.Errorf("registry: find: %w: more than %d capabilities", ErrBadQuery, registry.MaxListItems)
	}
	mode := q.Mode
	switch mode {
	case "":
		mode = registry.MatchAll
	case registry.MatchAll, registry.MatchAny:
	default:
		return nil, fmt.Errorf("registry: find: %w: mode must be %q or %q", ErrBadQuery, registry.MatchAll, registry.MatchAny)
	}
	if q.Threshold < 0 || q.Threshold > 1 {
		return nil, fmt.Errorf("registry: find: %w: threshold must be in (0, 1]", ErrBadQuery)
	}
	threshold := 1.0
	if q.Fuzzy {
		threshold = q.Threshold
		if threshold == 0 {
			threshold = registry.DefaultThreshold
		}
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	keep := filter(registry.ListQuery{Status: q.Status, Tag: q.Tag, Domain: q.Domain, Name: q.Name}, nil)
	res := []registry.MatchResult{}
	for _, m := range snap.index.Match(q.Capabilities, mode, threshold) {
		if keep(m.Agent) {
			m.Agent = m.Agent.Clone() // the snapshot's records stay unshared
			res = append(res, m)
		}
	}
	return res, nil
}

// list is Store.List over the snapshot.
func (sn *snapshot) list(_ context.Context, after string, limit int) ([]*registry.Agent, error) {
	i, found := slices.BinarySearchFunc(sn.agents, after, func(a *registry.Agent, name string) int {
		return strings.Compare(a.Name, name)
	})
	if found {
		i++
	}
	return sn.agents[i:min(i+limit, len(sn.agents))], nil
}

// snapshot returns every record and their capability index as of the
// store's current version, reading the records again only when the
// version moved. Reading the version before the records means a snapshot
// is never older than the version it is filed under; with several
// replicas on one database, each sees the others' writes at its next
// query.
func (s *Service) snapshot(ctx context.Context) (*snapshot, error) {
	v, err := s.store.Version(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cur := s.snap
	s.mu.Unlock()
	if cur != nil && cur.version == v {
		return cur, nil
	}
	agents, err := s.all(ctx, func(*registry.Agent) bool { return true })
	if err != nil {
		return nil, err
	}
	snap := &snapshot{version: v, agents: agents, index: registry.NewIndex(agents)}
	s.mu.Lock()
	if s.snap == nil || s.snap.version < v {
		s.snap = snap
	}
	s.mu.Unlock()
	return snap, nil
}
