package parquetio

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/thrift/lib/go/thrift"
)

// Footer is what every chunk of a topic shares and every output chunk repeats verbatim
// (docs/formats.md): the Parquet schema elements of the file metadata (name, physical type, type
// length, repetition, converted and logical type, scale, precision, field id — each field as
// stored, set or unset) and its key/value pairs in their stored order, "ARROW:schema" included.
// Row groups, statistics, created_by and column orders are properties of one file, not of the
// topic, and are not part of it.
type Footer struct {
	// Elements are the schema elements in stored (depth-first) order.
	Elements []SchemaElement
	// KeyValues are the footer's key/value pairs in stored order.
	KeyValues []KeyValue
	// ID is the hex SHA-256 of the canonical encoding of Elements and KeyValues: equal IDs
	// mean equal footers (set and unset fields distinguished, thrift field order ignored).
	ID string
	// rawSchema is the thrift compact encoding of the FileMetaData "schema" list as stored in
	// the file (list header and elements); writers copy it into their outputs.
	rawSchema []byte
}

// SchemaElement is one decoded Parquet SchemaElement. Fields is its canonical rendering (every
// field that is set, by field id), the unit of comparison.
type SchemaElement struct {
	Name   string
	Fields string
}

// KeyValue is one footer key/value pair; Value is nil when the pair has no value.
type KeyValue struct {
	Key   string
	Value *string
}

// FingerprintBytes is the length of Footer.Digest's result.
const FingerprintBytes = sha256.Size

// Digest returns the footer's ID as bytes (FingerprintBytes long).
func (f *Footer) Digest() []byte {
	b, _ := hex.DecodeString(f.ID)
	return b
}

// FileMetaData field ids (parquet.thrift).
const (
	fmdSchema    = 2
	fmdKeyValues = 5
)

// maxFooterBytes bounds the footer a chunk may have (arrow-go reads it whole as well).
const maxFooterBytes = 256 << 20

