package app

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestOpenStoreFileCreatesDirectory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "b", "store")
	b, err := OpenStore(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "tp_x/data/00000.parquet", []byte("abc"), nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "tp_x", "data", "00000.parquet"))
	if err != nil || string(got) != "abc" {
		t.Fatalf("object not stored under %s: %q, %v", dir, got, err)
	}
}

func TestOpenStoreFileWritesNoSidecarUnlessAsked(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		query   string
		sidecar bool
	}{{"", false}, {"?metadata=", true}, {"?metadata=skip", false}} {
		dir := t.TempDir()
		b, err := OpenStore(ctx, "file://"+dir+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.WriteAll(ctx, "tp_x/data/00000.parquet", []byte("abc"), nil); err != nil {
			t.Fatal(err)
		}
		b.Close()
		_, err = os.Stat(filepath.Join(dir, "tp_x", "data", "00000.parquet.attrs"))
		if got := err == nil; got != tc.sidecar {
			t.Errorf("URL query %q: sidecar written = %v, want %v", tc.query, got, tc.sidecar)
		}
	}
}

func TestOpenStoreMem(t *testing.T) {
	b, err := OpenStore(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.WriteAll(context.Background(), "k", []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
}

func TestOpenStoreErrorsHideSecrets(t *testing.T) {
	for _, u := range []string{
		"s3://bucket?region=us-east-1&no_such_param=1&aws_secret_access_key=TOPSECRET",
		"nosuchscheme://user:TOPSECRET@host/x",
		"file://",
	} {
		_, err := OpenStore(context.Background(), u)
		if err == nil {
			t.Errorf("OpenStore(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "TOPSECRET") {
			t.Errorf("OpenStore(%q) error shows the secret: %v", u, err)
		}
	}
}

// TestOpenStoreS3URLOfCompose checks that the MinIO URL of docker-compose.yml is one this
// gocloud version accepts (opening does not contact the server).
func TestOpenStoreS3URLOfCompose(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "storeopt")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "storeopt-secret")
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`STOREOPT_STORE_URL: "([^"]+)"`).FindSubmatch(compose)
	if m == nil {
		t.Fatal("docker-compose.yml sets no STOREOPT_STORE_URL")
	}
	b, err := OpenStore(context.Background(), string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
}
