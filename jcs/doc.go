// Package jcs canonicalizes JSON as RFC 8785, the JSON Canonicalization Scheme, says.
//
// [Canonicalize] parses one JSON value and writes its canonical form: no
// white space, object members sorted by the UTF-16 code units of their
// names, strings with JCS's minimal escaping and numbers as ECMAScript's
// Number.prototype.toString writes them. It is the one canonicalizer of
// the module: the gate fingerprints action contexts with it
// (gate.Canonicalize, which adds [Options.ExactNumbers]) and a2a/cardsig
// signs agent cards with it. A fingerprint or a signature over one
// differing byte is a different one, so every such byte is decided here.
// The leaves ([AppendString], [AppendNumber], [Compare]) are exported for
// a caller that writes a canonical document around canonical values.
//
//	canon, err := jcs.Canonicalize([]byte(`{"b":1.0,"a":"x"}`), nil)
//	// canon is {"a":"x","b":1}
//	b = jcs.AppendString(b, name) // also takes a []byte, without copying
//	b = jcs.AppendNumber(b, 1e21) // 1e+21
//	slices.SortFunc(names, jcs.Compare)
//
// It is not a general JSON encoder: the a2a wire encoder escapes as
// encoding/json does (<, >, &, U+2028 and U+2029 as \u escapes, invalid
// UTF-8 as U+FFFD), which JCS forbids, so it keeps its own. The package
// depends on the standard library only, so the public packages above can
// import it.
package jcs
