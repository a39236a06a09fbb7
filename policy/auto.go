package policy

import "fmt"

// auto is a rule for choosing a policy per topic: tiered while a topic is live and its L0 bytes
// are below the target chunk size; leveled once they reach it or the topic is finalized
// (finalization triggers the last merge into the sorted run). It has no selection or commit of
// its own: the catalog resolves it (Applies) before a compaction plans.
type auto struct{}

func (auto) Name() Policy { return Auto }
func (auto) Summary() string {
	return "tiered while live, leveled once the L0 bytes reach --max-chunk-size or the topic is finalized"
}
func (auto) Resolved() bool      { return false }
func (auto) ReplaceAll() bool    { return false }
func (auto) OutputLevel() Level  { return L1 }
func (auto) FinalizedOnly() bool { return false }

func (auto) AlreadyDone(needs, _, _ bool) bool { return !needs }

// Trigger: a finalized topic with at least one L0 chunk, or a live topic that needs Leveled once
// its L0 bytes reach MaxChunkSizeBytes and Tiered before.
func (auto) Trigger(f TriggerSQL) string {
	leveledLive := `(` + f.L0Count + ` >= ` + f.MinChunks + ` AND ` + f.L0Bytes + ` >= ` + f.MaxSize + `)`
	return `((` + f.Finalized + ` AND ` + f.L0Count + ` >= 1) OR (NOT ` + f.Finalized + ` AND (` +
		leveledLive + ` OR ` + tiered{}.Trigger(f) + `)))`
}

// Applies: Leveled for finalized topics and live topics whose L0 bytes reach the maximum chunk
// size, Tiered otherwise.
func (auto) Applies(f TriggerSQL) string {
	return `CASE WHEN ` + f.Finalized + ` OR ` + f.L0Bytes + ` >= ` + f.MaxSize + ` THEN ` + literal(Leveled) +
		` ELSE ` + literal(Tiered) + ` END`
}

func (auto) Select([]ChunkFacts, SelectOptions) (Selection, error) {
	return Selection{}, fmt.Errorf("no selection for policy %q (auto must be resolved first)", Auto)
}
