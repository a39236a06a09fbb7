package parquetio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// decompressPage returns the bytes of data page p as a reader decodes them: a V1 page's stored
// bytes decompressed whole, a V2 page's levels as stored followed by its values, decompressed
// when the page says they are compressed. Decompressed bytes go to *scratch, grown as needed.
// Levels that do not fit the page, or a page that does not come to its stated uncompressed size,
// is an error.
func decompressPage(codec compress.Codec, p *rawPage, scratch *[]byte) ([]byte, error) {
	size := int(p.uncompressed)
	levels := p.levelBytes()
	if p.v2.defBytes < 0 || p.v2.repBytes < 0 || levels > int64(len(p.data)) || levels > int64(size) {
		return nil, fmt.Errorf("levels of %d bytes in a page of %d bytes stored, %d uncompressed", levels, len(p.data), size)
	}
	if p.kind == pageDataV2 && !p.v2.compressed {
		if len(p.data) != size {
			return nil, fmt.Errorf("an uncompressed page of %d bytes, its header says %d", len(p.data), size)
		}
		return p.data, nil
	}
	if cap(*scratch) < size {
		*scratch = make([]byte, size)
	}
	b := (*scratch)[:size]
	copy(b, p.data[:levels])
	if out := codec.Decode(b[levels:], p.data[levels:]); len(out) != size-int(levels) {
		return nil, fmt.Errorf("a page decompresses to %d bytes, its header says %d", int(levels)+len(out), size)
	}
	return b, nil
}

// checkPage checks that b, the decompressed bytes of data page p (decompressPage) of a flat
// leaf column (descr), holds its values as a reader decodes them: its definition levels (RLE,
// bit width 1) decode to its number of values, and its values, for PLAIN and BYTE_STREAM_SPLIT,
// fit in the bytes that follow (the others' values are not looked at). A corrupt page that
// still decompresses to its stated size is found here, as a rewrite's decoding would find it,
// before its bytes are copied (the copy digest is of the bytes as stored and cannot tell). A V2
// page's num_nulls is copied as stored, not checked: readers count nulls from the levels, and
// some writers (arrow-go before v18.9.0) wrote 0 there when statistics were off.
func checkPage(descr *schema.Column, p *rawPage, b []byte) error {
	n := int(p.numValues)
	nonNull := n
	if descr.MaxRepetitionLevel() > 0 || descr.MaxDefinitionLevel() > 1 {
		return nil // not a flat column: the copy spec refused it
	}
	levels, b, ok, err := p.splitLevels(b, descr.MaxDefinitionLevel())
	if err != nil || !ok {
		return err
	}
	if descr.MaxDefinitionLevel() == 1 {
		if nonNull, err = countDefined(levels, n); err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
	}
	encoding := parquet.Encoding(p.encoding)
	if encoding != parquet.Encodings.Plain && encoding != parquet.Encodings.ByteStreamSplit {
		return nil
	}
	need := 0
	switch descr.PhysicalType() {
	case parquet.Types.Boolean:
		if encoding != parquet.Encodings.Plain {
			return nil
		}
		need = (nonNull + 7) / 8
	case parquet.Types.Int32, parquet.Types.Float:
		need = 4 * nonNull
	case parquet.Types.Int64, parquet.Types.Double:
		need = 8 * nonNull
	case parquet.Types.Int96:
		need = 12 * nonNull
	case parquet.Types.FixedLenByteArray:
		need = descr.TypeLength() * nonNull
	case parquet.Types.ByteArray:
		if encoding != parquet.Encodings.Plain {
			return nil
		}
		for i := range nonNull {
			if len(b) < 4 {
				return fmt.Errorf("value %d of %d: no length", i, nonNull)
			}
			l := binary.LittleEndian.Uint32(b)
			if int64(l) > int64(len(b)-4) {
				return fmt.Errorf("value %d of %d: %d bytes, %d left in the page", i, nonNull, l, len(b)-4)
			}
			b = b[4+l:]
		}
		return nil
	}
	if len(b) < need {
		return fmt.Errorf("%d values in %d bytes, %d needed", nonNull, len(b), need)
	}
	return nil
}

// splitLevels splits b, the decompressed bytes of data page p of a column whose definition
// levels go up to maxDef (0 or 1), into its definition levels (RLE runs, without a V1 page's
// length prefix; none when maxDef is 0) and its values. ok is false for V1 levels of another
// encoding than RLE, which are not looked at. A V2 page's levels are where its header says
// (decompressPage checked that they fit), after repetition levels some writers store even for a
// flat column.
func (p *rawPage) splitLevels(b []byte, maxDef int16) (levels, values []byte, ok bool, err error) {
	if p.kind == pageDataV2 {
		if maxDef > 0 {
			levels = b[p.v2.repBytes:p.levelBytes()]
		}
		return levels, b[p.levelBytes():], true, nil
	}
	if maxDef == 0 {
		return nil, b, true, nil
	}
	if parquet.Encoding(p.defEnc) != parquet.Encodings.RLE {
		return nil, nil, false, nil
	}
	if len(b) < 4 {
		return nil, nil, false, errors.New("page too short for its definition levels")
	}
	size := binary.LittleEndian.Uint32(b)
	if int64(size) > int64(len(b)-4) {
		return nil, nil, false, fmt.Errorf("definition levels of %d bytes in a page of %d", size, len(b))
	}
	return b[4 : 4+size], b[4+size:], true, nil
}

// countDefined decodes the first n levels of b, an RLE/bit-packed hybrid run of bit width 1,
// and returns how many are 1 (defined values). Fewer than n levels, or a level above 1, is an
// error.
func countDefined(b []byte, n int) (int, error) { return decodeDefLevels(b, n, nil) }

// decodeDefLevels is countDefined that also sets defined[i] to whether level i is 1 (when
// defined is not nil: n entries).
func decodeDefLevels(b []byte, n int, defined []bool) (int, error) {
	ones, seen := 0, 0
	for seen < n {
		header, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, fmt.Errorf("%d levels of %d", seen, n)
		}
		b = b[k:]
		if header&1 == 1 { // bit-packed: header>>1 groups of 8 levels, one byte each
			groups := header >> 1
			if groups > uint64(len(b)) {
				return 0, fmt.Errorf("bit-packed run of %d groups, %d bytes left", groups, len(b))
			}
			for _, v := range b[:groups] {
				take := min(8, n-seen)
				if take <= 0 {
					break
				}
				ones += bits.OnesCount8(v & byte(1<<take-1))
				if defined != nil {
					for j := range take {
						defined[seen+j] = v&(1<<j) != 0
					}
				}
				seen += take
			}
			b = b[groups:]
			continue
		}
		run := header >> 1
		if len(b) < 1 {
			return 0, fmt.Errorf("RLE run of %d levels, %d bytes left", run, len(b))
		}
		if b[0] > 1 {
			return 0, fmt.Errorf("level %d above 1", b[0])
		}
		take := int(min(run, uint64(n-seen)))
		if b[0] == 1 {
			ones += take
		}
		if defined != nil {
			for j := range take {
				defined[seen+j] = b[0] == 1
			}
		}
		seen += take
		b = b[1:]
	}
	return ones, nil
}
