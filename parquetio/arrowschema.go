package parquetio

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/apache/arrow-go/v18/arrow"
)

// fingerprint returns a string that identifies schema including the metadata of the schema and of
// every field at every nesting level, keys in their stored order. Equal fingerprints mean the
// schemas are equal verbatim.
func fingerprint(schema *arrow.Schema) string {
	var b strings.Builder
	writeMetadata(&b, schema.Metadata())
	for _, f := range schema.Fields() {
		writeField(&b, f)
	}
	return b.String()
}

func writeField(b *strings.Builder, f arrow.Field) {
	fmt.Fprintf(b, "(%q %s nullable=%t", f.Name, f.Type, f.Nullable)
	writeMetadata(b, f.Metadata)
	if nt, ok := f.Type.(arrow.NestedType); ok {
		for _, c := range nt.Fields() {
			writeField(b, c)
		}
	}
	b.WriteString(")")
}

func writeMetadata(b *strings.Builder, md arrow.Metadata) {
	b.WriteString("{")
	for i, k := range md.Keys() {
		fmt.Fprintf(b, "%q:%q,", k, md.Values()[i])
	}
	b.WriteString("}")
}

// arrowDifference describes the first difference between two Arrow schemas (schema metadata,
// field count, a field's name, type, nullability or metadata), or returns "" when they are equal
// verbatim. It makes a difference of two footers' ARROW:schema entries readable.
func arrowDifference(want, got *arrow.Schema) string {
	if a, b := fingerprint(want), fingerprint(got); a == b {
		return ""
	}
	if a, b := metadataString(want.Metadata()), metadataString(got.Metadata()); a != b {
		return fmt.Sprintf("schema metadata differs: %s vs %s", a, b)
	}
	if want.NumFields() != got.NumFields() {
		return fmt.Sprintf("%d fields vs %d", want.NumFields(), got.NumFields())
	}
	for i, f := range want.Fields() {
		var wb, gb strings.Builder
		writeField(&wb, f)
		writeField(&gb, got.Field(i))
		if wb.String() != gb.String() {
			g := got.Field(i)
			if f.Name == g.Name && arrow.TypeEqual(f.Type, g.Type) && f.Nullable == g.Nullable &&
				metadataString(f.Metadata) != metadataString(g.Metadata) {
				return fmt.Sprintf("field %q metadata differs: %s vs %s", f.Name, metadataString(f.Metadata), metadataString(g.Metadata))
			}
			return fmt.Sprintf("field %d differs: %s vs %s", i, wb.String(), gb.String())
		}
	}
	return "schemas differ"
}

func metadataString(md arrow.Metadata) string {
	var b strings.Builder
	writeMetadata(&b, md)
	return b.String()
}

// storedSchemaDifference describes how two ARROW:schema footer values differ, decoded, or
// returns "" when either cannot be decoded.
func storedSchemaDifference(want, got string) string {
	a, errA := decodeArrowSchema(want)
	b, errB := decodeArrowSchema(got)
	if errA != nil || errB != nil {
		return ""
	}
	return arrowDifference(a, b)
}

func decodeArrowSchema(raw string) (*arrow.Schema, error) {
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(raw); err != nil {
			return nil, err
		}
	}
	return flight.DeserializeSchema(b, memory.DefaultAllocator)
}

// withoutMetadata returns schema without its schema-level metadata (fields keep theirs).
func withoutMetadata(schema *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(schema.Fields(), nil)
}
