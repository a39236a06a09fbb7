package plan

// PassThrough says whether output o of a merge plan is one of its input chunks as it stands,
// which the writer may keep instead of rewriting (docs/design.md#the-pass-through-path): o holds
// exactly one input, that input is a whole chunk stored in key order with every row within o's
// range, no larger than the plan's size limit, with row groups within the plan's bounds (rows and
// uncompressed bytes: the bounds a rewrite would cut its row groups at, so that a later pass reads
// it within the same memory pool), and each row group with a page index or small enough to be
// fetched whole by a window read (Input.WindowReadable). What the footer cannot tell (every page
// within the rows a window read fetches) the writer checks before it keeps the chunk. Inputs of plans made before row group rows and page indexes were recorded never pass.
func (p *Plan) PassThrough(o Output) bool {
	if p.EffectiveKind() != KindMerge || len(o.Inputs) != 1 {
		return false
	}
	in := p.Inputs[o.Inputs[0]]
	_, rowGroupBytes := p.Limits()
	return in.Rows > 0 && in.RowGroups == nil && in.Sorted && len(in.Unsorted) == 0 &&
		InRange(in.First, o.Lo, o.Hi) && InRange(in.Last, o.Lo, o.Hi) &&
		in.SizeBytes <= p.MaxChunkSizeBytes && in.WindowReadable &&
		in.MaxRowGroupRows > 0 && in.MaxRowGroupRows <= p.RowGroupRows &&
		in.MaxRowGroupBytes > 0 && in.MaxRowGroupBytes <= rowGroupBytes
}
