package memory

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"

	"novaos.dev/novaos/vecdot"
)

// An Embedder turns texts into vectors. Each vector belongs to its model:
// stores keep ModelID beside it and only ever compare vectors of one
// model, so changing models means re-embedding, never mixing.
type Embedder interface {
	// Embed returns one vector of Dims() numbers per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// ModelID names the model and every setting that changes its vectors.
	ModelID() string
	Dims() int
}

// HashEmbedder is the default Embedder: deterministic, instant and
// offline, needing no model. It is lexical, not semantic: it maps a text
// to signed feature hashes of its words (as Terms gives them), word pairs
// and the character 3- to 5-grams of each word, weighted by 1 + log of
// their count, and L2-normalises the sum. Two texts come close when they
// share words, stems or spellings ("colour"/"color", "Lisbon"/"Lisboa"),
// never because they mean the same thing in other words ("car" and
// "automobile" share nothing). Use a real embedding model for that.
//
// The zero value is not usable; call NewHashEmbedder.
type HashEmbedder struct {
	dims int
	id   string
}

// DefaultDims is the HashEmbedder's default width: wide enough that the
// features of one memory rarely collide, small enough that an exact scan
// of 100k vectors stays in milliseconds.
const DefaultDims = 256

// Feature weights of the HashEmbedder. Words carry the meaning, pairs keep
// a little word order, and character n-grams catch misspellings and forms
// the stemmer misses; each n-gram counts for a fraction of a word since a
// word has many of them.
const (
	hashWordWeight  = 1.0
	hashPairWeight  = 0.5
	hashGramWeight  = 0.25
	hashGramMin     = 3
	hashGramMax     = 5
	hashModelPrefix = "novaos-hash-v1"
)

// NewHashEmbedder returns a HashEmbedder of dims dimensions (DefaultDims
// when dims is 0 or less).
func NewHashEmbedder(dims int) *HashEmbedder {
	if dims <= 0 {
		dims = DefaultDims
	}
	return &HashEmbedder{dims: dims, id: fmt.Sprintf("%s-%d", hashModelPrefix, dims)}
}

func (e *HashEmbedder) ModelID() string { return e.id }
func (e *HashEmbedder) Dims() int       { return e.dims }

// Embed never fails but for a cancelled context.
func (e *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = e.Vector(t)
	}
	return out, nil
}

// Vector embeds one text.
func (e *HashEmbedder) Vector(text string) []float32 { return e.QueryVector(text, nil) }

// QueryVector embeds a query with each word's features (the word, its
// pairs, its n-grams) scaled by idf(term), its term's inverse document
// frequency in the collection searched. Stored vectors stay unweighted,
// so they need no corpus statistics and never go stale; weighting the
// query alone makes a match on a rare word count for more than one on a
// word every memory holds, as in BM25. A nil idf weighs all words 1.
func (e *HashEmbedder) QueryVector(text string, idf func(term string) float64) []float32 {
	counts := map[string]float64{}
	terms := Terms(text)
	wt := func(t string) float64 {
		if idf == nil {
			return 1
		}
		return idf(t)
	}
	for i, t := range terms {
		counts["w\x00"+t] += hashWordWeight * wt(t)
		if i > 0 {
			counts["p\x00"+terms[i-1]+"\x00"+t] += hashPairWeight * min(wt(terms[i-1]), wt(t))
		}
	}
	forEachWord(text, func(w string) {
		if isStopWord(w) {
			return
		}
		g := "<" + w + ">"
		x := hashGramWeight * wt(Stem(w))
		for n := hashGramMin; n <= hashGramMax; n++ {
			for i := 0; i+n <= len(g); i++ {
				counts["g\x00"+g[i:i+n]] += x
			}
		}
	})
	v := make([]float32, e.dims)
	for f, c := range counts {
		h := fnv.New64a()
		h.Write([]byte(f))
		x := h.Sum64()
		w := 1 + math.Log(c)
		if c < 1 {
			w = c // a lone n-gram or pair keeps its fractional weight
		}
		if x>>63 == 1 {
			w = -w
		}
		v[x%uint64(e.dims)] += float32(w)
	}
	normalize(v)
	return v
}

func normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}

// Cosine is the cosine similarity of two vectors of one length (their dot
// product when both are L2-normalised, as every Embedder's are expected
// to be; stores compare vectors with it). Vectors of different lengths
// score 0.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float32
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float64(dot) / math.Sqrt(float64(na)*float64(nb))
}

// Dot is the dot product of two vectors of one length (the shorter
// length otherwise); with AVX2 and FMA on amd64 (package vecdot), so an
// exact scan of a partition stays in the low milliseconds.
func Dot(a, b []float32) float32 { return vecdot.Dot(a, b) }

// EncodeVector is how stores keep a vector: little-endian float32s.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// ErrBadVector is returned by DecodeVector for bytes no EncodeVector made.
var ErrBadVector = errors.New("memory: stored vector is damaged")

// MaxDims bounds a stored vector's length (the largest embedding models
// have 4096 dimensions).
const MaxDims = 8192

// DecodeVector reads a stored vector, refusing a length that is not a
// whole number of float32s, too long, or a value that is not finite.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 || len(b)/4 > MaxDims {
		return nil, ErrBadVector
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, ErrBadVector
		}
		v[i] = x
	}
	return v, nil
}

// EmbedText is the text a memory's vector is made from: its content and
// its tags, which say what the memory is about in the writer's words.
func EmbedText(content string, tags []string) string {
	if len(tags) == 0 {
		return content
	}
	return content + "\n" + strings.Join(tags, " ")
}
