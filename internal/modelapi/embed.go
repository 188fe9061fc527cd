package modelapi

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"

	"novaos.dev/novaos/secret"
)

// DefaultBatch is how many texts one embeddings request carries.
const DefaultBatch = 64

// EmbedderOptions configure an Embedder.
type EmbedderOptions struct {
	Options
	// Dims asks the model for vectors of this width (the API's
	// "dimensions"), for models that can shorten theirs; 0 takes the
	// model's own width, learnt from its first answer.
	Dims int
	// Batch is the most texts per request (default 64).
	Batch int
}

// Embedder calls POST {base}/embeddings. It implements memory.Embedder:
// its ModelID names the endpoint's model and width, so vectors of
// another model or width are never compared with its own.
type Embedder struct {
	c     *client
	model string
	ask   int // dimensions asked for, 0 for the model's own
	batch int
	dims  atomic.Int64
}

// NewEmbedder returns an Embedder of model at baseURL.
func NewEmbedder(baseURL, model string, key secret.Value, o *EmbedderOptions) *Embedder {
	if o == nil {
		o = &EmbedderOptions{}
	}
	e := &Embedder{c: newClient(baseURL, "/embeddings", key, &o.Options), model: model, ask: o.Dims, batch: o.Batch}
	if e.batch <= 0 {
		e.batch = DefaultBatch
	}
	e.dims.Store(int64(o.Dims))
	return e
}

// ModelID is "openai-compatible:<model>:<dims>"; before the first answer
// of a model whose width was not given, the width reads 0.
func (e *Embedder) ModelID() string {
	return "openai-compatible:" + e.model + ":" + strconv.FormatInt(e.dims.Load(), 10)
}

// Dims is the vectors' width (0 until known).
func (e *Embedder) Dims() int { return int(e.dims.Load()) }

type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order, requesting Batch texts at
// a time. Every vector of every answer must have the same width, each
// index must come back exactly once, and every number must be finite.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		end := min(start+e.batch, len(texts))
		var resp embedResponse
		if err := e.c.post(ctx, embedRequest{Model: e.model, Input: texts[start:end], Dimensions: e.ask}, &resp); err != nil {
			return nil, fmt.Errorf("modelapi: embed: %w", err)
		}
		if len(resp.Data) != end-start {
			return nil, malformed("%d embeddings for %d texts", len(resp.Data), end-start)
		}
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= end-start || out[start+d.Index] != nil {
				return nil, malformed("embedding index %d out of place", d.Index)
			}
			vec, err := e.vector(d.Embedding)
			if err != nil {
				return nil, err
			}
			out[start+d.Index] = vec
		}
	}
	return out, nil
}

// vector checks one embedding against the width seen so far.
func (e *Embedder) vector(v []float64) ([]float32, error) {
	if len(v) == 0 {
		return nil, malformed("empty embedding")
	}
	if want := e.dims.Load(); want == 0 {
		e.dims.CompareAndSwap(0, int64(len(v)))
	}
	if want := e.dims.Load(); int64(len(v)) != want {
		return nil, malformed("embedding of %d numbers, want %d", len(v), want)
	}
	out := make([]float32, len(v))
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
			return nil, malformed("embedding holds a non-finite number")
		}
		out[i] = float32(x)
	}
	return out, nil
}
