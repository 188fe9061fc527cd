package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"novaos.dev/novaos/adapter"
)

// HTTPOptions tune an HTTP bridge; nil means the defaults.
type HTTPOptions struct {
	// Client sends the requests (default: one with no timeout of its own,
	// since a run takes as long as it takes; Timeout bounds it).
	Client *http.Client
	// Timeout bounds one turn (default 1 hour).
	Timeout time.Duration
}

// HTTP is a Handler that POSTs each run to an agent at a local URL.
type HTTP struct {
	url     string
	client  *http.Client
	timeout time.Duration
}

// NewHTTP makes an HTTP bridge to target, an http URL on this machine
// (loopback) or an https one.
func NewHTTP(target string, opts *HTTPOptions) (*HTTP, error) {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, errors.New("bridge: the agent's URL is an absolute http or https URL")
	}
	if u.Scheme == "http" && !adapter.IsLoopbackHost(u.Hostname()) {
		return nil, errors.New("bridge: clear-text http is for an agent on this machine (127.0.0.1, ::1, localhost) only")
	}
	h := &HTTP{url: target, client: &http.Client{}, timeout: time.Hour}
	if opts != nil {
		if opts.Client != nil {
			h.client = opts.Client
		}
		if opts.Timeout > 0 {
			h.timeout = opts.Timeout
		}
	}
	return h, nil
}

// Prepare does nothing: the agent gets the run when it starts.
func (h *HTTP) Prepare(context.Context, *adapter.Invocation) error { return nil }

// Execute POSTs the run and applies the reply lines.
func (h *HTTP) Execute(ctx context.Context, run *adapter.Run) error {
	rc, err := run.LoadContext(ctx)
	if err != nil {
		return fmt.Errorf("bridge: loading the run's context: %w", err)
	}
	body, err := json.Marshal(request(run, rc))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson, application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &adapter.RuntimeFailure{Err: fmt.Errorf("the agent could not be reached: %w", errors.Unwrap(err))}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return &adapter.RuntimeFailure{Err: fmt.Errorf("the agent answered HTTP %d", resp.StatusCode)}
	}
	replies, err := readReplies(io.LimitReader(resp.Body, 16*MaxLineBytes), resp.Header.Get("Content-Type"))
	if err != nil {
		return &adapter.RuntimeFailure{Err: err}
	}
	t := &turn{run: run}
	for _, r := range replies {
		if r.RunID != "" && r.RunID != run.ID {
			continue
		}
		done, err := t.apply(ctx, r)
		if err != nil || done {
			return err
		}
	}
	return nil
}

// readReplies reads an answer: a JSON array of replies, or one reply a
// line.
func readReplies(r io.Reader, contentType string) ([]Reply, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	first, _ := br.Peek(1)
	if strings.HasPrefix(contentType, "application/json") && len(first) == 1 && first[0] == '[' {
		var raw []json.RawMessage
		if err := json.NewDecoder(br).Decode(&raw); err != nil {
			return nil, fmt.Errorf("bridge: the answer is not a JSON array: %w", err)
		}
		out := make([]Reply, 0, len(raw))
		for _, line := range raw {
			rep, err := decodeReply(line)
			if err != nil {
				return nil, err
			}
			out = append(out, rep)
		}
		return out, nil
	}
	var out []Reply
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		rep, err := decodeReply(line)
		if err != nil {
			return nil, err
		}
		out = append(out, rep)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bridge: reading the answer: %w", err)
	}
	return out, nil
}

var _ adapter.Handler = (*HTTP)(nil)
