package delivery

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"novaos.dev/novaos/strictjson"
)

// Limits of a Heartbeat.
const (
	MaxHeartbeatActiveRuns = 1000
	MaxHeartbeatReasons    = 32
	MaxHeartbeatNameChars  = 64
)

// Field error codes of a refused heartbeat.
const (
	CodeUnknownMember = "unknown_member"
	CodeInvalidValue  = "invalid_value"
	CodeMalformed     = "malformed"
)

var (
	heartbeatName    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	heartbeatVersion = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	heartbeatCode    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.:-]{0,63}$`)
)

// heartbeatFields are the only member names a Heartbeat may have: a
// heartbeat carries no secret, content or path, and an unknown member
// might.
var heartbeatFields = func() *strictjson.Fields {
	nameVersion := &strictjson.Fields{Names: map[string]*strictjson.Fields{"name": nil, "version": nil}}
	leaf := func(names ...string) *strictjson.Fields {
		f := &strictjson.Fields{Names: map[string]*strictjson.Fields{}}
		for _, n := range names {
			f.Names[n] = nil
		}
		return f
	}
	details := &strictjson.Fields{Names: map[string]*strictjson.Fields{
		"capabilities":     leaf("followups", "components", "voice_input", "title", "files_out"),
		"active_runs":      nil,
		"degraded_reasons": nil,
		"adapter":          nameVersion,
		"runtime":          nameVersion,
		"protocol_version": nil,
	}}
	return &strictjson.Fields{Names: map[string]*strictjson.Fields{"status": nil, "details": details}}
}()

// DecodeHeartbeat reads a Heartbeat strictly: one JSON object with no
// member but Heartbeat's, none named twice, each value of its field's
// form (CheckHeartbeat). Its field errors name the member, never a value.
func DecodeHeartbeat(data []byte) (Heartbeat, []FieldError) {
	var h Heartbeat
	err := strictjson.Check(data, &strictjson.Options{Object: true, Fields: heartbeatFields, MaxDepth: 8})
	var se *strictjson.Error
	if errors.As(err, &se) {
		code := CodeMalformed
		if se.Problem == strictjson.Unknown {
			code = CodeUnknownMember
		}
		return h, []FieldError{{Code: code, Pointer: jsonPointer(se.Path), Detail: se.Error()}}
	}
	if err != nil {
		return h, []FieldError{{Code: CodeMalformed, Pointer: "", Detail: "not a JSON object"}}
	}
	if err := json.Unmarshal(data, &h); err != nil {
		var te *json.UnmarshalTypeError
		ptr := ""
		if errors.As(err, &te) && te.Field != "" {
			ptr = "/" + strings.ReplaceAll(te.Field, ".", "/")
		}
		return h, []FieldError{{Code: CodeInvalidValue, Pointer: ptr, Detail: "a value is not of its member's type"}}
	}
	return h, CheckHeartbeat(h)
}

// CheckHeartbeat refuses a heartbeat whose values are not of their
// fields' forms: a status of ok or degraded, names and codes of plain
// lower-case words, versions of letters, digits and . + _ -, run ids of
// ids, and bounded lists.
func CheckHeartbeat(h Heartbeat) []FieldError {
	var errs []FieldError
	bad := func(ptr, detail string) {
		errs = append(errs, FieldError{Code: CodeInvalidValue, Pointer: ptr, Detail: detail})
	}
	if h.Status != HeartbeatOK && h.Status != HeartbeatDegraded {
		bad("/status", "status is ok or degraded")
	}
	d := h.Details
	if c := d.Capabilities; c != nil && c.Followups != "" && c.Followups != "steer" && c.Followups != "queue" {
		bad("/details/capabilities/followups", "followups is steer, queue or absent")
	}
	if len(d.ActiveRuns) > MaxHeartbeatActiveRuns {
		bad("/details/active_runs", "at most "+strconv.Itoa(MaxHeartbeatActiveRuns)+" runs")
	} else {
		for i, id := range d.ActiveRuns {
			if !idSegment.MatchString(id) {
				bad("/details/active_runs/"+strconv.Itoa(i), "a run id")
			}
		}
	}
	if len(d.DegradedReasons) > MaxHeartbeatReasons {
		bad("/details/degraded_reasons", "at most "+strconv.Itoa(MaxHeartbeatReasons)+" reasons")
	} else {
		for i, r := range d.DegradedReasons {
			if !heartbeatCode.MatchString(r) {
				bad("/details/degraded_reasons/"+strconv.Itoa(i), "a reason is a code: a-z 0-9 _ . : -")
			}
		}
	}
	for _, nv := range []struct {
		ptr string
		v   *NameVersion
	}{{"/details/adapter", d.Adapter}, {"/details/runtime", d.Runtime}} {
		if nv.v == nil {
			continue
		}
		if !heartbeatName.MatchString(nv.v.Name) {
			bad(nv.ptr+"/name", "a name is 1 to 64 of a-z 0-9 . _ -, starting with a letter or digit")
		}
		if nv.v.Version != "" && !heartbeatVersion.MatchString(nv.v.Version) {
			bad(nv.ptr+"/version", "a version is 1 to 64 of A-Z a-z 0-9 . + _ -")
		}
	}
	if d.ProtocolVersion != "" && !heartbeatVersion.MatchString(d.ProtocolVersion) {
		bad("/details/protocol_version", "a version is 1 to 64 of A-Z a-z 0-9 . + _ -")
	}
	return errs
}

// jsonPointer turns a strictjson path ($.a.b[2], $["x y"]) into an RFC
// 6901 pointer (/a/b/2, /x y).
func jsonPointer(path string) string {
	path = strings.TrimPrefix(path, "$")
	var b strings.Builder
	for len(path) > 0 {
		switch {
		case strings.HasPrefix(path, "."):
			path = path[1:]
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			b.WriteString("/" + escapePointer(path[:end]))
			path = path[end:]
		case strings.HasPrefix(path, `["`):
			quoted, err := strconv.QuotedPrefix(path[1:])
			if err != nil || !strings.HasPrefix(path[1+len(quoted):], "]") {
				return b.String()
			}
			name, _ := strconv.Unquote(quoted)
			b.WriteString("/" + escapePointer(name))
			path = path[1+len(quoted)+1:]
		case strings.HasPrefix(path, "["):
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return b.String()
			}
			b.WriteString("/" + path[1:end])
			path = path[end+1:]
		default:
			return b.String()
		}
	}
	return b.String()
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
