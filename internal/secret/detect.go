package secret

import (
	"encoding/base64"
	"regexp"
	"strings"
	"sync"
)

// pattern is one credential format Detect recognizes. check,
// when set, vets the submatch (group 1) to keep false positives down.
type pattern struct {
	kind  string
	re    *regexp.Regexp
	check func(string) bool
}

// patterns lists the detected formats, most specific first. Each one
// is either a vendor prefix with a fixed alphabet and length, or a keyword
// followed by a random-looking value; placeholders such as $TOKEN,
// ${TOKEN}, <token> or YOUR_TOKEN never match.
//
// Deliberately not detected: generic `password=…`, `-p…`, `secret: …`
// assignments and URL credentials that look like words (postgres:postgres).
// They are too often variable references, test fixtures or local defaults,
// and a false positive refuses a legitimate command.
//
// They are compiled on first use, not at package init: every supervisor
// and command launcher is this binary too (process imports this package), and compiling them (the
// private-key pattern's bounded repetition above all) took 8–20 ms of each
// one's start.
var patterns = sync.OnceValue(func() []pattern {
	return []pattern{
		{kind: "private_key", re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,512}?[A-Za-z0-9+/=]{40}`)},
		{kind: "aws_access_key_id", re: regexp.MustCompile(`\b((?:AKIA|ASIA)[0-9A-Z]{16})\b`)},
		{kind: "aws_secret_access_key", re: regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`), check: randomLooking},
		{kind: "github_token", re: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b`)},
		{kind: "github_token", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{50,255}`)},
		{kind: "gitlab_token", re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
		{kind: "slack_token", re: regexp.MustCompile(`\bxox[abpr]-[A-Za-z0-9-]{10,}`)},
		{kind: "slack_webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]{8,}`)},
		{kind: "openai_api_key", re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{8,}T3BlbkFJ[A-Za-z0-9_-]{8,}`)},
		{kind: "anthropic_api_key", re: regexp.MustCompile(`\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,}`)},
		{kind: "stripe_secret_key", re: regexp.MustCompile(`\b(?:sk|rk)_live_[A-Za-z0-9]{20,}`)},
		{kind: "google_api_key", re: regexp.MustCompile(`\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`)},
		{kind: "npm_token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
		{kind: "authorization_bearer", re: regexp.MustCompile(`(?i)\bauthorization\s*:\s*bearer\s+([A-Za-z0-9\-._~+/]{16,}=*)`), check: randomLooking},
		{kind: "authorization_basic", re: regexp.MustCompile(`(?i)\bauthorization\s*:\s*basic\s+([A-Za-z0-9+/]{8,}={0,2})`), check: basicCredential},
		{kind: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
		{kind: "url_credentials", re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@`), check: func(p string) bool {
			return len(p) >= 12 && randomLooking(p)
		}},
	}
})

// Detect reports whether s contains a literal credential and, if so,
// its kind: private_key (a PEM private-key block with key material),
// aws_access_key_id (AKIA/ASIA + 16), aws_secret_access_key (after its
// keyword), github_token (ghp_/gho_/ghu_/ghs_/ghr_, github_pat_),
// gitlab_token (glpat-), slack_token (xoxa-/xoxb-/xoxp-/xoxr-),
// slack_webhook, openai_api_key, anthropic_api_key, stripe_secret_key,
// google_api_key, npm_token, authorization_bearer and authorization_basic
// (an `Authorization:` header with a random-looking value), jwt, and
// url_credentials (scheme://user:password@ with a long random-looking
// password). It never returns the secret itself. Safe for concurrent use.
func Detect(s string) (kind string, found bool) {
	for _, p := range patterns() {
		for _, m := range p.re.FindAllStringSubmatch(s, 8) {
			if p.check == nil || (len(m) > 1 && p.check(m[1])) {
				return p.kind, true
			}
		}
	}
	return "", false
}

// randomLooking accepts values that mix letters and digits, which real keys
// do and placeholders (YOUR_API_TOKEN_HERE, xxxxxxxx) do not.
func randomLooking(v string) bool {
	var letters, digits bool
	for _, r := range v {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters = true
		}
	}
	return letters && digits
}

// basicCredential accepts a base64 value that decodes to user:password.
func basicCredential(v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
		if err != nil {
			return false
		}
	}
	user, pass, ok := strings.Cut(string(b), ":")
	return ok && user != "" && pass != ""
}

// Redacted replaces each credential Redact finds.
const Redacted = "[REDACTED]"

// privateKeyEnd ends a PEM private-key block; compiled on first use, as
// patterns are.
var privateKeyEnd = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)
})

// Redact returns s with every literal credential Detect recognizes
// replaced by Redacted: the value alone where a keyword or header names it
// (the name stays, so a reader sees what was there), the whole token for
// formats recognized by prefix, and a private key from its BEGIN line to
// its END line (to the end of s without one). Text Detect finds nothing
// in is returned unchanged. Safe for concurrent use.
func Redact(s string) string {
	for _, p := range patterns() {
		ms := p.re.FindAllStringSubmatchIndex(s, -1)
		if ms == nil {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range ms {
			lo, hi := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				if p.check != nil && !p.check(s[m[2]:m[3]]) {
					continue
				}
				lo, hi = m[2], m[3]
			}
			if p.kind == "private_key" {
				hi = len(s)
				if end := privateKeyEnd().FindStringIndex(s[lo:]); end != nil {
					hi = lo + end[1]
				}
			}
			if lo < last {
				continue // inside a block already redacted
			}
			b.WriteString(s[last:lo])
			b.WriteString(Redacted)
			last = hi
		}
		if last == 0 {
			continue
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}
