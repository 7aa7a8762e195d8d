package config

import (
	"fmt"
	"strings"
)

// credentialNone is the credential setting that lets callers without a
// credential share one scope, on purpose.
const credentialNone = "none"

// Credential returns the header names of a credential setting
// (unmatched_credential, mcp.unlisted_credential), or none when it is the
// single entry "none". Validate has checked it.
func (l List) Credential() (headers []string, none bool) {
	if len(l) == 1 && strings.EqualFold(l[0], credentialNone) {
		return nil, true
	}
	return l, false
}

// checkCredential checks a credential setting: one or more header names,
// or the single entry none. Empty is refused: no setting silently makes
// every caller share one scope.
func checkCredential(field string, l List) error {
	if len(l) == 0 {
		return invalid(field, "", "want one or more header names (the first one a call carries counts), or none")
	}
	if _, none := l.Credential(); none {
		return nil
	}
	seen := map[string]bool{}
	for _, h := range l {
		switch {
		case strings.EqualFold(h, credentialNone):
			return invalid(field, l.String(), "none stands alone: list header names, or none")
		case !headerToken(h):
			return invalid(field, h, fmt.Sprintf("invalid header name %q", h))
		case seen[strings.ToLower(h)]:
			return invalid(field, h, "duplicate header")
		}
		seen[strings.ToLower(h)] = true
	}
	return nil
}

// headerToken reports whether s is a valid header name (an RFC 9110 token).
func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
