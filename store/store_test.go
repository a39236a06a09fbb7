package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/blob/memblob"
)

const testPrefix = "tp_01J9Z8Y7X6W5V4T3S2R1Q0P9N8"

func TestCheckKey(t *testing.T) {
	ok := []string{
		testPrefix + "/data/00000.parquet",
		testPrefix + "/metadata.json",
		testPrefix + "/a/b/c d-é.x",
		testPrefix + "/data/x.tmp",
		testPrefix + "/data/00000.parquet.tmp.parquet",
	}
	for _, k := range ok {
		if err := CheckKey(testPrefix, k); err != nil {
			t.Errorf("CheckKey(%q): %v", k, err)
		}
	}
	bad := []struct{ key, says string }{
		{testPrefix + "/data/../../etc/passwd", `".."`},
		{testPrefix + "/../tp_OTHER/x", `".."`},
		{testPrefix + "/./x", `"."`},
		{testPrefix + "/data//x", "empty"},
		{testPrefix + "/data/", "empty"},
		{testPrefix + "/", "empty"},
		{"/" + testPrefix + "/data/x", "outside"},
		{testPrefix, "outside"},
		{testPrefix + "X/data/x", "outside"},
		{"tp_01J9Z8Y7X6W5V4T3S2R1Q0P9N9/data/x", "outside"},
		{"data/00000.parquet", "outside"},
		{testPrefix + "/data/\xff.parquet", "UTF-8"},
		{testPrefix + "/data/a\nb", "control"},
		{testPrefix + "/data/a\x00b", "control"},
		{testPrefix + "/data/a\x7fb", "control"},
		{testPrefix + `/data\..\x`, "backslash"},
		{testPrefix + "/data/00000.parquet.18ece603137b8b02.tmp", "temporary file"},
	}
	for _, tc := range bad {
		err := CheckKey(testPrefix, tc.key)
		if err == nil {
			t.Errorf("CheckKey(%q) accepted", tc.key)
			continue
		}
		if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("CheckKey(%q) = %q, want it to say %s", tc.key, err, tc.says)
		}
		if !strings.Contains(err.Error(), "object key") {
			t.Errorf("CheckKey(%q) = %q does not name the key", tc.key, err)
		}
	}
	if err := CheckKey("tp_bad", "tp_bad/x"); err == nil {
		t.Errorf("CheckKey accepted a malformed prefix")
	}
	// The error message of invalid UTF-8 is itself valid UTF-8 and bounded.
	err := CheckKey(testPrefix, testPrefix+"/"+strings.Repeat("\xfe", 1000))
	if err == nil || !strings.Contains(err.Error(), "UTF-8") || len(err.Error()) > 400 {
		t.Errorf("long invalid key: %v", err)
	}
}

func TestChunkAndMetadataKeys(t *testing.T) {
	tests := []struct {
		ordinal int
		want    string
	}{
		{0, testPrefix + "/data/00000.parquet"},
		{42, testPrefix + "/data/00042.parquet"},
		{99999, testPrefix + "/data/99999.parquet"},
		{100000, testPrefix + "/data/100000.parquet"},
	}
	for _, tc := range tests {
		got := ChunkKey(testPrefix, tc.ordinal)
		if got != tc.want {
			t.Errorf("ChunkKey(%d) = %q, want %q", tc.ordinal, got, tc.want)
		}
		if err := CheckKey(testPrefix, got); err != nil {
			t.Errorf("ChunkKey(%d) fails CheckKey: %v", tc.ordinal, err)
		}
	}
	if got := MetadataKey(testPrefix); got != testPrefix+"/metadata.json" {
		t.Errorf("MetadataKey = %q", got)
	}
}

func TestNewPrefix(t *testing.T) {
	seen := make(map[string]bool, 10000)
	prev := ""
	for range 10000 {
		p := NewPrefix()
		if err := CheckPrefix(p); err != nil {
			t.Fatalf("NewPrefix() = %q: %v", p, err)
		}
		if seen[p] {
			t.Fatalf("NewPrefix() repeated %q", p)
		}
		if p <= prev {
			t.Fatalf("NewPrefix() not increasing: %q after %q", p, prev)
		}
		seen[p], prev = true, p
	}
	for _, p := range []string{"", "tp_", "tp_01j9z8y7x6w5v4t3s2r1q0p9n8", "tp_01J9Z8Y7X6W5V4T3S2R1Q0P9NU", "xx_01J9Z8Y7X6W5V4T3S2R1Q0P9N8", testPrefix + "/"} {
		if CheckPrefix(p) == nil {
			t.Errorf("CheckPrefix(%q) accepted", p)
		}
	}
}

