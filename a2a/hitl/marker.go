package hitl

import (
	"encoding/json"
	"fmt"
	"maps"

	"novaos.dev/novaos/a2a"
)

// Markers. A NovaOS data part is told apart from an agent's ordinary
// structured output by a media type recorded in the part's own metadata
// under PartKey, not by the shape of its data.
const (
	// MetadataMediaType marks NovaOS control data: HITL requests and
	// responses, progress, errors, the two pauses, and the platform fields
	// an agent adds to a result (its skill error). The NovaOS Python SDK
	// calls it NOVAOS_METADATA_CONTENT_TYPE; it was the ACP content type of
	// the same payloads.
	MetadataMediaType = "application/vnd.novaos.metadata+json"
	// SkillMetadataMediaType marks the data part carrying a skill's
	// result metadata. It is deliberately distinct from
	// MetadataMediaType: platforms keep control data for themselves but
	// show skill metadata to the caller as run data.
	SkillMetadataMediaType = "application/vnd.novaos.skill-metadata+json"
	// PartKey is the part-metadata key a marker is written under (the
	// Python SDK's NOVAOS_METADATA_PART_KEY): a data part tagged as
	// control data has
	// "metadata": {"mediaType": "application/vnd.novaos.metadata+json"}.
	PartKey = "mediaType"
)

// TaggedDataPart returns a data part holding the JSON encoding of v, with
// mediaType recorded in its metadata under PartKey. The part's own
// mediaType field is left empty, as the NovaOS Python SDK's builder leaves it.
func TaggedDataPart(v any, mediaType string) (a2a.Part, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return a2a.Part{}, fmt.Errorf("hitl: data part: %w", err)
	}
	return a2a.Part{Kind: a2a.PartData, Data: b, Metadata: map[string]any{PartKey: mediaType}}, nil
}

// Tag returns p with mediaType recorded in its metadata under PartKey; p's
// metadata map is copied, not changed.
func Tag(p a2a.Part, mediaType string) a2a.Part {
	md := make(map[string]any, len(p.Metadata)+1)
	maps.Copy(md, p.Metadata)
	md[PartKey] = mediaType
	p.Metadata = md
	return p
}

// Tagged reports whether p carries the marker mediaType: in its metadata
// (under PartKey, or under any other key, since producers of the A2A and
// ACP eras used "content_type" and "contentType" too) or as its own
// mediaType field (the ACP-shaped form).
func Tagged(p a2a.Part, mediaType string) bool {
	if p.MediaType == mediaType {
		return true
	}
	for _, v := range p.Metadata {
		if s, ok := v.(string); ok && s == mediaType {
			return true
		}
	}
	return false
}
