package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
)

// TestOpenStoreOnAnotherFilesystem: a file:// store on another filesystem than the temporary
// directory ($TMPDIR, here /tmp on the root disk and the store on /dev/shm) takes writes, with or
// without no_tmp_dir in the URL, and each write's temporary file lies next to its object. The
// same store opened by plain fileblob fails with "invalid cross-device link": the setup
// reproduces the fault.
func TestOpenStoreOnAnotherFilesystem(t *testing.T) {
	ctx := context.Background()
	dir := testenv.CrossDeviceDir(t)
	plain, err := blob.OpenBucket(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	err = plain.WriteAll(ctx, "tp_x/metadata.json", []byte("{}"), nil)
	_ = plain.Close()
	if !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("plain fileblob store on %s (TMPDIR %s): write error %v, want invalid cross-device link", dir, os.TempDir(), err)
	}
	for _, query := range []string{"", "?no_tmp_dir=", "?no_tmp_dir=1", "?no_tmp_dir=true&metadata=", "?metadata=skip"} {
		b, err := app.OpenStore(ctx, "file://"+dir+query)
		if err != nil {
			t.Fatal(err)
		}
		key := "tp_x/data/00000.parquet"
		w, err := b.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "application/octet-stream"}) // created at once
		if err != nil {
			t.Fatalf("URL query %q: %v", query, err)
		}
		if _, err := w.Write([]byte("abc")); err != nil {
			t.Fatal(err)
		}
		temps, _ := filepath.Glob(filepath.Join(dir, "tp_x", "data", "00000.parquet.*.tmp"))
		if len(temps) != 1 || !store.IsTempKey("tp_x/data/"+filepath.Base(temps[0])) {
			t.Errorf("URL query %q: temporary files next to the object during the write: %v, want one", query, temps)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("URL query %q: %v", query, err)
		}
		if got, err := b.ReadAll(ctx, key); err != nil || string(got) != "abc" {
			t.Errorf("URL query %q: read back %q, %v", query, got, err)
		}
		if temps, _ := filepath.Glob(filepath.Join(dir, "tp_x", "data", "*.tmp")); len(temps) != 0 {
			t.Errorf("URL query %q: temporary files left after the write: %v", query, temps)
		}
		_ = b.Close()
	}
}
