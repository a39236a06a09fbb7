package verify

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Positions is an order-independent digest of a multiset of stored row positions of one input
// chunk (0-based row indexes in the chunk as stored): their number and the sum, modulo 2^64, of a
// 64-bit hash of (chunk ID, position). A position taken twice and another never taken change the
// sum with probability 1 - 2^-64, although the number stays the same.
type Positions struct {
	Rows int64
	Sum  uint64
}

// AllPositions returns the Positions of rows 0..rows-1 of the chunk chunkID: what the outputs of
// an optimization must take from it in all. O(rows).
func AllPositions(chunkID, rows int64) Positions {
	p := NewChunkPositions(chunkID)
	p.AddRange(0, rows)
	return p.Positions
}

// ChunkPositions accumulates the Positions of rows taken from one input chunk.
type ChunkPositions struct {
	ChunkID int64
	Positions
	seed uint64
}

// NewChunkPositions returns an empty accumulator for the chunk chunkID (the catalog's chunk ID,
// which salts every position's hash, so that rows of two chunks never stand for each other).
func NewChunkPositions(chunkID int64) ChunkPositions {
	return ChunkPositions{ChunkID: chunkID, seed: mix(uint64(chunkID) ^ 0x2545f4914f6cdd1d)}
}

// golden is an odd constant: position*golden is a bijection, and so is mix.
const golden = 0x9e3779b97f4a7c15

// AddRange adds the stored positions first..first+n-1 (a run of a chunk stored in key order).
func (p *ChunkPositions) AddRange(first, n int64) {
	if n <= 0 {
		return
	}
	x := p.seed + uint64(first)*golden
	var sum uint64
	for range n {
		sum += mix(x)
		x += golden
	}
	p.Rows += n
	p.Sum += sum
}

// AddRows adds the stored positions rows (a run of a chunk sorted in memory).
func (p *ChunkPositions) AddRows(rows []int64) {
	var sum uint64
	for _, r := range rows {
		sum += mix(p.seed + uint64(r)*golden)
	}
	p.Rows += int64(len(rows))
	p.Sum += sum
}

// Taken records which stored rows one output chunk took from each input chunk it read: the
// Positions of those rows by input chunk ID. It is accumulated where runs of rows are emitted to
// the output (package merge), from the rows' stored positions, so it does not depend on the key
// ranges that decided which output a row goes to: Commit adds the Taken of every output and
// checks that the rows 0..n-1 of each input chunk it replaces were taken exactly once (Check).
type Taken map[int64]Positions

// Add adds the positions p accumulated to t.
func (t Taken) Add(p ChunkPositions) {
	if p.Rows == 0 {
		return
	}
	cur := t[p.ChunkID]
	cur.Rows += p.Rows
	cur.Sum += p.Sum
	t[p.ChunkID] = cur
}

// Rows returns the number of rows taken from all input chunks.
func (t Taken) Rows() int64 {
	var n int64
	for _, p := range t {
		n += p.Rows
	}
	return n
}

// takenEntryBytes is the encoded size of one input chunk's entry: chunk ID, rows, sum.
const takenEntryBytes = 24

// MarshalBinary encodes t in 24 bytes per input chunk (chunk ID, rows, sum; big-endian), in
// ascending chunk ID order, so that equal Taken encode to equal bytes.
func (t Taken) MarshalBinary() []byte {
	ids := make([]int64, 0, len(t))
	for id := range t {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := make([]byte, 0, takenEntryBytes*len(ids))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint64(b, uint64(t[id].Rows))
		b = binary.BigEndian.AppendUint64(b, t[id].Sum)
	}
	return b
}

// UnmarshalTaken decodes bytes written by MarshalBinary. An error says the bytes are not such
// an encoding (wrong length, a chunk listed twice, a negative row count).
func UnmarshalTaken(b []byte) (Taken, error) {
	if len(b)%takenEntryBytes != 0 {
		return nil, fmt.Errorf("taken rows record has %d bytes, not a multiple of %d", len(b), takenEntryBytes)
	}
	t := make(Taken, len(b)/takenEntryBytes)
	for ; len(b) > 0; b = b[takenEntryBytes:] {
		id := int64(binary.BigEndian.Uint64(b))
		p := Positions{Rows: int64(binary.BigEndian.Uint64(b[8:])), Sum: binary.BigEndian.Uint64(b[16:])}
		if _, dup := t[id]; dup || p.Rows < 0 {
			return nil, fmt.Errorf("taken rows record lists chunk ID %d twice or with a negative row count", id)
		}
		t[id] = p
	}
	return t, nil
}

// InputChunk is one input chunk the optimization replaces, as Check sees it.
type InputChunk struct {
	ID   int64  // catalog chunk ID
	Key  string // object key, for messages
	Rows int64  // rows the chunk holds (the catalog's row count, checked against its footer by read-sort)
}

// maxNamedInputs bounds the input chunks one mismatch message names.
const maxNamedInputs = 4

// checkTaken checks that the outputs together took every row 0..n-1 of every input chunk exactly
// once and nothing else: per input chunk, the sum of rows taken equals its row count and the sum
// of position digests equals AllPositions. O(rows of the inputs). Returns a *MismatchError that
// names up to maxNamedInputs input chunks by object key with the rows they hold and the rows
// taken.
func checkTaken(inputs []InputChunk, outs []OutputFacts) error {
	sum := Taken{}
	planned := make(map[int64]bool, len(inputs))
	for _, in := range inputs {
		planned[in.ID] = true
	}
	for _, o := range outs {
		for id, p := range o.Taken {
			if !planned[id] {
				return mismatch("output chunk %d took %d rows of chunk ID %d, which the optimization does not replace", o.Ordinal, p.Rows, id)
			}
			cur := sum[id]
			cur.Rows += p.Rows
			cur.Sum += p.Sum
			sum[id] = cur
		}
	}
	var bad []string
	for _, in := range inputs {
		got := sum[in.ID]
		var what string
		switch {
		case got.Rows != in.Rows:
			what = fmt.Sprintf("input chunk %s: %d rows taken by the output chunks, %d in the chunk", in.Key, got.Rows, in.Rows)
		case got.Sum != AllPositions(in.ID, in.Rows).Sum:
			what = fmt.Sprintf("input chunk %s: %d rows taken by the output chunks, as many as the chunk holds, "+
				"but not each of its rows 0..%d exactly once (a row taken twice, another by no output)", in.Key, got.Rows, in.Rows-1)
		default:
			continue
		}
		bad = append(bad, what)
	}
	switch {
	case len(bad) == 0:
		return nil
	case len(bad) > maxNamedInputs:
		bad = append(bad[:maxNamedInputs], fmt.Sprintf("and %d more input chunks", len(bad)-maxNamedInputs))
	}
	return mismatch("%s", strings.Join(bad, "; "))
}
