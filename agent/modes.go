package agent

import (
	"strings"

	"novaos.dev/novaos/a2a"
)

// splitMode returns a media type's lower-cased type and subtype without
// parameters. A bare type ("text") or "*" is a wildcard over subtypes.
func splitMode(m string) (typ, sub string) {
	if i := strings.IndexByte(m, ';'); i >= 0 {
		m = m[:i]
	}
	m = strings.ToLower(strings.TrimSpace(m))
	typ, sub, ok := strings.Cut(m, "/")
	if !ok || sub == "" {
		sub = "*"
	}
	if typ == "" {
		typ = "*"
	}
	return typ, sub
}

// modesMatch reports whether two media types (either may be a wildcard such
// as "*/*" or "text/*") admit a common type.
func modesMatch(a, b string) bool {
	at, as := splitMode(a)
	bt, bs := splitMode(b)
	return (at == bt || at == "*" || bt == "*") && (as == bs || as == "*" || bs == "*")
}

// acceptedModes returns the modes of produced that a caller accepting
// accepted can take, in the producer's order; every produced mode when the
// caller said nothing.
func acceptedModes(accepted, produced []string) []string {
	if len(accepted) == 0 {
		return produced
	}
	var out []string
	for _, p := range produced {
		for _, a := range accepted {
			if modesMatch(a, p) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// partMode is the media type a part declares or implies; "" for bytes or a
// URL of unstated type.
func partMode(p *a2a.Part) string {
	if p.MediaType != "" {
		return p.MediaType
	}
	switch p.Kind {
	case a2a.PartText:
		return "text/plain"
	case a2a.PartData:
		return "application/json"
	}
	return ""
}

// checkInput answers ContentTypeNotSupported for the first part whose media
// type the skill does not accept.
func checkInput(msg *a2a.Message, skillID string, accepts []string) *a2a.Error {
	if msg == nil || len(accepts) == 0 {
		return nil
	}
	for i := range msg.Parts {
		mode := partMode(&msg.Parts[i])
		if mode == "" {
			continue
		}
		ok := false
		for _, a := range accepts {
			if modesMatch(a, mode) {
				ok = true
				break
			}
		}
		if !ok {
			e := a2a.NewError(a2a.CodeContentTypeNotSupported,
				"skill %q does not accept media type %q (accepts %s)", skillID, truncate(mode, 100), strings.Join(accepts, ", "))
			e.Metadata = map[string]string{"mediaType": truncate(mode, 100), "skillId": skillID}
			return e
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
