package defaults

import (
	"log/slog"
	"time"
)

// Copy is a copy of *o for withDefaults to fill in, or the zero T when o
// is nil (all defaults).
func Copy[T any](o *T) T {
	if o == nil {
		var zero T
		return zero
	}
	return *o
}

// Logger sets a nil *l to a logger that discards what it is given.
func Logger(l **slog.Logger) {
	if *l == nil {
		*l = slog.New(slog.DiscardHandler)
	}
}

// Clock sets a nil *now to time.Now.
func Clock(now *func() time.Time) {
	if *now == nil {
		*now = time.Now
	}
}

// Positive leaves *p when it is above zero and sets it to d otherwise: a
// limit, a size or a duration that is zero is unset, and one below zero
// is no limit a service can keep.
func Positive[T ~int | ~int64 | ~float64](p *T, d T) {
	if *p <= 0 {
		*p = d
	}
}
