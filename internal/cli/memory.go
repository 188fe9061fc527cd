package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/secret"
)

func runMemory(ctx context.Context, args []string, e *env) int {
	return runSubcommand(ctx, "memory", []command{
		{"write", "store a memory (--scope run|task|agent --content TEXT)", runMemoryWrite},
		{"query", "search one scope (--scope S --query TEXT)", runMemoryQuery},
		{"update", "change an agent memory in place (--id ID --version N --content TEXT)", runMemoryUpdate},
		{"forget", "delete a memory (--scope S --id ID --reason TEXT)", runMemoryForget},
		{"hint", "submit a consolidation hint (--hint TEXT --conversation ID)", runMemoryHint},
		{"assemble", "gather the context for a turn (--query TEXT)", runMemoryAssemble},
		{"hint-status", "what became of a hint (--id ID)", runMemoryHintStatus},
		{"proposal-status", "what the write gate decided on a proposal (--id prop_…)", runMemoryProposalStatus},
	}, args, e)
}

// memoryFlags are the flags every memory subcommand has.
type memoryFlags struct {
	fs     *flag.FlagSet
	server *string
	token  *string
}

func newMemoryFlags(sub, synopsis string, e *env) *memoryFlags {
	fs := newFlags("memory "+sub, "memory "+sub+" "+synopsis+" [--server URL] [--token T]", e)
	return &memoryFlags{
		fs:     fs,
		server: fs.String("server", defaultServer(e), "NovaOS server `URL` ($"+EnvServer+" sets the default)"),
		token:  fs.String("token", "", "execution `token` (default $"+EnvToken+"; prefer the variable: a flag shows in the process list)"),
	}
}

// run parses args and calls the service with a client, printing the
// result as JSON.
func (m *memoryFlags) run(ctx context.Context, args []string, e *env, do func(*memory.Client) (any, error)) int {
	if code, ok := parse(m.fs, args); !ok {
		return code
	}
	tok := *m.token
	if tok == "" {
		tok = e.getenv(EnvToken)
	}
	if tok == "" {
		return usageError(m.fs, "no token: set $%s or --token (novaos token mint makes one)", EnvToken)
	}
	c, err := memory.NewClient(*m.server, secret.New(tok), nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos %s: %v\n", m.fs.Name(), err)
		return exitFail
	}
	res, err := do(c)
	if err != nil {
		fmt.Fprintf(e.stderr, "novaos %s: %v\n", m.fs.Name(), err)
		return exitFail
	}
	out, _ := json.MarshalIndent(res, "", "  ")
	fmt.Fprintln(e.stdout, string(out))
	return exitOK
}

func optionalInt(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

func runMemoryWrite(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("write", "--scope S --content TEXT [flags]", e)
	var tags listFlag
	scope := m.fs.String("scope", "", "`scope`: run, task or agent (user and tenant are refused for agents)")
	content := m.fs.String("content", "", "the memory's `text` (at most 32 KiB)")
	typ := m.fs.String("type", "", "memory `type`: semantic, episodic or procedural")
	m.fs.Var(&tags, "tag", "a `tag` (repeatable)")
	source := m.fs.String("source", "", "where the memory came from")
	ttl := m.fs.Duration("ttl", 0, "how long the memory lives (run and task default to 5m)")
	conv := m.fs.String("conversation", "", "conversation `id` to file the memory under")
	key := m.fs.String("idempotency-key", "", "a replay with the same `key` within 24h returns the first result")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		r := &memory.WriteRequest{Scope: memory.Scope(*scope), Content: *content, MemoryType: memory.Type(*typ),
			ConversationID: *conv, IdempotencyKey: *key}
		if len(tags) > 0 || *source != "" {
			r.Metadata = &memory.WriteMetadata{Tags: tags}
			if *source != "" {
				r.Metadata.Source = source
			}
		}
		if *ttl > 0 {
			secs := int64((*ttl + time.Second - 1) / time.Second)
			r.TTLSeconds = &secs
		}
		return c.Write(ctx, r)
	})
}

