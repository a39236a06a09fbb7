package app

import (
	"net/url"
	"regexp"
	"strings"
)

// dsnPassword matches the password of a key=value connection string (password=… or
// password='…').
var dsnPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// secretParams are query parameters whose values are credentials (lower case).
var secretParams = map[string]bool{
	"password": true, "secret": true, "secret_key": true, "secret_access_key": true,
	"aws_secret_access_key": true, "session_token": true, "aws_session_token": true,
	"token": true, "access_token": true, "sslpassword": true, "x-amz-security-token": true,
	"x-amz-signature": true, "x-amz-credential": true, "signature": true,
}

// RedactURL returns rawURL fit for logs and error messages: the password of the user info and the
// values of credential-like query parameters (password, secret…, token…, signature…) are replaced
// by "xxxxx". A key=value connection string (no "://") gets its password=… value replaced. A
// string that does not parse as a URL is returned as "<unparseable URL>".
func RedactURL(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	if !strings.Contains(rawURL, "://") {
		return dsnPassword.ReplaceAllString(rawURL, "${1}xxxxx")
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparseable URL>"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			if isSecretParam(k) {
				q[k] = []string{"xxxxx"}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// redactErr returns err's message with every occurrence of rawURL, and of its password, replaced
// by the redacted form, for errors from libraries that echo the URL they were given.
func redactErr(err error, rawURL string) string {
	msg := err.Error()
	if rawURL == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, rawURL, RedactURL(rawURL))
	if u, perr := url.Parse(rawURL); perr == nil {
		if pw, has := u.User.Password(); has && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		for k, vs := range u.Query() {
			if isSecretParam(k) {
				for _, v := range vs {
					if v != "" {
						msg = strings.ReplaceAll(msg, v, "xxxxx")
					}
				}
			}
		}
	}
	return msg
}

// isSecretParam reports whether a URL query parameter holds a credential.
func isSecretParam(name string) bool {
	n := strings.ToLower(name)
	return secretParams[n] || strings.Contains(n, "secret") || strings.Contains(n, "password")
}
