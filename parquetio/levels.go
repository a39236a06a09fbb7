package parquetio

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// leafPath is the chain of fields of pqarrow's schema manifest from a top-level field down to
// one Parquet leaf column: the manifest maps every Parquet node to the Arrow field pqarrow reads
// it as, with the definition and repetition levels of that node, so levels computed along it
// are those of the Parquet schema the chunk was read from.
type leafPath struct {
	fields []*pqarrow.SchemaField // fields[0] is top-level, the last one the leaf
	child  []int                  // child[d]: index of fields[d+1] among fields[d]'s children
	name   string                 // dotted path, for errors
}

// leafPaths returns the paths of every leaf under top-level field f, in leaf column order.
func leafPaths(f *pqarrow.SchemaField) []leafPath {
	var out []leafPath
	var walk func(fields []*pqarrow.SchemaField, child []int)
	walk = func(fields []*pqarrow.SchemaField, child []int) {
		last := fields[len(fields)-1]
		if last.IsLeaf() {
			names := ""
			for i, sf := range fields {
				if i > 0 {
					names += "."
				}
				names += sf.Field.Name
			}
			out = append(out, leafPath{fields: append([]*pqarrow.SchemaField(nil), fields...),
				child: append([]int(nil), child...), name: names})
			return
		}
		for i := range last.Children {
			walk(append(fields, &last.Children[i]), append(child, i))
		}
	}
	walk([]*pqarrow.SchemaField{f}, nil)
	return out
}

// leafLevels is one leaf's share of one column of a batch: its definition and repetition levels
// (nil where the column has none) and the leaf values they refer to.
type leafLevels struct {
	def, rep []int16
	values   arrow.Array // released by the caller
	nullable bool
}

// shredder computes leaf levels, reusing its level buffers between calls. Not safe for
// concurrent use.
type shredder struct {
	mem      memory.Allocator
	def, rep []int16
	slots    []int64
}

// shred returns the levels and values of leaf path p for column col (a top-level array of the
// field p.fields[0]). The result's level slices are valid until the next call.
func (s *shredder) shred(ctx context.Context, p *leafPath, col arrow.Array) (leafLevels, error) {
	leaf := p.fields[len(p.fields)-1]
	out := leafLevels{nullable: leaf.Field.Nullable}
	if len(p.fields) == 1 {
		return s.flat(col, leaf, out)
	}
	s.def, s.rep, s.slots = s.def[:0], s.rep[:0], s.slots[:0]
	leafArr := descend(p, col)
	if leafArr == nil {
		return out, fmt.Errorf("column %q: array of type %s does not match the Parquet schema", p.name, col.DataType())
	}
	rad := leaf.LevelInfo.RepeatedAncestorDefLevel
	emit := func(rep, def int16, slot int64) {
		s.def = append(s.def, def)
		s.rep = append(s.rep, rep)
		if def >= rad {
			s.slots = append(s.slots, slot)
		}
	}
	var walk func(d int, arr arrow.Array, i int64, rep, def int16) error
	walk = func(d int, arr arrow.Array, i int64, rep, def int16) error {
		sf := p.fields[d]
		arr = storage(arr)
		if arr.IsNull(int(i)) {
			if !sf.Field.Nullable {
				return fmt.Errorf("column %q: null in required field %q", p.name, sf.Field.Name)
			}
			emit(rep, def, i)
			return nil
		}
		if sf.Field.Nullable {
			def++
		}
		if d == len(p.fields)-1 {
			if def != sf.LevelInfo.DefLevel {
				return fmt.Errorf("column %q: definition level %d, Parquet schema has %d", p.name, def, sf.LevelInfo.DefLevel)
			}
			emit(rep, def, i)
			return nil
		}
		switch a := arr.(type) {
		case *array.Struct:
			return walk(d+1, a.Field(p.child[d]), i, rep, def)
		case array.ListLike:
			start, end := a.ValueOffsets(int(i))
			if start == end {
				emit(rep, def, 0) // present but empty: below every slot of the leaf
				return nil
			}
			values := a.ListValues()
			for k := start; k < end; k++ {
				r := rep
				if k > start {
					r = sf.LevelInfo.RepLevel
				}
				if err := walk(d+1, values, k, r, def+1); err != nil {
					return err
				}
			}
			return nil
		}
		return fmt.Errorf("column %q: cannot write Arrow type %s of field %q as a nested Parquet group", p.name, arr.DataType(), sf.Field.Name)
	}
	for i := range int64(col.Len()) {
		if err := walk(0, col, i, 0, 0); err != nil {
			return out, err
		}
	}
	out.def, out.rep = s.def, s.rep
	values, err := s.takeSlots(ctx, leafArr)
	if err != nil {
		return out, fmt.Errorf("column %q: %w", p.name, err)
	}
	out.values = values
	return out, nil
}

// flat handles a top-level primitive column: no repetition levels, definition levels from the
// validity bitmap when the column is optional.
func (s *shredder) flat(col arrow.Array, leaf *pqarrow.SchemaField, out leafLevels) (leafLevels, error) {
	col.Retain()
	out.values = col
	if !leaf.Field.Nullable {
		if col.NullN() > 0 {
			col.Release()
			return out, fmt.Errorf("column %q: %d nulls in a required column", leaf.Field.Name, col.NullN())
		}
		return out, nil
	}
	n := col.Len()
	if cap(s.def) < n {
		s.def = make([]int16, n)
	}
	s.def = s.def[:n]
	if col.NullN() == 0 {
		for i := range s.def {
			s.def[i] = 1
		}
	} else {
		for i := range s.def {
			if col.IsValid(i) {
				s.def[i] = 1
			} else {
				s.def[i] = 0
			}
		}
	}
	out.def = s.def
	return out, nil
}

// takeSlots returns the leaf values at s.slots: a slice when they are consecutive (the usual
// case), else a gathered copy (fixed-size lists and lists that are null but own values).
func (s *shredder) takeSlots(ctx context.Context, leafArr arrow.Array) (arrow.Array, error) {
	n := len(s.slots)
	if n == 0 {
		return array.NewSlice(leafArr, 0, 0), nil
	}
	first := s.slots[0]
	consecutive := true
	for j, v := range s.slots {
		if v != first+int64(j) {
			consecutive = false
			break
		}
	}
	if consecutive {
		return array.NewSlice(leafArr, first, first+int64(n)), nil
	}
	b := array.NewInt64Builder(s.mem)
	b.AppendValues(s.slots, nil)
	idx := b.NewInt64Array()
	b.Release()
	defer idx.Release()
	return compute.TakeArray(compute.WithAllocator(ctx, s.mem), leafArr, idx)
}

// storage unwraps extension arrays to their storage.
func storage(arr arrow.Array) arrow.Array {
	for {
		ext, ok := arr.(array.ExtensionArray)
		if !ok {
			return arr
		}
		arr = ext.Storage()
	}
}

// descend returns the array of p's leaf reached from col (struct fields, list values), whose
// indexes the slots of shred refer to, or nil when col's shape does not match p.
func descend(p *leafPath, col arrow.Array) arrow.Array {
	arr := col
	for d := 0; d < len(p.fields)-1; d++ {
		switch a := storage(arr).(type) {
		case *array.Struct:
			if p.child[d] >= a.NumField() {
				return nil
			}
			arr = a.Field(p.child[d])
		case array.ListLike:
			arr = a.ListValues()
		default:
			return nil
		}
	}
	return arr
}

// leafType is the Arrow type the leaf column's values are read in.
func (p *leafPath) leafType() arrow.DataType { return p.fields[len(p.fields)-1].Field.Type }
