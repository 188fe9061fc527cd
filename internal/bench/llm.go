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
	"strings"
	"time"

	"novaos.dev/novaos/llm"
	"novaos.dev/novaos/secret"
)

// Names of the llm scenarios: a streamed chat completion asked of the
// provider directly, and the same through the LLM gateway.
const (
	ScenarioLLMDirect  = "direct"
	ScenarioLLMGateway = "gateway"
)

// LLMTarget is what [RunLLM] measures: an OpenAI-compatible provider,
// and the gateway it is routed behind.
type LLMTarget struct {
	// Direct is the provider's OpenAI base URL, Gateway the gateway's
	// (http://…/v1).
	Direct, Gateway string
	// Model is the model both are asked for: the provider's name of it is
	// the gateway's route name too.
	Model string
	// Token is client i's bearer token for the gateway, an execution
	// token granting llm:model:<Model>.
	Token func(client int) (secret.Value, error)
}

// LLMResult is what [RunLLM] measured, and the figures the gateway's
// goals are read from.
type LLMResult struct {
	// Latency is the phase with one client, one stream at a time: what a
	// call costs without queueing. Load has Concurrency clients.
	Latency LLMPhase `json:"latency"`
	Load    LLMPhase `json:"load"`
	// AddedP50 and AddedP99 are the latency phase's time to the first
	// streamed token through the gateway minus directly.
	AddedP50 time.Duration `json:"addedFirstTokenP50Ns"`
	AddedP99 time.Duration `json:"addedFirstTokenP99Ns"`
	// ThroughputRatio is the load phase's streams/s through the gateway
	// over directly.
	ThroughputRatio float64 `json:"throughputRatio"`
}

// LLMPhase is one phase's two sides.
type LLMPhase struct {
	Clients int     `json:"clients"`
	Direct  LLMSide `json:"direct"`
	Gateway LLMSide `json:"gateway"`
}

// LLMSide is one side of a phase.
type LLMSide struct {
	Scenario string `json:"scenario"`
	// Calls are the measured streams, successful or not.
	Calls  uint64 `json:"calls"`
	Errors uint64 `json:"errors"`
	// Elapsed is the measured time of this side's rounds, and Throughput
	// its successful streams per second of it.
	Elapsed    time.Duration `json:"elapsedNs"`
	Throughput float64       `json:"throughput"`
	// FirstToken is from sending the request to reading the stream's
	// first chunk; Latency to reading its [DONE].
	FirstToken Latency `json:"firstToken"`
	Latency    Latency `json:"latency"`
	FirstError string  `json:"firstError,omitempty"`
}

func llmResult(s *side) LLMSide {
	return LLMSide{Scenario: s.name, Calls: s.calls, Errors: s.errors, Elapsed: s.elapsed, Throughput: s.throughput(),
		FirstToken: latencyOf(&s.first), Latency: latencyOf(&s.total), FirstError: s.errText}
}

// RunLLM measures t: a latency phase of one client, then a load phase of
// o.Concurrency, each running the direct and the gateway side in turns.
// Every call is a streamed chat completion asking for its usage, of a
// prompt of its own, which an llm/llmtest provider answers back word by
// word; a call fails unless the stream's text is its prompt and the
// stream carries the usage and ends with [DONE]. A failed call counts as
// an error of its side; RunLLM itself fails only when ctx ends.
func RunLLM(ctx context.Context, t *LLMTarget, opts *PhasesOptions) (*LLMResult, error) {
	if t == nil || t.Direct == "" || t.Gateway == "" || t.Model == "" || t.Token == nil {
		return nil, errors.New("bench: llm: incomplete target")
	}
	res := &LLMResult{}
	var err error
	res.Latency, res.Load, err = runPhases(ctx, opts, func(ctx context.Context, tt turns) (LLMPhase, error) { return llmPhase(ctx, t, tt) })
	if err != nil {
		return nil, err
	}
	res.AddedP50 = res.Latency.Gateway.FirstToken.P50 - res.Latency.Direct.FirstToken.P50
	res.AddedP99 = res.Latency.Gateway.FirstToken.P99 - res.Latency.Direct.FirstToken.P99
	if d := res.Load.Direct.Throughput; d > 0 {
		res.ThroughputRatio = res.Load.Gateway.Throughput / d
	}
	return res, nil
}

// llmPhase runs the direct and the gateway side in turns as tt says.
func llmPhase(ctx context.Context, t *LLMTarget, tt turns) (LLMPhase, error) {
	clients := tt.clients
	direct, gw := NewClient(clients), NewClient(clients)
	defer direct.CloseIdleConnections()
	defer gw.CloseIdleConnections()
	tokens := make([]secret.Value, clients)
	for i := range clients {
		tok, err := t.Token(i)
		if err != nil {
			return LLMPhase{}, fmt.Errorf("bench: llm: token: %w", err)
		}
		tokens[i] = tok
	}
	mk := func(name, base string, hc *http.Client, tok func(int) secret.Value) *side {
		seq := make([]uint64, clients)
		return &side{name: name, do: func(ctx context.Context, i int) (time.Duration, time.Duration, error) {
			seq[i]++
			prompt := "bench llm client " + strconv.Itoa(i) + " call " + strconv.FormatUint(seq[i], 10)
			return StreamChat(ctx, hc, base, tok(i), t.Model, prompt)
		}}
	}
	sides := []*side{
		mk(ScenarioLLMDirect, t.Direct, direct, func(int) secret.Value { return secret.Value{} }),
		mk(ScenarioLLMGateway, t.Gateway, gw, func(i int) secret.Value { return tokens[i] }),
	}
	if err := tt.run(ctx, sides); err != nil {
		return LLMPhase{}, err
	}
	return LLMPhase{Clients: clients, Direct: llmResult(sides[0]), Gateway: llmResult(sides[1])}, nil
}

// StreamChat asks base (an OpenAI base URL) with tok (none when zero) for
// a streamed chat completion of model answering prompt, with its usage,
// and reads the stream to its [DONE]. It fails unless the stream's text
// is prompt, as llm/llmtest answers, and it carried the usage. first is
// from sending the request to reading the first chunk, total to [DONE].
func StreamChat(ctx context.Context, hc *http.Client, base string, tok secret.Value, model, prompt string) (first, total time.Duration, err error) {
	body, err := json.Marshal(&llm.ChatCompletionRequest{Model: model, Stream: true, StreamOptions: &llm.StreamOptions{IncludeUsage: true},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: llm.Text(prompt)}}})
	if err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if !tok.IsZero() {
		req.Header.Set("Authorization", "Bearer "+tok.Reveal())
	}
	t0 := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return 0, 0, llm.ParseError(resp.StatusCode, b)
	}
	rd := llm.NewEventReader(resp.Body, llm.DefaultMaxEventBytes)
	var text strings.Builder
	usage := false
	for {
		ev, err := rd.Next()
		if err != nil {
			return 0, 0, fmt.Errorf("the stream ended before [DONE]: %w", err)
		}
		if first == 0 {
			first = max(time.Since(t0), 1)
		}
		if string(ev.Data) == "[DONE]" {
			break
		}
		var c llm.Chunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			return 0, 0, fmt.Errorf("a chunk that is not one: %w", err)
		}
		text.WriteString(c.Text())
		usage = usage || c.Usage != nil
	}
	total = time.Since(t0)
	switch {
	case text.String() != prompt:
		return 0, 0, fmt.Errorf("the stream answered %q, want the prompt back", clipKind(text.String()))
	case !usage:
		return 0, 0, errors.New("the stream carried no usage")
	}
	return first, total, nil
}
