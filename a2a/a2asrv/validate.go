package a2asrv

import (
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"novaos.dev/novaos/a2a"
)

// Checks a request passes before any method runs, beyond what the a2a
// package's decoding already refuses (malformed JSON, repeated keys).

const (
	// DefaultMaxIDBytes bounds identifiers unless Options say otherwise:
	// ample for a UUID, a ULID or a readable name, and small enough that
	// ids can be logged, indexed and echoed without thought.
	DefaultMaxIDBytes = 256
	// DefaultMaxExtensions bounds the distinct A2A-Extensions URIs of one
	// request; agents declare a handful.
	DefaultMaxExtensions = 64
	// DefaultMaxExtensionURIBytes bounds one A2A-Extensions URI.
	DefaultMaxExtensionURIBytes = 1024
)

// checkContentType admits the JSON media types: application/json (what
// the JSON-RPC binding names, spec §9.1), application/a2a+json and any
// other application/*+json, with an optional charset that must be UTF-8.
// Anything else, a missing Content-Type included, is refused: a browser
// posts text/plain, form encodings or a typeless body cross-site without
// asking first (no CORS preflight), and none of these may run a method.
func checkContentType(h http.Header) *a2a.Error {
	values := h.Values("Content-Type")
	if len(values) == 1 {
		mt, params, err := mime.ParseMediaType(values[0])
		sub, isApp := strings.CutPrefix(mt, "application/")
		cs, hasCharset := params["charset"]
		if err == nil && isApp && (sub == "json" || strings.HasSuffix(sub, "+json")) &&
			(!hasCharset || strings.EqualFold(cs, "utf-8")) {
			return nil
		}
	}
	got := strings.Join(values, ", ")
	if len(got) > 64 {
		got = strings.ToValidUTF8(got[:64], "") + "..."
	}
	e := a2a.NewError(a2a.CodeInvalidRequest, "Content-Type must be application/json (or application/a2a+json); got %q", got)
	return e
}

// checkID refuses an identifier that holds a control character (C0, DEL or
// C1) or is longer than max bytes, naming the field. Such ids cannot be
// printed, logged or stored faithfully everywhere (NUL ends a C string),
// so a store answering "not found" or dropping the value would be the
// lucky case.
func checkID(field, id string, max int) *a2a.Error {
	if len(id) > max {
		return fieldError(field, "%s is longer than %d bytes", field, max)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c < 0x20 || c == 0x7f {
			return fieldError(field, "%s must not contain control characters (byte %d is %#02x)", field, i, c)
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(id[i:])
			if 0x80 <= r && r <= 0x9f {
				return fieldError(field, "%s must not contain control characters (byte %d is U+%04X)", field, i, r)
			}
			i += n - 1
		}
	}
	return nil
}

func fieldError(field, format string, args ...any) *a2a.Error {
	e := a2a.NewError(a2a.CodeInvalidParams, format, args...)
	e.Metadata = map[string]string{"field": field}
	return e
}

// idField is one identifier of a request, by its path in params.
type idField struct {
	name, value string
}

// checkParams checks the identifiers of a decoded request (see checkID)
// and returns its tenant.
func checkParams(params any, maxID int) (tenant string, _ *a2a.Error) {
	// Every request passes here: the fields go on the stack, and a
	// reference's name is spelled out only when it is refused.
	var fields [7]idField
	ids := fields[:0]
	switch p := params.(type) {
	case *a2a.SendMessageRequest:
		tenant = p.Tenant
		if m := p.Message; m != nil {
			ids = append(ids, idField{"message.messageId", m.MessageID}, idField{"message.taskId", m.TaskID}, idField{"message.contextId", m.ContextID})
			for i, ref := range m.ReferenceTaskIDs {
				if checkID("reference", ref, maxID) != nil {
					return "", checkID("message.referenceTaskIds["+strconv.Itoa(i)+"]", ref, maxID)
				}
			}
		}
		if cfg := p.Configuration; cfg != nil && cfg.TaskPushNotificationConfig != nil {
			pc := cfg.TaskPushNotificationConfig
			ids = append(ids, idField{"configuration.taskPushNotificationConfig.id", pc.ID},
				idField{"configuration.taskPushNotificationConfig.taskId", pc.TaskID},
				idField{"configuration.taskPushNotificationConfig.tenant", pc.Tenant})
		}
	case *a2a.GetTaskRequest:
		tenant, ids = p.Tenant, append(ids, idField{"id", p.ID})
	case *a2a.ListTasksRequest:
		tenant, ids = p.Tenant, append(ids, idField{"contextId", p.ContextID})
	case *a2a.CancelTaskRequest:
		tenant, ids = p.Tenant, append(ids, idField{"id", p.ID})
	case *a2a.SubscribeToTaskRequest:
		tenant, ids = p.Tenant, append(ids, idField{"id", p.ID})
	case *a2a.TaskPushNotificationConfig:
		tenant, ids = p.Tenant, append(ids, idField{"id", p.ID}, idField{"taskId", p.TaskID})
	case *a2a.GetTaskPushNotificationConfigRequest:
		tenant, ids = p.Tenant, append(ids, idField{"id", p.ID}, idField{"taskId", p.TaskID})
	case *a2a.ListTaskPushNotificationConfigsRequest:
		tenant, ids = p.Tenant, append(ids, idField{"taskId", p.TaskID})
	case *a2a.GetExtendedAgentCardRequest:
		tenant = p.Tenant
	}
	ids = append(ids, idField{"tenant", tenant})
	for _, f := range ids {
		if e := checkID(f.name, f.value, maxID); e != nil {
			return "", e
		}
	}
	return tenant, nil
}
