package policy

// full is mosaicod's store optimization (the default): a finalized topic is rewritten whole into
// one sorted run of L1 chunks.
type full struct{}

func (full) Name() Policy        { return Full }
func (full) Summary() string     { return "finalized topics rewritten whole" }
func (full) Resolved() bool      { return true }
func (full) ReplaceAll() bool    { return true }
func (full) OutputLevel() Level  { return L1 }
func (full) FinalizedOnly() bool { return true }

// AlreadyDone keeps Full's first rule: a topic still queued (by hand too) is optimized again,
// whatever the trigger says.
func (full) AlreadyDone(_, queued, optimized bool) bool { return !queued && optimized }

// Trigger: finalized, and never optimized or with L0 chunks.
func (full) Trigger(f TriggerSQL) string {
	return `(` + f.Finalized + ` AND (` + f.Unoptimized + ` OR ` + f.AnyL0 + `))`
}

func (full) Applies(TriggerSQL) string { return literal(Full) }

func (full) Select(chunks []ChunkFacts, opts SelectOptions) (Selection, error) {
	return selectFull(chunks, opts), nil
}

// selectFull reads every chunk: the topic is rewritten whole into one sorted run.
func selectFull(chunks []ChunkFacts, _ SelectOptions) Selection {
	s := Selection{Kind: KindMerge, L1FirstKept: -1}
	for i := range chunks {
		s.Inputs = append(s.Inputs, i)
	}
	return s
}
