package defaults

// Positive leaves *p when it is above zero and sets it to d otherwise: a
// limit, a size or a duration that is zero is unset, and one below zero
// is no limit a service can keep.
func Positive[T ~int | ~int64 | ~float64](p *T, d T) {
	if *p <= 0 {
		*p = d
	}
}
