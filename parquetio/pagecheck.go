package parquetio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// checkPage checks that b, the decompressed bytes of a V1 data page of a flat leaf column
// (descr) holding numValues values, holds them as a reader decodes them: its definition levels
// (RLE, bit width 1) decode to numValues levels, and its values, for PLAIN and
// BYTE_STREAM_SPLIT, fit in the bytes that follow (the others' values are not looked at). A
// corrupt page that still decompresses to its stated size is found here, as a rewrite's
// decoding would find it, before its bytes are copied (the copy digest is of the bytes as
// stored and cannot tell).
func checkPage(descr *schema.Column, numValues int32, defEnc, encoding parquet.Encoding, b []byte) error {
	n := int(numValues)
	nonNull := n
	if descr.MaxRepetitionLevel() > 0 || descr.MaxDefinitionLevel() > 1 {
		return nil // not a flat column: the copy spec refused it
	}
	if descr.MaxDefinitionLevel() == 1 {
		if defEnc != parquet.Encodings.RLE {
			return nil
		}
		if len(b) < 4 {
			return errors.New("page too short for its definition levels")
		}
		size := binary.LittleEndian.Uint32(b)
		if int64(size) > int64(len(b)-4) {
			return fmt.Errorf("definition levels of %d bytes in a page of %d", size, len(b))
		}
		var err error
		if nonNull, err = countDefined(b[4:4+size], n); err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
		b = b[4+size:]
	}
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

// countDefined decodes the first n levels of b, an RLE/bit-packed hybrid run of bit width 1,
// and returns how many are 1 (defined values). Fewer than n levels, or a level above 1, is an
// error.
func countDefined(b []byte, n int) (int, error) {
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
		seen += take
		b = b[1:]
	}
	return ones, nil
}
