package webui

import (
	"bytes"
	"encoding/json"
)

// PrettyJSON indents JSON for reading; text that is not JSON shows as it is.
// Go's encoder writes <, > and & as \u003c, \u003e and \u0026; they are
// turned back into the characters so the reader sees what the text
// says (the template escapes them for HTML).
func PrettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return unescapeHTML(buf.Bytes())
}

// unescapeHTML rewrites the three HTML escapes in valid JSON text. In
// valid JSON a backslash only starts an escape, so reading escapes in
// pairs never mistakes an escaped backslash for the start of one.
func unescapeHTML(b []byte) string {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) {
			switch string(bytes.ToLower(b[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out = append(out, b[i], b[i+1])
		i++
	}
	return string(out)
}
