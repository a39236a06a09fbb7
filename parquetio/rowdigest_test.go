package parquetio

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/storeopt/storeopt/internal/arrowtypes"
	"github.com/storeopt/storeopt/verify"
)

// batchDigest is the digest of every row of data read as record batches of lim.
func batchDigest(t *testing.T, data []byte, lim Limits) verify.Digest {
	t.Helper()
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br, err := c.BatchesWithin(context.Background(), lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Release()
	var h verify.Hasher
	var d verify.Digest
	for rec := br.Next(); rec != nil; rec = br.Next() {
		h.AddRows(&d, rec, 0, rec.NumRows())
	}
	if err := br.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

// rowDigest is DigestRows of every row group of data.
func rowDigest(data []byte, lim Limits) (verify.Digest, error) {
	var d verify.Digest
	c, err := Open(bytes.NewReader(data), nil)
	if err != nil {
		return d, err
	}
	defer c.Close()
	groups := make([]int, c.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	err = c.DigestRows(context.Background(), lim, groups, &d)
	return d, err
}

// TestDigestRowsIsTheBatchDigest digests chunks of every type the tests know, written by a
// Writer (PLAIN pages, digested from them where the type allows), by plain pqarrow (dictionary
// pages, read as Arrow arrays) and with V2 pages, from their pages and as record batches: the
// digests are equal, also when the row groups are read as batches because a column chunk is
// larger than two batches.
func TestDigestRowsIsTheBatchDigest(t *testing.T) {
	lim := Limits{Rows: 97, Bytes: 1 << 20}
	tiny := Limits{Rows: 97, Bytes: 64}
	check := func(name string, data []byte) {
		t.Helper()
		want := batchDigest(t, data, lim)
		for _, l := range []Limits{lim, tiny} {
			got, err := rowDigest(data, l)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if got != want {
				t.Errorf("%s, limits %+v: page digest %s, batch digest %s", name, l, got, want)
			}
		}
	}
	for _, tc := range arrowtypes.Cases() {
		in, err := arrowtypes.File(tc, 600)
		if err != nil {
			t.Fatal(err)
		}
		check(tc.Name+" (pqarrow)", in)
		check(tc.Name+" (Writer)", rewriteWith(t, in, 97, WriterOptions{RowGroupRows: 250}))
	}
	rec := cameraRows(t, 0, 500)
	defer rec.Release()
	camera := writeRecord(t, rec)
	check("camera rows", camera)
	props := parquet.NewWriterProperties(parquet.WithDictionaryDefault(false), parquet.WithDataPageVersion(parquet.DataPageV2),
		parquet.WithDataPageSize(16<<10), parquet.WithMaxRowGroupLength(200))
	check("camera rows, V2 pages", encodePlainWith(t, rec.Schema(), props, nil, rec))
	sensor := rows(t, topicSchema(), 0, 1000)
	defer sensor.Release()
	check("sensor rows (nested)", writeRecord(t, sensor))

	// The camera rows' frames are digested from their pages, and a changed byte of a stored
	// frame page is an error or another digest.
	c, err := Open(bytes.NewReader(camera), nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := mustColumnChunk(t, c, 0, 2)
	c.Close()
	if _, ok := pageDigestible(arrow.BinaryTypes.Binary, c.pf.MetaData().Schema.Column(2), cc); !ok {
		t.Fatal("the camera rows' frames are not digested from their pages")
	}
	want := batchDigest(t, camera, lim)
	for _, at := range []int64{cc.DataPageOffset() + cc.TotalCompressedSize()/2, cc.DataPageOffset() + cc.TotalCompressedSize() - 3} {
		broken := bytes.Clone(camera)
		broken[at] ^= 0x10
		if got, err := rowDigest(broken, lim); err == nil && got == want {
			t.Errorf("a byte changed at %d of the frames' column chunk: the same digest", at)
		} else if err != nil && !IsInputError(err) {
			t.Errorf("a byte changed at %d: %v, not an input error", at, err)
		}
	}
}

func mustColumnChunk(t *testing.T, c *Chunk, rg, leaf int) *metadata.ColumnChunkMetaData {
	t.Helper()
	cc, err := c.pf.MetaData().RowGroup(rg).ColumnChunk(leaf)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}
