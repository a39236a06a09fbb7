package redact

import (
	"strings"
	"testing"
)

// TestNoSecretSurvives: for URLs users really pass (including the ones a first user found
// leaking), neither URL nor Message shows any part of the secret.
func TestNoSecretSurvives(t *testing.T) {
	cases := []struct{ raw, secret string }{
		{"postgres://alice:S3cretPW@127.0.0.1:5432/db?sslmode=disable", "S3cretPW"},
		{"postgres://alice@127.0.0.1:5432/storeopt?password=QueryPW", "QueryPW"},
		{"postgres://alice:UserPW@127.0.0.1:5432/storeopt?password=QueryPW2", "QueryPW2"},
		{"postgres://alice:S3c%ret@PW@127.0.0.1:5432/db", "S3c%ret@PW"},
		{"postgres://alice:S3c%ret@PW@127.0.0.1:5432/db", "S3c%ret"},
		{"postgres://alice:S3c%ret@PW@127.0.0.1:5432/db", "@PW@"},
		{"s3://bucket?endpoint=http://u:EPpw@127.0.0.1:1&region=us-east-1", "EPpw"},
		{"s3://bucket?region=x&aws_secret_access_key=AKsecret&x-amz-security-token=Tok123", "AKsecret"},
		{"s3://bucket?region=x&aws_secret_access_key=AKsecret&x-amz-security-token=Tok123", "Tok123"},
		{"host=127.0.0.1 user=bob password=DsnPW dbname=x", "DsnPW"},
		{"host=127.0.0.1 user=bob password='quoted pw' dbname=x", "quoted pw"},
	}
	for _, tc := range cases {
		if got := URL(tc.raw); strings.Contains(got, tc.secret) {
			t.Errorf("URL(%q) = %q shows the secret", tc.raw, got)
		}
		msg := "failed to connect to " + tc.raw + " (" + strings.ReplaceAll(tc.raw, ":", "%3A") + ")" +
			" cannot parse `" + strings.Replace(tc.raw, "S3c%ret", "xxxxx", 1) + "`"
		if got := Message(msg, tc.raw); strings.Contains(got, tc.secret) {
			t.Errorf("Message for %q = %q shows the secret", tc.raw, got)
		}
	}
}

func TestURLKeepsWhatIsNotSecret(t *testing.T) {
	got := URL("postgres://alice:pw@db.example:5432/storeopt?sslmode=disable")
	if got != "postgres://alice:xxxxx@db.example:5432/storeopt?sslmode=disable" {
		t.Fatalf("got %q", got)
	}
	if got := URL("file:///var/data/store"); got != "file:///var/data/store" {
		t.Fatalf("got %q", got)
	}
}