// readFooterBytes returns the serialized file metadata at the end of r.
func readFooterBytes(r io.ReaderAt, size int64) ([]byte, error) {
	if size < 12 {
		return nil, inputErrorf("file of %d bytes has no Parquet footer", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("read footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return nil, inputErrorf("footer magic %q: not a plain Parquet file (encrypted footers are not supported)", tail[4:])
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n <= 0 || n > size-12 || n > maxFooterBytes {
		return nil, inputErrorf("footer length %d does not fit a file of %d bytes", n, size)
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-8-n); err != nil {
		return nil, fmt.Errorf("read footer: %w", err)
	}
	return buf, nil
}

// ParseFooter decodes the schema elements and key/value pairs of serialized Parquet file
// metadata (thrift compact protocol). Errors are *InputError.
func ParseFooter(meta []byte) (*Footer, error) {
	f := &Footer{}
	var canon bytes.Buffer
	err := walkStruct(meta, func(id int16, typ thrift.TType, start, valueStart, end int, p *fieldReader) error {
		switch {
		case id == fmdSchema && typ == thrift.LIST:
			f.rawSchema = meta[valueStart:end]
			return p.eachListStruct(meta[valueStart:end], func(canonical, name string) {
				f.Elements = append(f.Elements, SchemaElement{Name: name, Fields: canonical})
			})
		case id == fmdKeyValues && typ == thrift.LIST:
			return p.eachKeyValue(meta[valueStart:end], func(kv KeyValue) { f.KeyValues = append(f.KeyValues, kv) })
		}
		return nil
	})
	if err != nil {
		return nil, inputErrorf("footer is not valid Parquet file metadata: %v", err)
	}
	if len(f.Elements) == 0 {
		return nil, inputErrorf("footer has no schema")
	}
	// E<len>:<name>;<fields> per element, K<len>:<key>[=<len>:<value>] per pair, a line each
	// (written without fmt: every chunk's footer is parsed when it is opened).
	lenPrefixed := func(tag byte, s string) {
		canon.WriteByte(tag)
		canon.WriteString(strconv.Itoa(len(s)))
		canon.WriteByte(':')
		canon.WriteString(s)
	}
	for _, e := range f.Elements {
		lenPrefixed('E', e.Name)
		canon.WriteByte(';')
		canon.WriteString(e.Fields)
		canon.WriteByte('\n')
	}
	for _, kv := range f.KeyValues {
		lenPrefixed('K', kv.Key)
		if kv.Value != nil {
			lenPrefixed('=', *kv.Value)
		}
		canon.WriteByte('\n')
	}
	sum := sha256.Sum256(canon.Bytes())
	f.ID = hex.EncodeToString(sum[:])
	return f, nil
}

// ReadFooter reads and decodes the footer of the Parquet file r of size bytes.
func ReadFooter(r io.ReaderAt, size int64) (*Footer, error) {
	meta, err := readFooterBytes(r, size)
	if err != nil {
		return nil, err
	}
	return ParseFooter(meta)
}

// Value returns the value of the first pair with key, and whether there is one with a value.
func (f *Footer) Value(key string) (string, bool) {
	for _, kv := range f.KeyValues {
		if kv.Key == key && kv.Value != nil {
			return *kv.Value, true
		}
	}
	return "", false
}

// FirstFooterDifference describes the first difference between two footers (a schema element
// or a key/value pair; a differing ARROW:schema is decoded and compared field by field), or
// returns "" when they are equal.
func FirstFooterDifference(want, got *Footer) string {
	if want.ID == got.ID {
		return ""
	}
	if d := firstElementDifference(want.Elements, got.Elements); d != "" {
		return d
	}
	for i := range min(len(want.KeyValues), len(got.KeyValues)) {
		w, g := want.KeyValues[i], got.KeyValues[i]
		if w.Key != g.Key {
			return fmt.Sprintf("footer key/value pair %d is %q vs %q", i, w.Key, g.Key)
		}
		if (w.Value == nil) != (g.Value == nil) || (w.Value != nil && *w.Value != *g.Value) {
			if w.Key == ArrowSchemaKey && w.Value != nil && g.Value != nil {
				if d := storedSchemaDifference(*w.Value, *g.Value); d != "" {
					return fmt.Sprintf("footer value of %q differs: %s", w.Key, d)
				}
			}
			return fmt.Sprintf("footer value of %q differs: %s vs %s (footers are kept verbatim: "+
				"chunks whose footer pairs differ cannot be merged)", w.Key, short(w.Value), short(g.Value))
		}
	}
	if len(want.KeyValues) != len(got.KeyValues) {
		return fmt.Sprintf("footer has %d key/value pairs vs %d (%s)", len(want.KeyValues), len(got.KeyValues),
			extraKey(want.KeyValues, got.KeyValues))
	}
	return "footers differ"
}

// PerFileDifferences compares the footer of a topic's chunk (got) with the topic's footer (want,
// its first chunk's): it returns the keys of the footer pairs whose values differ while the
// rest is equal — per-file pairs (a pandas index range, a GeoParquet bounding box, a writer's
// timestamp, an ARROW:schema whose schema-level metadata holds such a value), which the outputs
// take from want — or, as drift, a description of the first difference no output could keep
// (a schema element, the keys or their order, or ARROW:schema fields: names, types,
// nullability, field metadata). Both are empty when the footers are equal.
func PerFileDifferences(want, got *Footer) (keys []string, drift string) {
	if want.ID == got.ID {
		return nil, ""
	}
	if d := firstElementDifference(want.Elements, got.Elements); d != "" {
		return nil, d
	}
	for i := range min(len(want.KeyValues), len(got.KeyValues)) {
		if w, g := want.KeyValues[i], got.KeyValues[i]; w.Key != g.Key {
			return nil, fmt.Sprintf("footer key/value pair %d is %q vs %q", i, w.Key, g.Key)
		}
	}
	if len(want.KeyValues) != len(got.KeyValues) {
		return nil, fmt.Sprintf("footer has %d key/value pairs vs %d (%s)", len(want.KeyValues), len(got.KeyValues),
			extraKey(want.KeyValues, got.KeyValues))
	}
	for i, w := range want.KeyValues {
		g := got.KeyValues[i]
		if (w.Value == nil) != (g.Value == nil) {
			return nil, fmt.Sprintf("footer pair %q has a value in one chunk only", w.Key)
		}
		if w.Value == nil || *w.Value == *g.Value {
			continue
		}
		if w.Key == ArrowSchemaKey {
			a, errA := decodeArrowSchema(*w.Value)
			b, errB := decodeArrowSchema(*g.Value)
			if errA != nil || errB != nil {
				return nil, fmt.Sprintf("footer value of %q differs and cannot be decoded", w.Key)
			}
			if d := arrowDifference(withoutMetadata(a), withoutMetadata(b)); d != "" {
				return nil, fmt.Sprintf("footer value of %q differs: %s", w.Key, d)
			}
		}
		keys = append(keys, w.Key)
	}
	return keys, ""
}

// firstElementDifference describes the first schema element that differs. A root that differs
// only in its number of children (a column added or dropped) is described by the first column
// element that differs after it.
func firstElementDifference(want, got []SchemaElement) string {
	for i := range min(len(want), len(got)) {
		w, g := want[i], got[i]
		if w == g {
			continue
		}
		if i == 0 && len(want) != len(got) {
			for j := 1; j < min(len(want), len(got)); j++ {
				if want[j] != got[j] {
					return fmt.Sprintf("Parquet schema has %d elements vs %d, the first different one is element %d: %s vs %s",
						len(want), len(got), j, want[j].render(), got[j].render())
				}
			}
			return fmt.Sprintf("Parquet schema has %d elements vs %d (%s)", len(want), len(got), extraElement(want, got))
		}
		return fmt.Sprintf("Parquet schema element %d differs: %s vs %s", i, w.render(), g.render())
	}
	if len(want) != len(got) {
		return fmt.Sprintf("Parquet schema has %d elements vs %d (%s)", len(want), len(got), extraElement(want, got))
	}
	return ""
}

func (e SchemaElement) render() string { return fmt.Sprintf("%q%s", e.Name, e.Fields) }

func extraElement(a, b []SchemaElement) string {
	if len(a) > len(b) {
		return "first extra element " + a[len(b)].render()
	}
	return "first extra element " + b[len(a)].render()
}

func extraKey(a, b []KeyValue) string {
	if len(a) > len(b) {
		return fmt.Sprintf("first extra key %q", a[len(b)].Key)
	}
	return fmt.Sprintf("first extra key %q", b[len(a)].Key)
}

func short(v *string) string {
	if v == nil {
		return "no value"
	}
	s := *v
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)
}

// SpliceSchema returns the serialized file metadata meta with its "schema" list replaced by the
// one stored in from (verbatim bytes). The two must describe the same columns; the caller
// checks the result.
func SpliceSchema(meta []byte, from *Footer) ([]byte, error) {
	var out []byte
	found := false
	err := walkStruct(meta, func(id int16, typ thrift.TType, start, valueStart, end int, _ *fieldReader) error {
		if id == fmdSchema && typ == thrift.LIST {
			out = make([]byte, 0, len(meta)-(end-valueStart)+len(from.rawSchema))
			out = append(out, meta[:valueStart]...)
			out = append(out, from.rawSchema...)
			out = append(out, meta[end:]...)
			found = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, errors.New("written file metadata has no schema")
	}
	return out, nil
}

// fieldReader decodes thrift compact values; pos is the read offset in the buffer it was
// made for.
type fieldReader struct {
	buf   *thrift.TMemoryBuffer
	proto *thrift.TCompactProtocol
	total int
	ctx   context.Context
}

func newFieldReader(b []byte) *fieldReader {
	buf := &thrift.TMemoryBuffer{Buffer: bytes.NewBuffer(b)}
	return &fieldReader{buf: buf, total: len(b), ctx: context.Background(),
		proto: thrift.NewTCompactProtocolConf(buf, &thrift.TConfiguration{MaxMessageSize: maxFooterBytes})}
}

func (p *fieldReader) pos() int { return p.total - p.buf.Len() }

// walkStruct calls fn for every top-level field of the struct serialized in b with the offsets
// of the field's header, its value and its end.
func walkStruct(b []byte, fn func(id int16, typ thrift.TType, start, valueStart, end int, p *fieldReader) error) error {
	p := newFieldReader(b)
	if _, err := p.proto.ReadStructBegin(p.ctx); err != nil {
		return err
	}
	for {
		start := p.pos()
		_, typ, id, err := p.proto.ReadFieldBegin(p.ctx)
		if err != nil {
			return err
		}
		if typ == thrift.STOP {
			return nil
		}
		valueStart := p.pos()
		if err := p.proto.Skip(p.ctx, typ); err != nil {
			return err
		}
		if err := fn(id, typ, start, valueStart, p.pos(), p); err != nil {
			return err
		}
	}
}

// eachListStruct decodes a list of structs (schema elements), calling fn with each struct's
// canonical rendering and its field 4 (name).
func (*fieldReader) eachListStruct(b []byte, fn func(canonical, name string)) error {
	p := newFieldReader(b)
	et, n, err := p.proto.ReadListBegin(p.ctx)
	if err != nil {
		return err
	}
	if et != thrift.STRUCT {
		return fmt.Errorf("schema list of %s, struct expected", et)
	}
	for range n {
		var sb strings.Builder
		name, err := p.canonicalStruct(&sb, 0, 4)
		if err != nil {
			return err
		}
		fn(sb.String(), name)
	}
	return nil
}

// eachKeyValue decodes the list of KeyValue structs (1: key, 2: value).
func (*fieldReader) eachKeyValue(b []byte, fn func(KeyValue)) error {
	p := newFieldReader(b)
	et, n, err := p.proto.ReadListBegin(p.ctx)
	if err != nil {
		return err
	}
	if et != thrift.STRUCT {
		return fmt.Errorf("key/value list of %s, struct expected", et)
	}
	for range n {
		var kv KeyValue
		if _, err := p.proto.ReadStructBegin(p.ctx); err != nil {
			return err
		}
		for {
			_, typ, id, err := p.proto.ReadFieldBegin(p.ctx)
			if err != nil {
				return err
			}
			if typ == thrift.STOP {
				break
			}
			switch {
			case id == 1 && typ == thrift.STRING:
				if kv.Key, err = p.proto.ReadString(p.ctx); err != nil {
					return err
				}
			case id == 2 && typ == thrift.STRING:
				v, err := p.proto.ReadString(p.ctx)
				if err != nil {
					return err
				}
				kv.Value = &v
			default:
				if err := p.proto.Skip(p.ctx, typ); err != nil {
					return err
				}
			}
		}
		fn(kv)
	}
	return nil
}

// elementFields names the fields of a Parquet SchemaElement (parquet.thrift) in renderings.
var elementFields = map[int16]string{1: "type", 2: "type_length", 3: "repetition_type", 4: "name",
	5: "num_children", 6: "converted_type", 7: "scale", 8: "precision", 9: "field_id", 10: "logicalType"}

// maxThriftDepth bounds the nesting of structs decoded canonically (hostile footers).
const maxThriftDepth = 32

// canonicalStruct renders the struct at the reader's position as "id:value,…" with fields sorted
// by id, and returns the string value of field nameField (0 = none).
func (p *fieldReader) canonicalStruct(sb *strings.Builder, depth int, nameField int16) (string, error) {
	if depth > maxThriftDepth {
		return "", errors.New("thrift structs nested too deep")
	}
	if _, err := p.proto.ReadStructBegin(p.ctx); err != nil {
		return "", err
	}
	type field struct {
		id  int16
		val string
	}
	var fields []field
	name := ""
	for {
		_, typ, id, err := p.proto.ReadFieldBegin(p.ctx)
		if err != nil {
			return "", err
		}
		if typ == thrift.STOP {
			break
		}
		var vb strings.Builder
		if err := p.canonicalValue(&vb, typ, depth); err != nil {
			return "", err
		}
		if id == nameField && typ == thrift.STRING {
			name, _ = strconv.Unquote(vb.String())
		}
		fields = append(fields, field{id, vb.String()})
	}
	slices.SortStableFunc(fields, func(a, b field) int { return int(a.id) - int(b.id) })
	sb.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			sb.WriteByte(',')
		}
		if label, ok := elementFields[f.id]; ok && nameField == 4 {
			fmt.Fprintf(sb, "%s=%s", label, f.val)
		} else {
			fmt.Fprintf(sb, "%d:%s", f.id, f.val)
		}
	}
	sb.WriteByte('}')
	return name, nil
}

func (p *fieldReader) canonicalValue(sb *strings.Builder, typ thrift.TType, depth int) error {
	ctx := p.ctx
	switch typ {
	case thrift.BOOL:
		v, err := p.proto.ReadBool(ctx)
		fmt.Fprint(sb, v)
		return err
	case thrift.BYTE:
		v, err := p.proto.ReadByte(ctx)
		fmt.Fprint(sb, v)
		return err
	case thrift.I16:
		v, err := p.proto.ReadI16(ctx)
		fmt.Fprint(sb, v)
		return err
	case thrift.I32:
		v, err := p.proto.ReadI32(ctx)
		fmt.Fprint(sb, v)
		return err
	case thrift.I64:
		v, err := p.proto.ReadI64(ctx)
		fmt.Fprint(sb, v)
		return err
	case thrift.DOUBLE:
		v, err := p.proto.ReadDouble(ctx)
		sb.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		return err
	case thrift.STRING:
		v, err := p.proto.ReadString(ctx)
		sb.WriteString(strconv.Quote(v))
		return err
	case thrift.STRUCT:
		_, err := p.canonicalStruct(sb, depth+1, 0)
		return err
	case thrift.LIST, thrift.SET:
		et, n, err := p.proto.ReadListBegin(ctx)
		if err != nil {
			return err
		}
		sb.WriteByte('[')
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := p.canonicalValue(sb, et, depth+1); err != nil {
				return err
			}
		}
		sb.WriteByte(']')
		return nil
	case thrift.MAP:
		kt, vt, n, err := p.proto.ReadMapBegin(ctx)
		if err != nil {
			return err
		}
		sb.WriteByte('<')
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			if err := p.canonicalValue(sb, kt, depth+1); err != nil {
				return err
			}
			sb.WriteByte('=')
			if err := p.canonicalValue(sb, vt, depth+1); err != nil {
				return err
			}
		}
		sb.WriteByte('>')
		return nil
	}
	return fmt.Errorf("unknown thrift type %d", typ)
}
