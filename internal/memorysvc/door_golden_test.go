package memorysvc

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"novaos.dev/novaos/identity"
	"novaos.dev/novaos/internal/httpgolden"
	"novaos.dev/novaos/internal/pgtest"
	"novaos.dev/novaos/memory"
	"novaos.dev/novaos/store/postgres"
)

var update = flag.Bool("update", false, "rewrite the direct door's golden exchanges in testdata/door")

// goldenTokens are the bearer tokens of the golden exchanges and the
// claims each stands for. "agent" carries what the memory guide says an
// agent's token carries: memory:read:user, agent and run, and
// memory:write:agent and run ("Agents can write agent and run scope
// only ... agent tokens don't carry" memory:write:user or tenant).
var goldenTokens = map[string]identity.Claims{
	"agent":        {TenantID: "acme", AgentID: "support", UserID: "u1", RunID: "run-1", ConversationID: "conv-1", Scopes: seedAgentScopes},
	"other-agent":  {TenantID: "acme", AgentID: "billing", UserID: "u1", RunID: "run-2", ConversationID: "conv-2", Scopes: seedAgentScopes},
	"other-tenant": {TenantID: "globex", AgentID: "support", UserID: "u1", RunID: "run-1", ConversationID: "conv-1", Scopes: seedAgentScopes},
	"reader":       {TenantID: "acme", AgentID: "support", UserID: "u1", RunID: "run-1", ConversationID: "conv-1", Scopes: []string{"memory:read:*"}},
}

// seedAgentScopes are the memory scopes of an agent's execution token.
var seedAgentScopes = []string{"memory:read:user", "memory:read:agent", "memory:read:run", "memory:write:agent", "memory:write:run"}

// goldenCaller is the Caller of a golden request's bearer token.
func goldenCaller(r *http.Request) (*Caller, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims, known := goldenTokens[tok]
	if !ok || !known {
		return nil, false
	}
	return &Caller{Tenant: claims.TenantID, Agent: claims.AgentID, User: claims.UserID, Run: claims.RunID,
		Conversation: claims.ConversationID, Grants: claims.HasScope}, true
}

// TestDoorGolden runs the direct door's golden exchanges, txtar files of
// numbered request/response pairs in testdata/door, against a fresh
// service on SQLite and, when NOVAOS_TEST_POSTGRES_URL is set, on
// PostgreSQL:
//
//	-- 1.request --
//	POST /api/v1/mcp
//	Authorization: Bearer agent
//
//	{"tool":"memory.write","payload":{…}}
//	-- 1.response --
//	200
//	Content-Type: application/json
//
//	{ …indented… }
//
// Ids in answers become <id-1>, <id-2>, … in the order they first appear,
// and a request may name them so; times become <time> and scores
// <score>, in JSON text inside an answer too. The write gate decides pending proposals before each request,
// so a proposal written in one step is committed in the next. Run with
// -update to rewrite the responses after an intended change.
func TestDoorGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/door/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	backends := []struct {
		name string
		open func(t *testing.T) memory.Store
	}{
		{"sqlite", func(t *testing.T) memory.Store { return openStore(t) }},
		{"postgres", func(t *testing.T) memory.Store {
			db, err := postgres.Open(context.Background(), pgtest.URL(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db.MemoryStore()
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, file := range files {
				t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
					// -update rewrites from SQLite only; PostgreSQL must then
					// answer the same bytes.
					runDoorGolden(t, b.open(t), file, *update && b.name == "sqlite")
				})
			}
		})
	}
}

// goldenHeaders are the response headers a golden response records.
var goldenHeaders = []string{"Content-Type", "Cache-Control", "WWW-Authenticate"}

func runDoorGolden(t *testing.T, st memory.Store, file string, rewrite bool) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	s := New(st, &Options{Now: clk.now})
	srv := httptest.NewServer(s.Handler(goldenCaller, &HandlerOptions{Version: "golden"}))
	defer srv.Close()
	ids := &idMap{byReal: map[string]string{}, byName: map[string]string{}}
	ctx := context.Background()

	var out []txtar.File
	for i := 0; i < len(ar.Files); i++ {
		f := ar.Files[i]
		step, ok := strings.CutSuffix(f.Name, ".request")
		if !ok {
			continue
		}
		s.judgeProposals(ctx)
		clk.add(time.Second)
		got := ids.normalise(doGoldenRequest(t, srv, ids.resolve(f.Data)))
		out = append(out, f, txtar.File{Name: step + ".response", Data: got})
		var want []byte
		if i+1 < len(ar.Files) && ar.Files[i+1].Name == step+".response" {
			want = ar.Files[i+1].Data
		}
		if !rewrite && !bytes.Equal(want, got) {
			t.Errorf("step %s: response differs\n--- want\n%s\n--- got\n%s", step, want, got)
		}
	}
	if rewrite {
		ar.Files = out
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func doGoldenRequest(t *testing.T, srv *httptest.Server, raw []byte) []byte {
	t.Helper()
	head, body := httpgolden.Do(t, srv, raw, goldenHeaders)
	buf := bytes.NewBuffer(head)
	if err := json.Indent(buf, bytes.TrimSpace(body), "", "  "); err != nil {
		buf.Write(body) // not JSON: as it came
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\n")) {
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

var (
	// idRE is an id the service makes (a UUID, a proposal's prop_ one),
	// or a placeholder for one.
	idRE    = regexp.MustCompile(`(prop_)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	nameRE  = regexp.MustCompile(`<id-[0-9]+>`)
	timeRE  = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})`)
	scoreRE = regexp.MustCompile(`(\\?"score\\?": ?)[0-9][0-9.eE+-]*`)
)

// idMap names the ids of one exchange in the order they appear.
type idMap struct {
	byReal, byName map[string]string
}

func (m *idMap) normalise(b []byte) []byte {
	b = idRE.ReplaceAllFunc(b, func(id []byte) []byte {
		name, ok := m.byReal[string(id)]
		if !ok {
			name = fmt.Sprintf("<id-%d>", len(m.byReal)+1)
			m.byReal[string(id)], m.byName[name] = name, string(id)
		}
		return []byte(name)
	})
	b = timeRE.ReplaceAll(b, []byte(`<time>`))
	return scoreRE.ReplaceAll(b, []byte(`${1}<score>`))
}

// resolve puts the real ids back into a request.
func (m *idMap) resolve(b []byte) []byte {
	return nameRE.ReplaceAllFunc(b, func(name []byte) []byte {
		if id, ok := m.byName[string(name)]; ok {
			return []byte(id)
		}
		return name
	})
}
