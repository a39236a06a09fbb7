package policy

import "fmt"

// auto is the rule a schedule runs: every topic is kept as one sorted run by leveled
// compactions, a live topic once it has MinChunks L0 chunks, a finalized one at any L0 chunk
// (finalization triggers the last merge into the sorted run). A live topic's leveled compaction
// merges its run's last chunk only while that is cheap (mergesLastChunk), so the bytes a run
// writes stay proportional to the new data and a topic's L0 chunks stay bounded under sustained
// ingestion (docs/levels.md#policies). It has no selection or commit of its own: the catalog
// resolves it (Applies) before a compaction plans.
//
// Until the fleet bench it chose tiered while a live topic's L0 bytes were below the target
// chunk size: tiered outputs are never joined again, so a live topic gained one L0 chunk per
// run, and each byte was written twice (tiered, then leveled).
type auto struct{}

func (auto) Name() Policy { return Auto }
func (auto) Summary() string {
	return "leveled: a live topic at --min-chunks L0 chunks, a finalized one at any"
}
func (auto) Resolved() bool      { return false }
func (auto) ReplaceAll() bool    { return false }
func (auto) OutputLevel() Level  { return L1 }
func (auto) FinalizedOnly() bool { return false }

func (auto) AlreadyDone(needs, _, _ bool) bool { return !needs }

// Trigger: a finalized topic with at least one L0 chunk, or a live topic with at least MinChunks.
func (auto) Trigger(f TriggerSQL) string {
	return `((` + f.Finalized + ` AND ` + f.L0Count + ` >= 1) OR (NOT ` + f.Finalized + ` AND ` +
		f.L0Count + ` >= ` + f.MinChunks + `))`
}

// Applies: Leveled.
func (auto) Applies(TriggerSQL) string { return literal(Leveled) }

func (auto) Select([]ChunkFacts, SelectOptions) (Selection, error) {
	return Selection{}, fmt.Errorf("no selection for policy %q (auto must be resolved first)", Auto)
}
