// Package jcs writes the leaves of RFC 8785 canonical JSON: strings,
// numbers, member order.
//
// It writes them as the JSON Canonicalization Scheme (JCS) says: strings
// with JCS's minimal escaping, numbers as ECMAScript's
// Number.prototype.toString writes them, and the UTF-16 code unit order JCS
// sorts object member names by.
//
// It writes the leaves of the JSON Canonicalization Scheme (JCS): strings
// with JCS's minimal escaping, numbers as ECMAScript's
// Number.prototype.toString writes them, and the UTF-16 code unit order JCS
// sorts object member names by.
//
// Two canonicalizers build on it: the gate's (gate.Canonicalize, which
// parses raw JSON and adds a number policy for fingerprints) and the agent
// card signer's (a2a/cardsig, which writes a tree decoded by
// encoding/json). Each must match other JCS implementations to the byte —
// a fingerprint or a signature over one differing byte is a different
// one — so the leaves where such differences hide live here once, and a
// fix reaches both. The walking of values stays with each canonicalizer,
// because what they read differs.
//
//	b = jcs.AppendString(b, name) // also takes a []byte, without copying
//	b = append(b, ':')
//	b = jcs.AppendNumber(b, 1e21) // 1e+21
//	slices.SortFunc(names, jcs.Compare)
//
// It is not a general JSON encoder: the a2a wire encoder escapes as
// encoding/json does (<, >, &, U+2028 and U+2029 as \u escapes, invalid
// UTF-8 as U+FFFD), which JCS forbids, so it keeps its own. The package
// depends on the standard library only, so the public packages above can
// import it.
package jcs
