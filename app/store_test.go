package app

import (
	"context"
	"os"
	"path/filepath"
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
