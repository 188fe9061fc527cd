package pii

import (
	"encoding/json"
	"regexp"
	"strings"

	"novaos.dev/novaos/secret"
)

// Replacements written in place of what was found.
const (
	EmailMask    = "[EMAIL]"
	PhoneMask    = "[PHONE]"
	SSNMask      = "[SSN]"
	CardMask     = "[CARD]"
	IPMask       = "[IP]"
	RedactedMask = secret.Redacted
)

// The patterns are deliberately broad: masking something that was not PII
// costs a little readability, missing something that was costs a leak.
var (
	emailRE = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)
	ipv4RE  = regexp.MustCompile(`\b(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\b`)
	// 13 to 19 digits, optionally grouped by single spaces or dashes: Visa
	// and Mastercard 16, Amex 15, Diners 14 and the other network lengths.
	cardRE = regexp.MustCompile(`\b\d(?:[ \-]?\d){12,18}\b`)
	// XXX-XX-XXXX with the separators space, dot, dash or none.
	ssnRE = regexp.MustCompile(`\b\d{3}[ .\-]?\d{2}[ .\-]?\d{4}\b`)
	// Optional country code, optional area code in parentheses, then two to
	// five groups of digits; maskPhone keeps only 7 to 15 digits in total.
	phoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .\-]?(?:\(\d{1,4}\)[ .\-]?)?|\(\d{1,4}\)[ .\-]?|\b)\d{2,5}(?:[ .\-]\d{2,5}){1,4}\b|\+?\b\d{10,15}\b`)
	// Dates and year ranges look like grouped digits too.
	dateRE = regexp.MustCompile(`^\d{4}[\-./]\d{1,2}[\-./]\d{1,2}$|^\d{1,2}[\-./]\d{1,2}[\-./]\d{4}$|^(?:19|20)\d\d[\-/ ](?:19|20)\d\d$`)
)

// Mask replaces email addresses, IPv4 addresses, payment card numbers, US
// social security numbers and phone numbers in s with fixed placeholders.
// Text without a digit or an '@' is returned unchanged without scanning.
func Mask(s string) string {
	if !strings.ContainsAny(s, "0123456789@") {
		return s
	}
	if strings.IndexByte(s, '@') >= 0 {
		s = emailRE.ReplaceAllLiteralString(s, EmailMask)
	}
	// Each pattern needs a minimum number of digits; counting them first
	// spares the regular expressions on most text.
	n := countDigits(s)
	if n >= 4 && strings.IndexByte(s, '.') >= 0 {
		s = ipv4RE.ReplaceAllLiteralString(s, IPMask)
		n = countDigits(s)
	}
	if n >= 13 {
		s = cardRE.ReplaceAllLiteralString(s, CardMask)
		n = countDigits(s)
	}
	if n >= 9 {
		s = ssnRE.ReplaceAllLiteralString(s, SSNMask)
		n = countDigits(s)
	}
	if n >= 7 {
		s = phoneRE.ReplaceAllStringFunc(s, maskPhone)
	}
	return s
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

func maskPhone(m string) string {
	if n := countDigits(m); n < 7 || n > 15 || dateRE.MatchString(m) {
		return m
	}
	return PhoneMask
}

// sensitiveWords are key words whose value is redacted whatever it looks
// like: the backstop for secrets and identifiers no pattern recognises.
var sensitiveWords = map[string]bool{
	"password": true, "passwd": true, "pwd": true, "passphrase": true,
	"secret": true, "token": true, "apikey": true, "authorization": true,
	"auth": true, "cookie": true, "credential": true, "credentials": true,
	"ssn": true, "phone": true, "email": true, "iban": true, "cvv": true,
	"cvc": true, "pin": true, "privatekey": true, "cardnumber": true,
	"creditcard": true, "mobile": true,
}

// SensitiveKey reports whether a map key or log attribute name names a value
// that should be redacted regardless of its content, such as "password",
// "api_key", "X-Auth-Token" or "phoneNumber". Keys are split into words on
// '_', '-', '.', spaces and lower-to-upper case changes; "api key",
// "private key", "card number" and "credit card" also match when split.
func SensitiveKey(key string) bool {
	words := splitWords(key)
	for i, w := range words {
		if sensitiveWords[w] {
			return true
		}
		if i+1 < len(words) && sensitiveWords[w+words[i+1]] {
			return true
		}
	}
	return false
}

func splitWords(key string) []string {
	var words []string
	start := 0
	flush := func(end int) {
		if end > start {
			words = append(words, strings.ToLower(key[start:end]))
		}
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' {
			flush(i)
			start = i + 1
		} else if c >= 'A' && c <= 'Z' && i > start && key[i-1] >= 'a' && key[i-1] <= 'z' {
			flush(i)
			start = i
		}
	}
	flush(len(key))
	return words
}

// MaskMap returns a copy of m in which every string is masked with [Mask],
// recursively through nested maps and slices, and every string or number
// under a [SensitiveKey] is replaced by [RedactedMask]. m is not modified.
func MaskMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if SensitiveKey(k) {
			out[k] = redact(v)
			continue
		}
		out[k] = MaskValue(v)
	}
	return out
}

// MaskValue masks a decoded JSON value (string, number, bool, nil, map or
// slice) the way [MaskMap] masks a map's values. Other types are returned
// unchanged.
func MaskValue(v any) any {
	switch x := v.(type) {
	case string:
		return Mask(x)
	case map[string]any:
		return MaskMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = MaskValue(e)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, e := range x {
			out[i] = Mask(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(x))
		for k, e := range x {
			if SensitiveKey(k) {
				out[k] = RedactedMask
			} else {
				out[k] = Mask(e)
			}
		}
		return out
	case json.RawMessage:
		return MaskJSON(x)
	}
	return v
}

// redact blanks a value under a sensitive key but keeps its shape where that
// carries no data: booleans and nulls stay, containers are redacted inside.
func redact(v any) any {
	switch x := v.(type) {
	case nil, bool:
		return v
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = redact(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redact(e)
		}
		return out
	}
	return RedactedMask
}

// MaskJSON masks the strings inside a JSON document. A document that does
// not decode is masked as plain text, so nothing escapes unmasked.
func MaskJSON(doc []byte) json.RawMessage {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		b, _ := json.Marshal(Mask(string(doc)))
		return b
	}
	b, err := json.Marshal(MaskValue(v))
	if err != nil {
		b, _ = json.Marshal(RedactedMask)
	}
	return b
}
