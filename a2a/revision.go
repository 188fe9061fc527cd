package a2a

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
)

// ArtifactRevisionKey is the artifact metadata key that carries an
// artifact's revision counter. A2A's Artifact has a closed set of fields
// and no version among them, so the counter travels in metadata, the
// protocol's extension point, and every binding carries it unchanged.
const ArtifactRevisionKey = "novaos.dev/revision"

// DefaultArtifactRevision is the revision of an artifact nobody revised. It
// is never written: only a revision past it appears in metadata.
const DefaultArtifactRevision = 1

// Revision returns the artifact's revision counter, read from its
// metadata (ArtifactRevisionKey). An absent value, and anything that is
// not a whole number at least DefaultArtifactRevision, reads as
// DefaultArtifactRevision: the artifact may come from any peer, and a
// malformed counter must not make it unreadable. A boolean is not a
// number here, although some languages treat true as 1.
func (a Artifact) Revision() int {
	if n, ok := revisionValue(a.Metadata[ArtifactRevisionKey]); ok {
		return n
	}
	return DefaultArtifactRevision
}

// revisionValue reads a revision from a decoded JSON or Go number.
func revisionValue(v any) (int, bool) {
	var f float64
	switch n := v.(type) {
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	case float64:
		f = n
	case json.Number:
		x, err := n.Float64()
		if err != nil {
			return 0, false
		}
		f = x
	default: // bool, string, nil, …
		return 0, false
	}
	if f != math.Trunc(f) || f < DefaultArtifactRevision || f > 1<<53 {
		return 0, false
	}
	return int(f), true
}

// WithRevision returns a copy of a whose revision is n: written to a
// copy of its metadata when past DefaultArtifactRevision, removed from it
// otherwise, so an artifact nobody revised carries no metadata it did not
// ask for. a is left unchanged.
func (a Artifact) WithRevision(n int) Artifact {
	md := maps.Clone(a.Metadata)
	if n > DefaultArtifactRevision {
		if md == nil {
			md = map[string]any{}
		}
		md[ArtifactRevisionKey] = n
	} else {
		delete(md, ArtifactRevisionKey)
		if len(md) == 0 {
			md = nil
		}
	}
	a.Metadata = md
	return a
}

// Revised returns the next revision of a: the same id, name, description,
// metadata and extensions, parts replaced by parts (or, with appendParts,
// parts added after a's own, as a chunk of a streamed artifact is), and
// the revision counter one higher. a is left unchanged.
func (a Artifact) Revised(parts []Part, appendParts bool) Artifact {
	next := a
	if appendParts {
		next.Parts = append(slices.Clip(slices.Clone(a.Parts)), parts...)
	} else {
		next.Parts = slices.Clone(parts)
	}
	next.Extensions = slices.Clone(a.Extensions)
	return next.WithRevision(a.Revision() + 1)
}

// ApplyTo folds the update into artifacts, keyed by artifact id, and
// returns the new list; artifacts is left unchanged. An update for an id
// not yet in the list adds its artifact (the first frame of every
// artifact); one for a known id revises that artifact (Artifact.Revised),
// extending its parts when the update is an append and replacing them
// otherwise. A streaming caller folds every artifact update it reads with
// it, so a streamed artifact ends up neither cut to its last chunk nor
// repeated.
func (e *TaskArtifactUpdateEvent) ApplyTo(artifacts []Artifact) []Artifact {
	out := slices.Clone(artifacts)
	for i := range out {
		if out[i].ArtifactID == e.Artifact.ArtifactID {
			out[i] = out[i].Revised(e.Artifact.Parts, e.Append)
			return out
		}
	}
	art := e.Artifact
	art.Parts = slices.Clone(art.Parts)
	return append(out, art)
}
