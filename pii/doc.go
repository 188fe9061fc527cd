// Package pii masks personal data and finds personal data and credentials in
// text.
//
// It masks personal data (email addresses, phone numbers, US social security
// numbers, payment card numbers and IPv4 addresses) in text, in decoded JSON
// values and in log records, and finds personal data and credentials (API
// keys, private keys, JWTs, password assignments) in text a write gate is
// asked to store (Scan).
//
// Detection is pattern based and deliberately broad: it prefers masking
// something harmless (a long order number that looks like a card) over
// missing real personal data. Card numbers are not Luhn-checked for that
// reason. Values under keys that name sensitive data ("password", "token",
// "phone", "ssn", "api_key", …) are redacted whatever they look like, since
// a secret rarely matches a pattern.
//
//	pii.Scan("reach me at jane@example.com")          // [email]
//	pii.Mask("mail jane@example.com or call 555-123-4567")
//	// "mail [EMAIL] or call [PHONE]"
//	clean := pii.MaskMap(map[string]any{"note": "SSN 123-45-6789", "password": "hunter2"})
//	logger := slog.New(pii.NewHandler(slog.NewJSONHandler(os.Stderr, nil)))
package pii
