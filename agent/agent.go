package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"novaos.dev/novaos/a2a"
	"novaos.dev/novaos/a2a/a2asrv"
	"novaos.dev/novaos/ext/usercontext"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/pii"
	"novaos.dev/novaos/secret"
)

// Default media types, used when neither a skill nor Options name any.
var (
	DefaultInputModes  = []string{"text/plain", "application/json"}
	DefaultOutputModes = []string{"text/plain", "application/json"}
)

// Options configure an Agent. The zero value (or nil) is usable.
type Options struct {
	// Description is the card's top-level description.
	Description string
	Provider    *a2a.AgentProvider
	// DocumentationURL and IconURL go on the card when set.
	DocumentationURL string
	IconURL          string
	// Extensions are the A2A extensions the agent understands; they are
	// declared on the card and negotiated per request by the server.
	Extensions []a2a.AgentExtension
	// RequireExtensionActivation emits extension data (tool-call-v1,
	// cost-v1, confidence-v1, worldstate-delta-v1) only to a request whose
	// A2A-Extensions header activated that extension. Off by default: the
	// conventions' consumers read the data whenever the card declares the
	// extension, without activating it.
	RequireExtensionActivation bool
	// DefaultInputModes and DefaultOutputModes are the media types of a
	// skill that declares none, both on the card and when a request is
	// checked (DefaultInputModes/DefaultOutputModes when nil).
	DefaultInputModes  []string
	DefaultOutputModes []string
	// DisableStreaming publishes capabilities.streaming=false on the card.
	DisableStreaming bool
	// PushNotifications publishes capabilities.pushNotifications=true; set
	// it only when the server has a push-config store.
	PushNotifications    bool
	SecuritySchemes      map[string]a2a.SecurityScheme
	SecurityRequirements []a2a.SecurityRequirement
	// BeforeSkill runs, in order, before every skill handler, outside it:
	// a retried or resumed turn runs them again, a skill never runs them
	// twice. A hook prepares what the skill will read and returns the
	// context the handler gets (derive it from c with context.WithValue),
	// or nil to leave it. A hook that fails logs and returns nil: the
	// skill runs regardless.
	BeforeSkill []func(c *Context) context.Context
	// MemoryPrefetch configures the memory pre-fetch the agent runs after
	// the BeforeSkill hooks, before a skill whose request carries a memory
	// budget (PlatformContext.MemoryBudget): memory.Prefetch, one
	// assemble with the turn's input as the query; the skill reads the
	// result with memory.Prefetched(c). A failure is logged, never
	// returned: the skill runs with memory.Prefetched(c) nil. It is
	// skipped when a BeforeSkill hook already pre-fetched. Nil uses the
	// execution's token and memory's default service URL.
	MemoryPrefetch *memory.FromOptions
	// NoMemoryPrefetch turns the automatic memory pre-fetch off.
	NoMemoryPrefetch bool
	// MaskOutputPII masks emails, phone numbers, SSNs, card numbers and IP
	// addresses (package pii) in everything the agent writes to a task:
	// results, messages, artifacts and metadata. Off by default because an
	// agent whose job is to confirm caller data would have it redacted.
	MaskOutputPII bool
	// TypedFailures describes a skill that returned an error as
	// "<type>: <message>" (just "<type>" when the message is empty), the
	// NovaOS Python SDK's wording, instead of by the error's text alone.
	// The type is the first in the error's chain that is not a
	// fmt.Errorf wrapper, as %T names it ("*fs.PathError"). Off by
	// default: a Go error's text already says what failed, and most
	// errors are *errors.errorString or a wrapper, whose names tell the
	// caller nothing.
	TypedFailures bool
	// Logger receives the agent's logs, always through a PII-masking
	// handler; nil discards them.
	Logger *slog.Logger
	// KeyRing holds the recipient keys that open the secrets the platform
	// seals for this agent (user-context/v1, package ext/usercontext);
	// Context.GetSecret uses it. When set, the card declares the extension
	// (not required) unless Extensions already declares its URI.
	KeyRing *usercontext.KeyRing
	// TracerProvider traces every skill execution as a span, "skill
	// <id>", the parent of the spans made under it (the tool calls of
	// package tools). Nil means the provider of the span the execution
	// arrives in (its A2A server's, when that traces: package a2aotel),
	// else otel.GetTracerProvider(), which records nothing until the
	// program installs a provider.
	TracerProvider trace.TracerProvider
	// ExecutionToken is the token Context.Execution gives a request that
	// carries none (no verified token, platform context or auth-proxy
	// header): an agent run outside the platform, in development or a
	// test harness. The program reads it once at startup
	// (envconfig.ExecutionToken reads NOVAOS_EXECUTION_TOKEN); the agent
	// never reads the environment.
	ExecutionToken secret.Value
}

// Agent is a set of skills served over A2A. It implements a2asrv.Executor:
// each message is routed to one skill, whose Result becomes the task's
// outcome. Register every skill before serving; registration is safe for
// concurrent use but a card built earlier does not show later skills.
type Agent struct {
	name, version string
	opts          Options
	log           *slog.Logger

	tracer trace.Tracer // Options.TracerProvider's; nil: see tracerFor
	// prefetch is the memory pre-fetch hook; nil when turned off.
	prefetch func(*Context) context.Context

	mu     sync.RWMutex
	skills []*Skill // registration order, for the card
	byID   map[string]*Skill
}

var _ a2asrv.Executor = (*Agent)(nil)

// A skill's Context is a memory.Turn: memory.From(c) and the pre-fetch
// take it.
var _ memory.Turn = (*Context)(nil)

