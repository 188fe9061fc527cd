package agent

import (
	"io"
	"log/slog"
	"strings"
	"time"
)

// LogTimeLayout is how NewLogHandler writes a record's timestamp: UTC,
// microseconds.
const LogTimeLayout = "2006-01-02T15:04:05.000000Z"

// NewLogHandler returns a handler that writes one JSON object per line
// (NDJSON) with the field names the NovaOS log pipeline and its Agent
// Log Panel read: "timestamp" (LogTimeLayout), "level" (debug, info,
// warning, error), "message", then the record's attributes: for
// Context.Logger, run_id, agent_id and tenant_id, which the panel filters
// on. Give it to the agent as its logger:
//
//	agent.New("greeter", "1.0.0", &agent.Options{Logger: slog.New(agent.NewLogHandler(os.Stdout, nil))})
//
// o is as for slog.NewJSONHandler (nil: info and above); a ReplaceAttr of
// its own runs after the renaming.
func NewLogHandler(w io.Writer, o *slog.HandlerOptions) slog.Handler {
	var opts slog.HandlerOptions
	if o != nil {
		opts = *o
	}
	user := opts.ReplaceAttr
	opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 {
			switch a.Key {
			case slog.TimeKey:
				if t, ok := a.Value.Any().(time.Time); ok {
					a = slog.String("timestamp", t.UTC().Format(LogTimeLayout))
				}
			case slog.LevelKey:
				if l, ok := a.Value.Any().(slog.Level); ok {
					a = slog.String(slog.LevelKey, levelName(l))
				}
			case slog.MessageKey:
				a.Key = "message"
			}
		}
		if user != nil {
			return user(groups, a)
		}
		return a
	}
	return slog.NewJSONHandler(w, &opts)
}

// levelName spells l as Python's logging does, lower-cased: a log
// pipeline shared with agents written in Python filters on one spelling.
func levelName(l slog.Level) string {
	switch l {
	case slog.LevelDebug:
		return "debug"
	case slog.LevelInfo:
		return "info"
	case slog.LevelWarn:
		return "warning"
	case slog.LevelError:
		return "error"
	}
	return strings.ToLower(l.String())
}
