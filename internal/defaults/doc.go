// Package defaults fills the unset limits of a service's Options with defaults.
//
// A service's withDefaults copies the caller's Options and gives each
// limit left at zero (or set below it) its default:
//
//	defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
//	defaults.Positive(&v.Lease, DefaultLease)
package defaults
