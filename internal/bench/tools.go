package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"novaos.dev/novaos/secret"
	"novaos.dev/novaos/tools"
)

// Names of the tools scenarios: the upstream's read-only tool called
// directly, the same tool through the tool gateway, and its write-class
// twin through the gateway, with the gate passing it.
const (
	ScenarioToolsDirect = "direct"
	ScenarioToolsRead   = "gateway-read"
	ScenarioToolsWrite  = "gateway-write"
)

// The tools of [ToolsUpstream].
const (
	ToolsEcho  = "echo"
	ToolsWrite = "write"
)

// ToolsPolicy is the tool policy [SetUpTools] gives the tenant: every
// call allowed as classified, and a write-class call left to the gate's
// rules alone (a tenant without rules passes it), not to a person.
const ToolsPolicy = `class == "write" ? "gate" : "allow"`

// maxToolsText bounds the text the upstream's tools take, as any real
// server would.
const maxToolsText = 4 << 10

type toolsIn struct {
	Text string `json:"text" jsonschema:"the text to answer back"`
}

// ToolsUpstream is the upstream MCP server the tools benchmark calls, on
// the official Go SDK: echo, marked readOnlyHint (read-class), and write,
// marked destructive (write-class), each answering its text back.
func ToolsUpstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream", Version: "1"}, nil)
	answer := func(_ context.Context, _ *mcp.CallToolRequest, in toolsIn) (*mcp.CallToolResult, any, error) {
		if len(in.Text) > maxToolsText {
			return nil, nil, fmt.Errorf("text over %d bytes", maxToolsText)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	}
	destructive := true
	mcp.AddTool(s, &mcp.Tool{Name: ToolsEcho, Description: "Answers the text back.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, answer)
	mcp.AddTool(s, &mcp.Tool{Name: ToolsWrite, Description: "Answers the text back, as if it wrote it somewhere.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}}, answer)
	return s
}

// ToolsUpstreamHandler serves [ToolsUpstream] over Streamable HTTP with
// the SDK's defaults, as a tenant's Go server would: sessions, and each
// answer as an event stream.
func ToolsUpstreamHandler() http.Handler {
	s := ToolsUpstream()
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
}

// SetUpTools prepares a tenant of the server at baseURL for the tools
// benchmark through its APIs, with admin, a token of the tenant holding
// tools.ScopeAdmin: it registers the MCP endpoint upstreamURL as the
// upstream server named server, and sets [ToolsPolicy].
func SetUpTools(ctx context.Context, hc *http.Client, baseURL string, admin secret.Value, server, upstreamURL string) error {
	reg, _ := json.Marshal(tools.ServerRequest{Transport: tools.TransportHTTP, URL: upstreamURL})
	if err := Put(ctx, hc, baseURL+tools.ServersPath+"/"+server, admin, reg); err != nil {
		return fmt.Errorf("bench: register the upstream server: %w", err)
	}
	pol, _ := json.Marshal(map[string]string{"expr": ToolsPolicy})
	if err := Put(ctx, hc, baseURL+"/api/v1/tools/policy", admin, pol); err != nil {
		return fmt.Errorf("bench: set the tool policy: %w", err)
	}
	return nil
}

// Put sends body, JSON, to url with tok as the bearer token, and fails
// unless the answer is a 2xx.
func Put(ctx context.Context, hc *http.Client, url string, tok secret.Value, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s: %s", req.URL.Path, resp.Status, bytes.TrimSpace(b))
	}
	return nil
}

// ToolsTarget is what [RunTools] measures: an upstream MCP server, and
// the tool gateway it is registered behind.
type ToolsTarget struct {
	// Upstream is the upstream's MCP endpoint, Gateway the gateway's
	// (http://…/mcp/v1).
	Upstream, Gateway string
	// Server is the name the upstream is registered under: the gateway
	// serves its tools as novaos.<Server>.<tool>.
	Server string
	// Token is client i's bearer token for the gateway: a token of the
	// tenant the upstream is registered for, naming an agent, granting
	// mcp:tools:<Server>.
	Token func(client int) (secret.Value, error)
}

// ToolsResult is what [RunTools] measured, and the figures the gateway's
// goals are read from.
type ToolsResult struct {
	// Latency is the phase with one client, one call at a time: what a
	// call costs without queueing. Load has Concurrency clients.
	Latency ToolsPhase `json:"latency"`
	Load    ToolsPhase `json:"load"`
	// AddedP50 and AddedP99 are the latency phase's gateway-read minus
	// direct: what the gateway adds to a read-class call.
	AddedP50 time.Duration `json:"addedP50Ns"`
	AddedP99 time.Duration `json:"addedP99Ns"`
	// WriteAddedP99 is the latency phase's gateway-write p99 minus
	// gateway-read's: what the gate adds to a write-class call it passes.
	WriteAddedP99 time.Duration `json:"writeAddedP99Ns"`
	// ThroughputRatio is the load phase's gateway-read calls/s over
	// direct's, WriteThroughputRatio gateway-write's over gateway-read's.
	ThroughputRatio      float64 `json:"throughputRatio"`
	WriteThroughputRatio float64 `json:"writeThroughputRatio"`
}

// ToolsPhase is one phase's three sides.
type ToolsPhase struct {
	Clients int       `json:"clients"`
	Direct  ToolsSide `json:"direct"`
	Read    ToolsSide `json:"read"`
	Write   ToolsSide `json:"write"`
}

// ToolsSide is one side of a phase.
type ToolsSide struct {
	Scenario string `json:"scenario"`
	// Calls are the measured calls, successful or not.
	Calls  uint64 `json:"calls"`
	Errors uint64 `json:"errors"`
	// Elapsed is the measured time of this side's rounds, and Throughput
	// its successful calls per second of it.
	Elapsed    time.Duration `json:"elapsedNs"`
	Throughput float64       `json:"throughput"`
	// Latency is a call's, from CallTool to its result.
	Latency    Latency `json:"latency"`
	FirstError string  `json:"firstError,omitempty"`
}

// RunTools measures t: a latency phase of one client, then a load phase
// of o.Concurrency, each running the three sides in alternating rounds.
// Every client holds its own session on each side, opened before the
// phase, and sends each call distinct arguments; a call fails unless its
// result is its own text back. A failed call counts as an error of its
// side; RunTools itself fails only when a session cannot be opened or
// ctx ends.
func RunTools(ctx context.Context, t *ToolsTarget, opts *PhasesOptions) (*ToolsResult, error) {
	if t == nil || t.Upstream == "" || t.Gateway == "" || !tools.ValidServerName(t.Server) || t.Token == nil {
		return nil, errors.New("bench: tools: incomplete target")
	}
	res := &ToolsResult{}
	var err error
	res.Latency, res.Load, err = runPhases(ctx, opts, func(ctx context.Context, tt turns) (ToolsPhase, error) { return toolsPhase(ctx, t, tt) })
	if err != nil {
		return nil, err
	}
	res.AddedP50 = res.Latency.Read.Latency.P50 - res.Latency.Direct.Latency.P50
	res.AddedP99 = res.Latency.Read.Latency.P99 - res.Latency.Direct.Latency.P99
	res.WriteAddedP99 = res.Latency.Write.Latency.P99 - res.Latency.Read.Latency.P99
	if d := res.Load.Direct.Throughput; d > 0 {
		res.ThroughputRatio = res.Load.Read.Throughput / d
	}
	if r := res.Load.Read.Throughput; r > 0 {
		res.WriteThroughputRatio = res.Load.Write.Throughput / r
	}
	return res, nil
}

func toolsResult(s *side) ToolsSide {
	return ToolsSide{Scenario: s.name, Calls: s.calls, Errors: s.errors, Elapsed: s.elapsed, Latency: latencyOf(&s.total),
		FirstError: s.errText, Throughput: s.throughput()}
}

// toolsPhase opens tt.clients' sessions on each side, runs the sides in
// turns as tt says and closes the sessions.
func toolsPhase(ctx context.Context, t *ToolsTarget, tt turns) (ToolsPhase, error) {
	clients := tt.clients
	prefix := tools.Prefix + t.Server + "."
	names := []string{ScenarioToolsDirect, ScenarioToolsRead, ScenarioToolsWrite}
	toolOf := []string{ToolsEcho, prefix + ToolsEcho, prefix + ToolsWrite}
	direct, gw := NewClient(clients), NewClient(clients)
	defer direct.CloseIdleConnections()
	defer gw.CloseIdleConnections()
	sessions := make([][]*mcp.ClientSession, len(names))
	defer func() {
		for _, ss := range sessions {
			for _, cs := range ss {
				if cs != nil {
					cs.Close()
				}
			}
		}
	}()
	sides := make([]*side, len(names))
	for k, name := range names {
		sessions[k] = make([]*mcp.ClientSession, clients)
		for i := range clients {
			var err error
			if name == ScenarioToolsDirect {
				sessions[k][i], err = ConnectMCP(ctx, t.Upstream, direct, secret.Value{})
			} else {
				var tok secret.Value
				if tok, err = t.Token(i); err == nil {
					sessions[k][i], err = ConnectMCP(ctx, t.Gateway, gw, tok)
				}
			}
			if err != nil {
				return ToolsPhase{}, fmt.Errorf("bench: tools: %s: connect: %w", name, err)
			}
		}
		// Per client, so that every call's text is new.
		seq := make([]uint64, clients)
		sides[k] = &side{name: name, do: func(ctx context.Context, i int) (time.Duration, time.Duration, error) {
			seq[i]++
			text := "bench tools client " + strconv.Itoa(i) + " call " + strconv.FormatUint(seq[i], 10)
			t0 := time.Now()
			err := CallEcho(ctx, sessions[k][i], toolOf[k], text)
			took := time.Since(t0)
			return took, took, err
		}}
	}
	if err := tt.run(ctx, sides); err != nil {
		return ToolsPhase{}, err
	}
	return ToolsPhase{Clients: clients, Direct: toolsResult(sides[0]), Read: toolsResult(sides[1]), Write: toolsResult(sides[2])}, nil
}

// CallEcho calls tool, one of [ToolsUpstream]'s (by its own name or the
// gateway's), with text, and fails unless the result is text back.
func CallEcho(ctx context.Context, cs *mcp.ClientSession, tool, text string) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: toolsIn{Text: text}})
	if err != nil {
		return err
	}
	if len(res.Content) != 1 {
		return fmt.Errorf("%s answered %d content blocks, want 1", tool, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	switch {
	case !ok:
		return fmt.Errorf("%s answered %T, want text", tool, res.Content[0])
	case res.IsError:
		return fmt.Errorf("%s failed: %s", tool, clipKind(tc.Text))
	case tc.Text != text:
		return fmt.Errorf("%s answered %q, want its text back", tool, clipKind(tc.Text))
	}
	return nil
}

// ConnectMCP opens an MCP client session (official Go SDK, Streamable
// HTTP) at endpoint over hc, sending tok as its bearer token unless it is
// empty. It opens no stream for the server's own messages, and never
// retries a broken one: a benchmark's failure must show.
func ConnectMCP(ctx context.Context, endpoint string, hc *http.Client, tok secret.Value) (*mcp.ClientSession, error) {
	if !tok.IsZero() {
		hc = &http.Client{Transport: bearerTransport{tok: tok, next: hc.Transport}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "novaos-bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

type bearerTransport struct {
	tok  secret.Value
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok.Reveal())
	return b.next.RoundTrip(r)
}