// Errors returned by Register.
var (
	ErrDuplicateSkill = errors.New("agent: duplicate skill id")
	ErrInvalidSkill   = errors.New("agent: invalid skill")
)

// New returns an agent with no skills.
func New(name, version string, opts *Options) *Agent {
	a := &Agent{name: name, version: version, byID: map[string]*Skill{}}
	if opts != nil {
		a.opts = *opts
	}
	if a.opts.DefaultInputModes == nil {
		a.opts.DefaultInputModes = DefaultInputModes
	}
	if a.opts.DefaultOutputModes == nil {
		a.opts.DefaultOutputModes = DefaultOutputModes
	}
	if a.opts.KeyRing != nil && !slices.ContainsFunc(a.opts.Extensions,
		func(e a2a.AgentExtension) bool { return e.URI == usercontext.URI }) {
		a.opts.Extensions = append(slices.Clone(a.opts.Extensions), usercontext.Declaration(false))
	}
	if !a.opts.NoMemoryPrefetch {
		a.prefetch = memory.Prefetch[*Context](a.opts.MemoryPrefetch)
	}
	if tp := a.opts.TracerProvider; tp != nil {
		a.tracer = tp.Tracer(ScopeName)
	}
	if a.opts.Logger != nil {
		a.log = slog.New(pii.NewHandler(a.opts.Logger.Handler()))
	} else {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.name }

// Version returns the agent's version.
func (a *Agent) Version() string { return a.version }

// HandlerFunc runs one skill invocation. Its Result decides the task's
// outcome unless the handler already closed the task through c.Updater().
// An error fails the task with the error's text; so does a panic.
type HandlerFunc func(c *Context) (Result, error)

// Skill is one capability of an agent: card metadata plus the handler.
type Skill struct {
	// ID is what a caller names in message metadata "skillId" and what the
	// card publishes; it defaults to Name.
	ID string
	// Name is the display name; it defaults to ID.
	Name        string
	Description string
	Tags        []string
	Examples    []string
	// InputModes and OutputModes are the media types the skill accepts and
	// produces; nil means the agent's defaults.
	InputModes  []string
	OutputModes []string
	// MayReply lets the handler answer with a message instead of a task
	// (Updater.Reply). The agent then does not mark the task WORKING before
	// calling the handler, since a reply must precede any task write.
	MayReply bool
	Handler  HandlerFunc
}

// Register adds a skill. It fails with ErrInvalidSkill when the skill has
// neither ID nor Name or no Handler, and with ErrDuplicateSkill when its ID
// is taken.
func (a *Agent) Register(s Skill) error {
	if s.ID == "" {
		s.ID = s.Name
	}
	if s.Name == "" {
		s.Name = s.ID
	}
	if s.ID == "" {
		return fmt.Errorf("%w: skill has no id or name", ErrInvalidSkill)
	}
	if s.Handler == nil {
		return fmt.Errorf("%w: skill %q has no handler", ErrInvalidSkill, s.ID)
	}
	s.Tags = slices.Clone(s.Tags)
	s.Examples = slices.Clone(s.Examples)
	s.InputModes = slices.Clone(s.InputModes)
	s.OutputModes = slices.Clone(s.OutputModes)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byID[s.ID]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicateSkill, s.ID)
	}
	a.byID[s.ID] = &s
	a.skills = append(a.skills, &s)
	return nil
}

// MustRegister is Register for program setup: it panics on error.
func (a *Agent) MustRegister(s Skill) {
	if err := a.Register(s); err != nil {
		panic(err)
	}
}

func (a *Agent) inputModes(s *Skill) []string {
	if len(s.InputModes) > 0 {
		return s.InputModes
	}
	return a.opts.DefaultInputModes
}

func (a *Agent) outputModes(s *Skill) []string {
	if len(s.OutputModes) > 0 {
		return s.OutputModes
	}
	return a.opts.DefaultOutputModes
}

// Card returns the agent's card, built from the registered skills so that
// it never advertises a skill id the agent would reject. The card has no
// supportedInterfaces: whoever serves the agent knows its URL and fills them
// in (see Handler).
func (a *Agent) Card() *a2a.AgentCard {
	a.mu.RLock()
	skills := make([]a2a.AgentSkill, len(a.skills))
	for i, s := range a.skills {
		tags := slices.Clone(s.Tags)
		if tags == nil {
			tags = []string{}
		}
		skills[i] = a2a.AgentSkill{
			ID: s.ID, Name: s.Name, Description: s.Description, Tags: tags,
			Examples:    slices.Clone(s.Examples),
			InputModes:  slices.Clone(s.InputModes),
			OutputModes: slices.Clone(s.OutputModes),
		}
	}
	a.mu.RUnlock()
	card := &a2a.AgentCard{
		Name:                 a.name,
		Description:          a.opts.Description,
		SupportedInterfaces:  []a2a.AgentInterface{},
		Provider:             a.opts.Provider,
		Version:              a.version,
		SecuritySchemes:      a.opts.SecuritySchemes,
		SecurityRequirements: a.opts.SecurityRequirements,
		DefaultInputModes:    slices.Clone(a.opts.DefaultInputModes),
		DefaultOutputModes:   slices.Clone(a.opts.DefaultOutputModes),
		Skills:               skills,
		Capabilities: a2a.AgentCapabilities{
			Streaming:         a2a.Bool(!a.opts.DisableStreaming),
			PushNotifications: a2a.Bool(a.opts.PushNotifications),
			Extensions:        slices.Clone(a.opts.Extensions),
		},
	}
	if u := a.opts.DocumentationURL; u != "" {
		card.DocumentationURL = &u
	}
	if u := a.opts.IconURL; u != "" {
		card.IconURL = &u
	}
	return card
}
