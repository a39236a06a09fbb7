package parquetio

import (
	"encoding/base64"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// dictionaryLimit returns how many distinct values a dictionary with index type dt can address
// (non-negative indices), or 0 for an index type of 32 bits or more (no limit a row group meets).
func dictionaryLimit(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.INT8:
		return 1 << 7
	case arrow.UINT8:
		return 1 << 8
	case arrow.INT16:
		return 1 << 15
	case arrow.UINT16:
		return 1 << 16
	}
	return 0
}

// denseDictionaries returns the footer pairs kv with an ARROW:schema in which every top-level
// dictionary field whose index type is narrower than 32 bits (dictionary<int8, utf8>, a pandas
// categorical) is declared as its value type instead, and the distinct values each top-level
// field may hold per row group (0: no limit); both nil when the stored schema has no such field
// (or cannot be decoded).
//
// arrow-go reads such a column as a dictionary of that index type, and every concatenation of two
// of its arrays (batches of two chunks, or of two row groups of one chunk, in one batch) unifies
// their dictionaries, which fails once they hold more distinct values together than the index
// addresses ("unified dictionary requires a larger index type"), although the Parquet data does
// not limit the dictionary. Read in the value type, the rows merge like any other column; the
// writer dictionary-encodes the column again and keeps each row group within the limit, so that
// every output reads back in the declared type (Writer). The pairs are only what pqarrow reads
// the Arrow types from: the chunk's footer is kept as stored.
func denseDictionaries(kv metadata.KeyValueMetadata) (metadata.KeyValueMetadata, []int) {
	raw := kv.FindValue(ArrowSchemaKey)
	if raw == nil {
		return nil, nil
	}
	stored, err := decodeArrowSchema(*raw)
	if err != nil {
		return nil, nil
	}
	fields := stored.Fields()
	limits := make([]int, len(fields))
	found := false
	for i, f := range fields {
		dt, ok := f.Type.(*arrow.DictionaryType)
		if !ok {
			continue
		}
		if limits[i] = dictionaryLimit(dt.IndexType); limits[i] > 0 {
			fields[i].Type = dt.ValueType
			found = true
		}
	}
	if !found {
		return nil, nil
	}
	md := stored.Metadata()
	dense := arrow.NewSchema(fields, &md)
	out := make(metadata.KeyValueMetadata, 0, len(kv))
	for _, e := range kv {
		if e.GetKey() == ArrowSchemaKey {
			v := base64.StdEncoding.EncodeToString(flight.SerializeSchema(dense, memory.DefaultAllocator))
			cp := *e
			cp.Value = &v
			e = &cp
		}
		out = append(out, e)
	}
	return out, limits
}
