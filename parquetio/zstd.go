package parquetio

import (
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// zstdWindowBytes is the match window of the zstd encoders that compress Parquet pages. Every
// page is compressed on its own and data pages are DataPageBytes (256 KiB) plus at most one
// value, so a larger window rarely finds more matches; it only costs memory: arrow-go's own codec
// keeps zstd's default 8 MiB window, whose history buffer is 16 MiB per encoder, one encoder per
// column being written at once.
const zstdWindowBytes = 1 << 20

// pageZstd is the zstd codec storeopt registers for Parquet (compress.RegisterCodec replaces
// arrow-go's for the whole process, readers included): encoding uses pooled encoders with a
// zstdWindowBytes window; decoding and streaming are arrow-go's own codec's. Pages it writes are
// ordinary zstd frames that any reader decodes. They carry no content checksum (zstd's optional
// xxhash of the page, which arrow-cpp does not write either): hashing pages, to write and to check
// them, was 6 % of the CPU profile of a camera-topic rewrite, and each output is verified
// row by row against its inputs anyway (docs/design.md#verification).
type pageZstd struct {
	base   compress.Codec          // arrow-go's zstd codec
	stream compress.StreamingCodec // the same, for streamed page values
	// encoders holds one sync.Pool of *zstd.Encoder per encoder level.
	mu       sync.Mutex
	encoders map[zstd.EncoderLevel]*sync.Pool
}

func init() {
	base, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		panic("parquetio: arrow-go has no zstd codec: " + err.Error())
	}
	stream, ok := base.(compress.StreamingCodec)
	if !ok {
		panic("parquetio: arrow-go's zstd codec does not stream")
	}
	compress.RegisterCodec(compress.Codecs.Zstd, &pageZstd{base: base, stream: stream, encoders: map[zstd.EncoderLevel]*sync.Pool{}})
}

func (z *pageZstd) pool(level zstd.EncoderLevel) *sync.Pool {
	z.mu.Lock()
	defer z.mu.Unlock()
	p := z.encoders[level]
	if p == nil {
		p = &sync.Pool{New: func() any {
			// The options are constants known to be valid, so NewWriter cannot fail.
			enc, _ := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level),
				zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true),
				zstd.WithWindowSize(zstdWindowBytes), zstd.WithLowerEncoderMem(true),
				zstd.WithEncoderCRC(false))
			return enc
		}}
		z.encoders[level] = p
	}
	return p
}

// EncodeLevel compresses src into dst (reused when large enough) at the zstd level (as numbered
// by zstd; compress.DefaultCompressionLevel = zstd's default).
func (z *pageZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	p := z.pool(l)
	enc := p.Get().(*zstd.Encoder)
	defer p.Put(enc)
	return enc.EncodeAll(src, dst[:0])
}

// Encode compresses src at the default level.
func (z *pageZstd) Encode(dst, src []byte) []byte {
	return z.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

func (z *pageZstd) CompressBound(n int64) int64 { return z.base.CompressBound(n) }

func (z *pageZstd) Decode(dst, src []byte) []byte { return z.base.Decode(dst, src) }

// DecodeWithError decodes with arrow-go's codec, returning its error instead of panicking.
func (z *pageZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	return compress.Decode(z.base, dst, src)
}

func (z *pageZstd) NewReader(r io.Reader) io.ReadCloser { return z.stream.NewReader(r) }

func (z *pageZstd) NewWriter(w io.Writer) io.WriteCloser { return z.stream.NewWriter(w) }

func (z *pageZstd) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return z.stream.NewWriterLevel(w, level)
}
