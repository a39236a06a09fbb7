// Package chunkstats accumulates the catalog statistics of one chunk (row count, Arrow bytes,
// min/max timestamp_ns, per-column null counts and min/max) from the Arrow record batches that
// are written into it. The numbers are those of catalog.Chunk; every writer of chunks (ingestion
// simulator, merge) uses this package so that the same rows always give the same statistics,
// however they are sliced into batches.
package chunkstats

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/storeopt/storeopt/catalog"
)

// TimestampColumn is the name of the required timestamp column: Int64 nanoseconds since the Unix
// epoch, nullable.
const TimestampColumn = "timestamp_ns"

// Stats are the statistics of the rows added to an Accumulator.
type Stats struct {
	RowCount int64
	// ArrowSizeBytes is the logical Arrow size of the rows in bytes (see ArrowSizeBits).
	ArrowSizeBytes int64
	// TimestampNullCount is the number of rows whose timestamp_ns is null.
	TimestampNullCount int64
	// MinTimestampNs and MaxTimestampNs are nil when no row has a non-null timestamp_ns.
	MinTimestampNs, MaxTimestampNs *int64
	// Columns holds the statistics of every top-level field, keyed by field name.
	Columns map[string]catalog.ColumnStats
}

// Accumulator collects the statistics of the record batches of one chunk. It is not safe for
// concurrent use. The zero value is not usable: use NewAccumulator.
type Accumulator struct {
	schema    *arrow.Schema
	tsIndex   int
	rows      int64
	sizeBits  int64
	timestamp *numberColumn[int64] // the timestamp column's null count and min/max
	columns   []columnAccumulator
	maxValue  []int64 // MaxValueBits of each column over the batches added
	err       error
}

// NewAccumulator returns an Accumulator for batches of the given schema. It returns an error if
// the schema has no top-level field "timestamp_ns" of type Int64.
func NewAccumulator(schema *arrow.Schema) (*Accumulator, error) {
	if schema == nil {
		return nil, fmt.Errorf("no schema: no column %q (type int64 required)", TimestampColumn)
	}
	idx := schema.FieldIndices(TimestampColumn)
	if len(idx) == 0 {
		return nil, fmt.Errorf("no column %q (type int64 required)", TimestampColumn)
	}
	if t := schema.Field(idx[0]).Type; t.ID() != arrow.INT64 {
		return nil, fmt.Errorf("column %q has type %s, int64 required", TimestampColumn, t)
	}
	a := &Accumulator{schema: schema, tsIndex: idx[0], timestamp: newNumber(int64Values, false, toInt64[int64])}
	for _, f := range schema.Fields() {
		a.columns = append(a.columns, newColumnAccumulator(f.Type))
	}
	a.maxValue = make([]int64, len(a.columns))
	return a, nil
}

// Add adds the rows of rec. rec must have the accumulator's schema (same field names and types,
// metadata aside); a batch that does not is skipped and reported by Err. rec is not retained.
func (a *Accumulator) Add(rec arrow.RecordBatch) {
	if rec == nil {
		return
	}
	if err := a.checkSchema(rec.Schema()); err != nil {
		if a.err == nil {
			a.err = err
		}
		return
	}
	a.rows += rec.NumRows()
	for i, col := range rec.Columns() {
		a.sizeBits += ArrowSizeBits(col)
		a.columns[i].add(col)
		a.maxValue[i] = max(a.maxValue[i], MaxValueBits(col))
	}
	a.timestamp.add(rec.Column(a.tsIndex))
}

func (a *Accumulator) checkSchema(s *arrow.Schema) error {
	if s.NumFields() != a.schema.NumFields() {
		return fmt.Errorf("record batch has %d columns, schema has %d", s.NumFields(), a.schema.NumFields())
	}
	for i, f := range s.Fields() {
		want := a.schema.Field(i)
		if f.Name != want.Name || !arrow.TypeEqual(f.Type, want.Type) {
			return fmt.Errorf("record batch column %d is %q %s, schema has %q %s", i, f.Name, f.Type, want.Name, want.Type)
		}
	}
	return nil
}

// Err returns the first error met by Add (a batch whose schema differs from the accumulator's),
// or nil. Rows of such batches are not counted.
func (a *Accumulator) Err() error { return a.err }

// Result returns the statistics of all rows added so far. It may be called more than once.
func (a *Accumulator) Result() Stats {
	s := Stats{
		RowCount:           a.rows,
		ArrowSizeBytes:     (a.sizeBits + 7) / 8,
		TimestampNullCount: a.timestamp.nulls,
		Columns:            make(map[string]catalog.ColumnStats, len(a.columns)),
	}
	if a.timestamp.has {
		lo, hi := a.timestamp.min, a.timestamp.max
		s.MinTimestampNs, s.MaxTimestampNs = &lo, &hi
	}
	for i, f := range a.schema.Fields() {
		cs := a.columns[i].stats()
		if a.rows > 0 {
			cs.MaxValueBytes = max((a.maxValue[i]+7)/8, 1)
		}
		s.Columns[f.Name] = cs
	}
	return s
}

// MaxRowBytes bounds the Arrow size of the largest row of a chunk from its column statistics:
// the sum of every column's MaxValueBytes (a row holds at most each column's largest value). It
// returns 0 when a column's bound was not recorded (a chunk of a writer that does not record it).
func MaxRowBytes(columns map[string]catalog.ColumnStats) int64 {
	var sum int64
	for _, c := range columns {
		if c.MaxValueBytes <= 0 {
			return 0
		}
		sum += c.MaxValueBytes
	}
	return sum
}
