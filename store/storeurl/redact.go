package storeurl

import (
	"net/url"
	"regexp"
	"strings"
)

// Redacted is what Redact puts in place of a password.
const Redacted = "xxxxx"

var (
	// userinfo with a password in a URL that net/url cannot parse.
	userinfoRE = regexp.MustCompile(`(://[^/@:?#\s]*:)[^@/?#\s]*@`)
	// a password given as a parameter (?password=..., password=... in a DSN).
	passwordRE = regexp.MustCompile(`(?i)(\bpassword=)[^&\s]*`)
)

// Redact returns rawURL with any password replaced by "xxxxx": the
// userinfo's (postgres://user:SECRET@host) and a password parameter's
// (?password=SECRET). It works on URLs that cannot be parsed too, so that
// an error about a malformed URL can quote it. Every message of baton that
// names a store uses it; a store URL is never printed as given.
func Redact(rawURL string) string {
	out := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			out = u.Redacted()
		}
	} else if err != nil {
		out = userinfoRE.ReplaceAllString(out, "${1}"+Redacted+"@")
	}
	return passwordRE.ReplaceAllString(out, "${1}"+Redacted)
}

// secrets returns the passwords in rawURL, for scrubbing them from errors
// that quote them (a driver's message may quote a connection string).
func secrets(rawURL string) []string {
	var out []string
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
			if esc := url.QueryEscape(p); esc != p {
				out = append(out, esc)
			}
		}
	} else if m := userinfoRE.FindStringSubmatchIndex(rawURL); m != nil {
		if p := rawURL[m[3] : m[1]-1]; p != "" {
			out = append(out, p)
		}
	}
	for _, m := range passwordRE.FindAllStringSubmatchIndex(rawURL, -1) {
		if p := rawURL[m[3]:m[1]]; p != "" {
			out = append(out, p)
		}
	}
	return out
}

// scrubbed is an error whose message has the store's passwords replaced;
// errors.Is and errors.As see the original chain.
type scrubbed struct {
	err     error
	secrets []string
}

func (s *scrubbed) Error() string { return Scrub(s.err.Error(), s.secrets...) }
func (s *scrubbed) Unwrap() error { return s.err }

// Scrub replaces every occurrence of each non-empty secret in msg with
// "xxxxx".
func Scrub(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, Redacted)
		}
	}
	return msg
}

// scrub wraps err so that its message carries none of rawURL's passwords.
func scrub(err error, rawURL string) error {
	if err == nil {
		return nil
	}
	if s := secrets(rawURL); len(s) > 0 {
		return &scrubbed{err: err, secrets: s}
	}
	return err
}

// Secrets returns the passwords in rawURL (none when it has none), so that
// a program can scrub them from anything it prints.
func Secrets(rawURL string) []string { return secrets(rawURL) }
