// Package defaults fills the unset fields of a service's Options with defaults.
//
// A service's withDefaults copies the caller's Options (nil: all
// defaults) and gives each field left unset its default:
//
//	func (o *Options) withDefaults() Options {
//		v := defaults.Copy(o)
//		defaults.Logger(&v.Logger)
//		defaults.Clock(&v.Now)
//		defaults.Positive(&v.MaxBodyBytes, DefaultMaxBodyBytes)
//		defaults.Positive(&v.Lease, DefaultLease)
//		return v
//	}
package defaults
