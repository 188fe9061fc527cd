package pii

import (
	"regexp"
	"slices"
	"strings"
)

// Kind names what Scan found.
type Kind string

// The kinds Scan reports: personal data, then credentials.
const (
	KindEmail      Kind = "email"
	KindPhone      Kind = "phone"
	KindSSN        Kind = "ssn"
	KindCard       Kind = "card_number"
	KindAPIKey     Kind = "api_key"
	KindPrivateKey Kind = "private_key"
	KindJWT        Kind = "jwt"
	KindPassword   Kind = "password"
)

// Credential shapes. Vendor prefixes are matched where they exist, since a
// random-looking string alone is no evidence; an assignment to a name that
// says secret ("api_key = …", "password: …") catches the rest.
var (
	privateKeyRE = regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)
	jwtRE        = regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)
	apiKeyRE     = regexp.MustCompile(`\b(?:` +
		`(?:AKIA|ASIA)[0-9A-Z]{16}` + // AWS access key id
		`|sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}` + // OpenAI, Anthropic
		`|gh[pousr]_[A-Za-z0-9]{36,}` + // GitHub
		`|github_pat_[A-Za-z0-9_]{22,}` +
		`|xox[abprs]-[A-Za-z0-9\-]{10,}` + // Slack
		`|AIza[0-9A-Za-z_\-]{35}` + // Google
		`|[rs]k_(?:live|test)_[0-9A-Za-z]{16,}` + // Stripe
		`|glpat-[0-9A-Za-z_\-]{20,}` + // GitLab
		`)`)
	// Card numbers as Scan sees them: 13 to 19 digits, grouped by up to
	// three separators at a time (space, dot, dash, slash or underscore:
	// "4111.1111.1111.1111", "4111 - 1111 - …"); the Luhn sum keeps order
	// numbers and dates out.
	cardScanRE = regexp.MustCompile(`\b\d(?:[ .\-/_]{0,3}\d){12,18}\b`)
	// A secret-naming word, then ':' or '=' and a value of six or more
	// non-space characters.
	assignRE = regexp.MustCompile(`(?i)\b(?:api[_\- ]?key|access[_\- ]?key|secret(?:[_\- ]?key)?|client[_\- ]?secret|auth[_\- ]?token|access[_\- ]?token|bearer|token|password|passwd|pwd|passphrase)\b["']?\s*[:=]\s*["']?[^\s"']{6,}`)
)

// Scan reports which kinds of personal data and credentials s holds, each
// once, in the order of the constants above. It is the test a write gate
// applies before storing text for later retrieval; unlike Mask it checks
// card numbers with the Luhn sum, because refusing a memory over an order
// number costs more than masking one in a log line. It scans s as
// Normalize makes it, so invisible characters, unusual spaces and
// fullwidth or other-script forms hide nothing. It never returns what it
// matched, and takes time linear in len(s).
func Scan(s string) []Kind {
	return scan(Normalize(s))
}

func scan(s string) []Kind {
	var found []Kind
	add := func(k Kind) {
		if !slices.Contains(found, k) {
			found = append(found, k)
		}
	}
	if strings.IndexByte(s, '@') >= 0 && emailRE.MatchString(s) {
		add(KindEmail)
	}
	if n := countDigits(s); n >= 7 {
		for _, m := range phoneRE.FindAllString(s, -1) {
			// Mask takes out SSNs and cards before phones; here a match
			// that is one of them is left to its own check.
			if ssnRE.FindString(m) == m || countDigits(m) >= 13 && luhn(m) {
				continue
			}
			if maskPhone(m) == PhoneMask {
				add(KindPhone)
				break
			}
		}
		if n >= 9 && ssnRE.MatchString(s) {
			add(KindSSN)
		}
		if n >= 13 {
			for _, m := range cardScanRE.FindAllString(s, -1) {
				if luhn(m) {
					add(KindCard)
					break
				}
			}
		}
	}
	if apiKeyRE.MatchString(s) {
		add(KindAPIKey)
	}
	if strings.Contains(s, "PRIVATE KEY") && privateKeyRE.MatchString(s) {
		add(KindPrivateKey)
	}
	if strings.Contains(s, "eyJ") && jwtRE.MatchString(s) {
		add(KindJWT)
	}
	if assignRE.MatchString(s) {
		add(KindPassword)
	}
	order := []Kind{KindEmail, KindPhone, KindSSN, KindCard, KindAPIKey, KindPrivateKey, KindJWT, KindPassword}
	slices.SortFunc(found, func(a, b Kind) int { return slices.Index(order, a) - slices.Index(order, b) })
	return found
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n > 0 && sum%10 == 0
}
