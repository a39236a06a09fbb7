package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/thrift/lib/go/thrift"
)

// Page types of parquet.thrift's PageType.
const (
	pageData       = 0
	pageDictionary = 2
	pageDataV2     = 3
)

// rawPage is one page of a column chunk as stored: its header's fields the copy path needs and
// its compressed bytes.
type rawPage struct {
	kind         int32
	uncompressed int32
	numValues    int32
	encoding     int32
	// defEnc and repEnc are a V1 data page's levels' encodings (a V2 page's levels are RLE).
	defEnc, repEnc int32
	// v2 are the fields of a DATA_PAGE_V2 header a V1 header does not have (zero for other pages).
	v2 pageV2
	// stats are the page header's statistics (min_value/max_value, null_count), when set.
	stats metadata.EncodedStatistics
	data  []byte // the page's stored bytes (compressed_page_size of them), after the header
}

// pageV2 are DataPageHeaderV2's own fields. A V2 page stores its repetition levels, then its
// definition levels (each RLE without a length prefix, levelBytes of them, never compressed),
// then its values, compressed by the column chunk's codec when compressed is set.
type pageV2 struct {
	numNulls, numRows  int32
	defBytes, repBytes int32
	compressed         bool
}

// levelBytes returns the bytes of a V2 page's levels, stored uncompressed before its values (0
// for other pages).
func (p *rawPage) levelBytes() int64 { return int64(p.v2.defBytes) + int64(p.v2.repBytes) }

// header packs into w, and returns, the page header's fields that say how its data is read, for
// verify.AddPage: kind, uncompressed size and encodings, and for a V2 page its rows, nulls,
// levels' lengths and whether its values are compressed.
func (p *rawPage) header(w *pageWords) []uint64 {
	w[0] = uint64(uint32(p.uncompressed)) | uint64(uint8(p.kind))<<32 | uint64(uint8(p.encoding))<<40 |
		uint64(uint8(p.defEnc))<<48 | uint64(uint8(p.repEnc))<<56
	if p.kind != pageDataV2 {
		return w[:1]
	}
	var compressed uint64
	if p.v2.compressed {
		compressed = 1
	}
	w[1] = uint64(uint32(p.v2.numRows)) | uint64(uint32(p.v2.numNulls))<<32
	w[2] = uint64(uint32(p.v2.defBytes)) | uint64(uint32(p.v2.repBytes))<<32
	w[3] = compressed
	return w[:4]
}

// pageWords holds a page's header words (rawPage.header), so that packing them allocates nothing.
type pageWords [4]uint64

// splitPages splits the stored bytes of one column chunk into its pages (headers decoded, data
// sliced out of b, not copied). A header that does not parse, or a page that overruns b, is an
// *InputError.
func splitPages(ctx context.Context, b []byte) ([]rawPage, error) {
	var pages []rawPage
	// One reader for the whole column chunk: each header is decoded where the previous page ends.
	buf := bytes.NewBuffer(b)
	p := thrift.NewTCompactProtocolConf(&thrift.TMemoryBuffer{Buffer: buf}, &thrift.TConfiguration{MaxMessageSize: maxPageHeaderBytes})
	for buf.Len() > 0 {
		off := len(b) - buf.Len()
		pg, compressed, err := readPageHeader(ctx, p)
		if err != nil {
			return nil, inputErrorf("page header at byte %d of the column chunk: %v", off, err)
		}
		start := len(b) - buf.Len()
		if compressed < 0 || int64(start)+int64(compressed) > int64(len(b)) {
			return nil, inputErrorf("page at byte %d of the column chunk overruns it (%d bytes)", off, compressed)
		}
		pg.data = buf.Next(int(compressed))
		pages = append(pages, pg)
	}
	return pages, nil
}

