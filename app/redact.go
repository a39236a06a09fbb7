package app

import "github.com/storeopt/storeopt/internal/redact"

// RedactURL returns rawURL fit for logs and error messages: the password of the user info, the
// values of credential-like query parameters (password, secret…, token…, signature…) and the
// passwords of URLs nested in query values are replaced by "xxxxx"; a key=value connection
// string gets its password=… value replaced; a string that does not parse as a URL is returned
// as "<unparseable URL>". (package internal/redact)
func RedactURL(rawURL string) string { return redact.URL(rawURL) }

// redactErr returns err's message with rawURL redacted and every secret of it masked, for errors
// from libraries that echo the URL they were given.
func redactErr(err error, rawURL string) string { return redact.Message(err.Error(), rawURL) }

// isSecretParam reports whether a URL query parameter holds a credential.
func isSecretParam(name string) bool { return redact.IsSecretParam(name) }
