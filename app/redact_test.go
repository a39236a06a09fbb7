package app

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"postgres://postgres@127.0.0.1:5432/storeopt?sslmode=disable", "postgres://postgres@127.0.0.1:5432/storeopt?sslmode=disable"},
		{"postgres://app:s3cr%2Ft@db:5432/storeopt", "postgres://app:xxxxx@db:5432/storeopt"},
		{"postgres://app:@db/x", "postgres://app:xxxxx@db/x"},
		{"s3://storeopt?endpoint=http://minio:9000&region=us-east-1", "s3://storeopt?endpoint=http://minio:9000&region=us-east-1"},
		{"s3://b?region=r&aws_secret_access_key=K&session_token=T", "s3://b?aws_secret_access_key=xxxxx&region=r&session_token=xxxxx"},
		{"postgres://db/x?password=pw&sslmode=require", "postgres://db/x?password=xxxxx&sslmode=require"},
		{"host=db user=app password=pw dbname=x", "host=db user=app password=xxxxx dbname=x"},
		{"host=db password='p w\\'x' dbname=x", "host=db password=xxxxx dbname=x"},
		{"file:///tmp/store", "file:///tmp/store"},
		{"postgres://a:b@[::1", "<unparseable URL>"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactErrRemovesEchoedSecrets(t *testing.T) {
	raw := "postgres://app:hunter2@db/x?sslpassword=pp"
	err := errors.New("dial " + raw + ": auth failed for hunter2 (pp)")
	got := redactErr(err, raw)
	for _, secret := range []string{"hunter2", "pp)"} {
		if strings.Contains(got, secret) {
			t.Errorf("redactErr left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "auth failed") {
		t.Errorf("redactErr lost the message: %q", got)
	}
}