func runMemoryQuery(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("query", "--scope S --query TEXT [flags]", e)
	var tags listFlag
	scope := m.fs.String("scope", "", "`scope`: run, task, agent, user or tenant")
	query := m.fs.String("query", "", "what to look for")
	topK := m.fs.Int("top-k", 0, "at most `n` results (default 10)")
	typ := m.fs.String("type", "", "only memories of this `type`")
	conv := m.fs.String("conversation", "", "only durable memories filed under this conversation `id`")
	m.fs.Var(&tags, "tag", "only memories with this `tag` (repeatable)")
	tokens := m.fs.Int("token-budget", 0, "pack the results into this many `tokens`")
	latency := m.fs.Int("latency-budget-ms", 0, "answer within this many `ms` (partial past it)")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		r := &memory.QueryRequest{Scope: memory.Scope(*scope), Query: *query, TopK: optionalInt(*topK), MemoryType: memory.Type(*typ),
			ConversationID: *conv, TokenBudget: optionalInt(*tokens), LatencyBudgetMS: optionalInt(*latency)}
		if len(tags) > 0 {
			r.Filters = &memory.Filters{Tags: tags}
		}
		return c.Query(ctx, r)
	})
}

func runMemoryUpdate(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("update", "--id ID --version N [--content TEXT] [--tag T]…", e)
	var tags listFlag
	id := m.fs.String("id", "", "the memory's `id` (not a prop_ id)")
	version := m.fs.Int64("version", 0, "the `version` last read (a stale one gets 409)")
	content := m.fs.String("content", "", "new `text`")
	m.fs.Var(&tags, "tag", "replace the tags with these (repeatable)")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		r := &memory.UpdateRequest{Scope: memory.ScopeAgent, MemoryID: *id, Version: *version}
		if *content != "" {
			r.Content = content
		}
		if len(tags) > 0 {
			r.Metadata = &memory.UpdateMetadata{Tags: tags}
		}
		return c.Update(ctx, r)
	})
}

func runMemoryForget(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("forget", "--scope S --id ID --reason TEXT", e)
	scope := m.fs.String("scope", "", "the memory's `scope`")
	id := m.fs.String("id", "", "the memory's `id`")
	reason := m.fs.String("reason", memory.DefaultForgetReason, "why, 1 to 500 characters, kept in the audit trail")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		return c.Forget(ctx, &memory.ForgetRequest{Scope: memory.Scope(*scope), MemoryID: *id, Reason: *reason})
	})
}

func runMemoryHint(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("hint", "--hint TEXT --conversation ID [flags]", e)
	var tags listFlag
	hint := m.fs.String("hint", "", "the observation about the user (at most 8 KiB)")
	conv := m.fs.String("conversation", "", "the conversation `id` it came from (required)")
	prio := m.fs.String("priority", "", "low, normal (default) or high")
	m.fs.Var(&tags, "tag", "a `tag` for the facts (repeatable)")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		return c.Hint(ctx, &memory.HintRequest{Hint: *hint, ConversationID: *conv, Priority: *prio, Tags: tags})
	})
}

func runMemoryAssemble(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("assemble", "--query TEXT [flags]", e)
	query := m.fs.String("query", "", "what the turn is about")
	topK := m.fs.Int("top-k", 0, "at most `n` memories per scope (default 10)")
	live := m.fs.Int("live-limit", 0, "at most `n` live messages (default 20)")
	tokens := m.fs.Int("token-budget", 0, "pack the bundle into this many `tokens`")
	latency := m.fs.Int("latency-budget-ms", 0, "answer within this many `ms` (partial past it)")
	typ := m.fs.String("type", "", "only memories of this `type`")
	conv := m.fs.String("conversation", "", "only durable memories filed under this conversation `id`")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		return c.Assemble(ctx, &memory.AssembleRequest{Query: *query, TopK: optionalInt(*topK), LiveMessageLimit: optionalInt(*live),
			TokenBudget: optionalInt(*tokens), LatencyBudgetMS: optionalInt(*latency), MemoryType: memory.Type(*typ), ConversationID: *conv})
	})
}

func runMemoryHintStatus(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("hint-status", "--id ID", e)
	id := m.fs.String("id", "", "the hint's `id`")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) { return c.HintStatus(ctx, *id) })
}

func runMemoryProposalStatus(ctx context.Context, args []string, e *env) int {
	m := newMemoryFlags("proposal-status", "--id prop_…", e)
	id := m.fs.String("id", "", "the proposal's `id`")
	wait := m.fs.Duration("wait", 0, "poll until decided, at most this long")
	return m.run(ctx, args, e, func(c *memory.Client) (any, error) {
		if *wait > 0 {
			ctx, cancel := context.WithTimeout(ctx, *wait)
			defer cancel()
			return c.PollProposal(ctx, *id, 0)
		}
		return c.ProposalStatus(ctx, *id)
	})
}
