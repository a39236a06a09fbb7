package parquetio

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

func TestZstdPagesUseSmallWindow(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := codec.(*pageZstd); !ok {
		t.Fatalf("registered zstd codec is %T, want *pageZstd", codec)
	}
	// 3 MiB with repeats 2 MiB apart: beyond the window, so they cannot be matched.
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 3<<20)
	for i := range 1 << 20 {
		src[i] = byte(r.IntN(256))
	}
	copy(src[2<<20:], src[:1<<20])
	enc := codec.EncodeLevel(nil, src, compress.DefaultCompressionLevel)
	// The frame header's descriptor (after the 4-byte magic) has no content checksum flag.
	if len(enc) < 5 || enc[4]&0x04 != 0 {
		t.Fatalf("frame descriptor %#x declares a content checksum", enc[4])
	}
	// A decoder that refuses windows above 1 MiB proves the frame's window.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxWindow(zstdWindowBytes))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	got, err := dec.DecodeAll(enc, nil)
	if err != nil {
		t.Fatalf("frame not decodable with a %d-byte window: %v", zstdWindowBytes, err)
	}
	if !bytes.Equal(got, src) {
		t.Fatal("round trip changed the data")
	}
	back, err := compress.Decode(codec, nil, enc)
	if err != nil || !bytes.Equal(back, src) {
		t.Fatalf("codec's own decode: %v", err)
	}
}
