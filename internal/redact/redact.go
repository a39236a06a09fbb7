// Package redact removes credentials from URLs and connection strings before they reach a log, an
// error message or a workflow payload: the password of a URL's user info, the values of
// credential-like query parameters (password, secret…, token…, signature…), passwords of URLs
// nested in query values (an S3 endpoint with user info), and password=… of key=value strings.
package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "xxxxx"

// dsnPassword matches the password of a key=value connection string (password=… or
// password='…').
var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s']\S*)`)

// urlUserPassword matches "scheme://user:password@" at the start of a string that url.Parse
// refuses.
var urlUserPassword = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9+.-]*://[^:@/]*:)(.*)@`)

var secretParams = map[string]bool{
	"password": true, "secret": true, "secret_key": true, "secret_access_key": true,
	"aws_secret_access_key": true, "session_token": true, "aws_session_token": true,
	"token": true, "access_token": true, "sslpassword": true, "x-amz-security-token": true,
	"x-amz-signature": true, "x-amz-credential": true, "signature": true, "sslkey": true,
}

// IsSecretParam reports whether a URL query parameter holds a credential.
func IsSecretParam(name string) bool {
	n := strings.ToLower(name)
	return secretParams[n] || strings.Contains(n, "secret") || strings.Contains(n, "password") ||
		strings.Contains(n, "token")
}

// URL returns raw with its secrets masked. A string with "://" that does not parse as a URL is
// returned as "<unparseable URL>" (nothing of it is shown); a key=value connection string gets
// its password masked.
func URL(raw string) string {
	if raw == "" {
		return ""
	}
	if !strings.Contains(raw, "://") {
		return dsnPassword.ReplaceAllString(raw, "${1}"+Mask)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparseable URL>"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Mask)
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k, vs := range q {
			for i, v := range vs {
				masked := v
				switch {
				case IsSecretParam(k):
					masked = Mask
				case strings.Contains(v, "://"):
					masked = URL(v)
				}
				if masked != v {
					vs[i], changed = masked, true
				}
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// Secrets returns the secret strings written in raw, longest first.
func Secrets(raw string) []string {
	var out []string
	add := func(s string) {
		if s != "" && s != Mask {
			out = append(out, s)
		}
	}
	if !strings.Contains(raw, "://") {
		for _, m := range dsnPassword.FindAllStringSubmatch(raw, -1) {
			add(strings.Trim(m[2], "'"))
		}
		return sortLongestFirst(out)
	}
	u, err := url.Parse(raw)
	if err != nil {
		if m := urlUserPassword.FindStringSubmatch(raw); m != nil {
			add(m[2])
			// Libraries that mask such a URL themselves may mask only up to an "@" inside the
			// password: mask every piece.
			for _, piece := range strings.Split(m[2], "@") {
				add(piece)
			}
		}
		if _, q, ok := strings.Cut(raw, "?"); ok {
			for _, kv := range strings.Split(q, "&") {
				if k, v, ok := strings.Cut(kv, "="); ok && IsSecretParam(k) {
					add(v)
				}
			}
		}
		return sortLongestFirst(out)
	}
	if pw, has := u.User.Password(); has {
		add(pw)
	}
	for k, vs := range u.Query() {
		for _, v := range vs {
			switch {
			case IsSecretParam(k):
				add(v)
			case strings.Contains(v, "://"):
				out = append(out, Secrets(v)...)
			}
		}
	}
	return sortLongestFirst(out)
}

func sortLongestFirst(s []string) []string {
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return s
}

// Message returns msg with raw replaced by URL(raw) and every secret of raw masked, also in its
// URL-escaped forms (libraries echo the URL they were given, sometimes re-encoded).
func Message(msg, raw string) string {
	if raw == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, raw, URL(raw))
	for _, s := range Secrets(raw) {
		for _, form := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
			msg = strings.ReplaceAll(msg, form, Mask)
		}
	}
	return msg
}