// readPageHeader decodes a PageHeader (parquet.thrift): type, sizes, and the data page header
// (V1 or V2) or dictionary page header's number of values and encodings.
func readPageHeader(ctx context.Context, p thrift.TProtocol) (pg rawPage, compressed int32, err error) {
	pg.kind = -1
	seen := 0
	err = readStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && typ == thrift.I32:
			pg.kind, err = p.ReadI32(ctx)
			seen |= 1
		case id == 2 && typ == thrift.I32:
			pg.uncompressed, err = p.ReadI32(ctx)
			seen |= 2
		case id == 3 && typ == thrift.I32:
			compressed, err = p.ReadI32(ctx)
			seen |= 4
		case id == 5 && typ == thrift.STRUCT:
			err = readDataPageHeader(ctx, p, &pg, false)
		case id == 8 && typ == thrift.STRUCT:
			pg.v2.compressed = true // is_compressed's default
			err = readDataPageHeader(ctx, p, &pg, true)
		case id == 7 && typ == thrift.STRUCT:
			err = readStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
				var err error
				switch {
				case id == 1 && typ == thrift.I32:
					pg.numValues, err = p.ReadI32(ctx)
				case id == 2 && typ == thrift.I32:
					pg.encoding, err = p.ReadI32(ctx)
				default:
					return false, nil
				}
				return true, err
			})
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil && seen != 7 {
		err = errors.New("page header without its type or sizes")
	}
	return pg, compressed, err
}

// readDataPageHeader decodes a DataPageHeader (v2 false) or DataPageHeaderV2 (its own fields into
// pg.v2) into pg.
func readDataPageHeader(ctx context.Context, p thrift.TProtocol, pg *rawPage, v2 bool) error {
	statsField, encField := int16(5), int16(2)
	if v2 {
		statsField, encField = 8, 4
	}
	return readStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 1 && typ == thrift.I32:
			pg.numValues, err = p.ReadI32(ctx)
		case id == encField && typ == thrift.I32:
			pg.encoding, err = p.ReadI32(ctx)
		case !v2 && id == 3 && typ == thrift.I32:
			pg.defEnc, err = p.ReadI32(ctx)
		case !v2 && id == 4 && typ == thrift.I32:
			pg.repEnc, err = p.ReadI32(ctx)
		case v2 && id == 2 && typ == thrift.I32:
			pg.v2.numNulls, err = p.ReadI32(ctx)
		case v2 && id == 3 && typ == thrift.I32:
			pg.v2.numRows, err = p.ReadI32(ctx)
		case v2 && id == 5 && typ == thrift.I32:
			pg.v2.defBytes, err = p.ReadI32(ctx)
		case v2 && id == 6 && typ == thrift.I32:
			pg.v2.repBytes, err = p.ReadI32(ctx)
		case v2 && id == 7 && typ == thrift.BOOL:
			pg.v2.compressed, err = p.ReadBool(ctx)
		case id == statsField && typ == thrift.STRUCT:
			err = readStatistics(ctx, p, &pg.stats)
		default:
			return false, nil
		}
		return true, err
	})
}

// readStatistics decodes a Statistics struct's min_value, max_value and null_count (the
// deprecated min and max, whose sort order is not defined, are skipped).
func readStatistics(ctx context.Context, p thrift.TProtocol, st *metadata.EncodedStatistics) error {
	return readStruct(ctx, p, func(id int16, typ thrift.TType) (bool, error) {
		var err error
		switch {
		case id == 3 && typ == thrift.I64:
			st.NullCount, err = p.ReadI64(ctx)
			st.HasNullCount = true
		case id == 5 && typ == thrift.STRING:
			st.Max, err = p.ReadBinary(ctx)
			st.HasMax = true
		case id == 6 && typ == thrift.STRING:
			st.Min, err = p.ReadBinary(ctx)
			st.HasMin = true
		default:
			return false, nil
		}
		return true, err
	})
}

// readStruct reads one struct, calling field for each field; a field that field does not read
// (false) is skipped.
func readStruct(ctx context.Context, p thrift.TProtocol, field func(id int16, typ thrift.TType) (bool, error)) error {
	if _, err := p.ReadStructBegin(ctx); err != nil {
		return err
	}
	for {
		_, typ, id, err := p.ReadFieldBegin(ctx)
		if err != nil {
			return err
		}
		if typ == thrift.STOP {
			break
		}
		read, err := field(id, typ)
		if err == nil && !read {
			err = p.Skip(ctx, typ)
		}
		if err != nil {
			return fmt.Errorf("field %d: %w", id, err)
		}
		if err := p.ReadFieldEnd(ctx); err != nil {
			return err
		}
	}
	return p.ReadStructEnd(ctx)
}
