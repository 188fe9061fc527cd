// Package secret holds credential values so that they cannot leak by
// accident.
//
// A Value holding a token, key or password renders as Redacted in fmt verbs,
// String, GoString, JSON, text marshalling and slog, and Reveal is the one
// way to the plaintext. Equal compares a candidate in constant time, for
// checking a presented token.
//
//	token := secret.New(string(bytes.TrimSpace(fileContents)))
//	slog.Info("configured", "token", token) // token=[REDACTED]
//	if !token.Equal(presented) { /* 401 */ }
//	req.Header.Set("Authorization", "Bearer "+token.Reveal())
package secret
