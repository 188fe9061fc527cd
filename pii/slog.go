package pii

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Handler is a slog.Handler that masks PII in every record before passing it
// on: the message, string attributes, errors, maps and groups are masked with
// [Mask] and [MaskMap], and attributes whose key is a [SensitiveKey] are
// replaced by [RedactedMask].
type Handler struct {
	next slog.Handler
}

// NewHandler wraps next so that nothing it receives carries unmasked PII.
func NewHandler(next slog.Handler) *Handler {
	if h, ok := next.(*Handler); ok {
		return h
	}
	return &Handler{next: next}
}

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle masks r and passes it on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(MaskAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs masks attrs once, up front.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = MaskAttr(a)
	}
	return &Handler{next: h.next.WithAttrs(masked)}
}

// WithGroup opens a group on the wrapped handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name)}
}

// ReplaceAttr masks one attribute; use it as slog.HandlerOptions.ReplaceAttr
// when wrapping the handler is not convenient. It does not see the record's
// message, which [Handler] also masks.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr { return MaskAttr(a) }

// MaskAttr returns a with its value masked.
func MaskAttr(a slog.Attr) slog.Attr {
	if a.Key != "" && SensitiveKey(a.Key) {
		if k := a.Value.Kind(); k == slog.KindBool {
			return a
		}
		return slog.String(a.Key, RedactedMask)
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Mask(v.String()))
	case slog.KindGroup:
		group := v.Group()
		masked := make([]slog.Attr, len(group))
		for i, g := range group {
			masked[i] = MaskAttr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(masked...)}
	case slog.KindAny:
		return slog.Any(a.Key, maskAny(v.Any()))
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func maskAny(v any) any {
	switch x := v.(type) {
	case error:
		return Mask(x.Error())
	case map[string]any, []any, []string, map[string]string, json.RawMessage:
		return MaskValue(x)
	case []byte:
		return Mask(string(x))
	case fmt.Stringer:
		return Mask(x.String())
	}
	// Anything else is rendered by the handler as JSON or with %+v; masking
	// its encoding keeps unknown structs from slipping through.
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	return MaskJSON(b)
}