func writeObject(t *testing.T, b *blob.Bucket, key string, data []byte) {
	t.Helper()
	if err := b.WriteAll(context.Background(), key, data, nil); err != nil {
		t.Fatal(err)
	}
}

// Small objects (read whole) and large ones (>16 MiB, range reads) answer ReadAt, Read and Seek
// identically to a bytes.Reader over the same bytes.
func TestOpenObject(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	r := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, 1000, inMemoryLimit, inMemoryLimit + 12345} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		key := testPrefix + "/obj"
		writeObject(t, b, key, data)
		obj, err := OpenObject(ctx, b, key)
		if err != nil {
			t.Fatal(err)
		}
		_, isRange := obj.(*OpenedObject).Object.(*rangeObject)
		if isRange != (size > inMemoryLimit) {
			t.Fatalf("size %d: range reads = %t", size, isRange)
		}
		if obj.Size() != int64(size) {
			t.Fatalf("size %d: Size() = %d", size, obj.Size())
		}
		ref := bytes.NewReader(data)
		offs := []int64{0, int64(size) / 2, int64(size) - 10, int64(size) - 1, int64(size), int64(size) + 5}
		for _, off := range offs {
			if off < 0 {
				continue
			}
			for _, n := range []int{0, 1, 10, 4096} {
				got, want := make([]byte, n), make([]byte, n)
				gn, gerr := obj.ReadAt(got, off)
				wn, werr := ref.ReadAt(want, off)
				if gn != wn || !bytes.Equal(got[:gn], want[:wn]) || (gerr == nil) != (werr == nil) || (werr == io.EOF) != errors.Is(gerr, io.EOF) {
					t.Fatalf("size %d ReadAt(%d bytes, %d) = %d, %v; want %d, %v", size, n, off, gn, gerr, wn, werr)
				}
			}
		}
		// Seek from the end, then Read to EOF: the footer access pattern of a Parquet reader.
		tail := int64(min(size, 100))
		if _, err := obj.Seek(-tail, io.SeekEnd); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		if err != nil || !bytes.Equal(got, data[int64(size)-tail:]) {
			t.Fatalf("size %d: tail read %d bytes, %v", size, len(got), err)
		}
	}
	if _, err := OpenObject(ctx, b, testPrefix+"/missing"); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), testPrefix+"/missing") {
		t.Fatalf("missing object: %v, want ErrNotExist naming the key", err)
	}
}

func TestDeletePrefix(t *testing.T) {
	ctx := context.Background()
	b := memblob.OpenBucket(nil)
	defer b.Close()
	other := NewPrefix()
	victim := NewPrefix()
	keep := []string{other + "/data/00000.parquet", other + "/metadata.json", victim + "X/data/00000.parquet", victim, "unrelated"}
	for _, k := range keep {
		writeObject(t, b, k, []byte("keep"))
	}
	for i := range 1203 { // more than one list page
		writeObject(t, b, ChunkKey(victim, i), []byte("x"))
	}
	writeObject(t, b, MetadataKey(victim), []byte("{}"))
	n, err := DeletePrefix(ctx, b, victim)
	if err != nil || n != 1204 {
		t.Fatalf("DeletePrefix = %d, %v; want 1204", n, err)
	}
	var left []string
	it := b.List(nil)
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, o.Key)
	}
	if len(left) != len(keep) {
		t.Fatalf("left %v, want %v", left, keep)
	}
	for _, k := range keep {
		if ok, _ := b.Exists(ctx, k); !ok {
			t.Errorf("%s was deleted", k)
		}
	}
	if n, err := DeletePrefix(ctx, b, victim); err != nil || n != 0 {
		t.Errorf("second DeletePrefix = %d, %v", n, err)
	}
	if _, err := DeletePrefix(ctx, b, ""); err == nil {
		t.Errorf("DeletePrefix of an empty prefix accepted")
	}
	if _, err := DeletePrefix(ctx, b, "tp_"); err == nil {
		t.Errorf("DeletePrefix of a malformed prefix accepted")
	}
}

func TestIsTempKey(t *testing.T) {
	for key, want := range map[string]bool{
		testPrefix + "/data/00000.parquet.18ece603137b8b02.tmp":   true,
		testPrefix + "/metadata.json.1.tmp":                       true,
		testPrefix + "/data/00000.parquet":                        false,
		testPrefix + "/data/00000.tmp":                            false,
		testPrefix + "/data/00000.parquet.XYZ.tmp":                false,
		testPrefix + "/data/00000.parquet.18ece603137b8b02.tmp/x": false,
	} {
		if got := IsTempKey(key); got != want {
			t.Errorf("IsTempKey(%q) = %v, want %v", key, got, want)
		}
	}
}
