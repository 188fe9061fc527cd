// Package secret holds credential values (tokens, keys, passwords) so that
// they cannot leak by accident: a Value renders as Redacted in fmt verbs,
// String, GoString, JSON, text marshalling and slog, and Reveal is the one
// way to the plaintext. Equal compares a candidate in constant time, for
// checking a presented token.
//
//	token := secret.New(string(bytes.TrimSpace(fileContents)))
//	slog.Info("configured", "token", token) // token=[REDACTED]
//	if !token.Equal(presented) { /* 401 */ }
//	req.Header.Set("Authorization", "Bearer "+token.Reveal())
package secret
