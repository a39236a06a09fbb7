package main

import (
	"fmt"

	"github.com/storeopt/storeopt/activities"
	"github.com/storeopt/storeopt/catalog"
)

// Write paths of an output chunk (compaction.OutputResult.Copied, PassedThrough).
const (
	pathRewrite = "rewrite"      // every row decoded, merged, encoded and read back
	pathCopy    = "copy"         // assembled from its inputs' pages, copyable columns copied as stored
	pathPass    = "pass-through" // its one input chunk kept: copied whole by the store
	pathMixed   = "mixed"        // the job's output chunks took more than one path
)

// pathBytes says how much of a storeopt job's output took each write path: output chunks and
// their Arrow bytes (the rows' uncompressed size, the catalog's ArrowSizeBytes). The copy and
// pass-through paths' figures are the WriteChunks results' CopiedChunks and CopiedArrowBytes,
// PassedChunks and PassedArrowBytes, summed over the groups; every other committed output chunk
// took the rewrite path.
type pathBytes struct {
	RewriteChunks     int   `json:"rewrite_chunks"`
	RewriteArrowBytes int64 `json:"rewrite_arrow_bytes"`
	CopyChunks        int   `json:"copy_chunks"`
	CopyArrowBytes    int64 `json:"copy_arrow_bytes"`
	PassChunks        int   `json:"pass_chunks"`
	PassArrowBytes    int64 `json:"pass_arrow_bytes"`
}

// pathsOf splits the committed output chunks of a storeopt job by write path, from the results
// of its WriteChunks calls (one per group). The chunks the calls wrote must be the committed
// ones: a count that differs (an output staged by an earlier attempt, which the bench never
// makes) would make the split wrong, so it is an error.
func pathsOf(written []activities.WriteChunksResult, outputs []catalog.Chunk) (pathBytes, error) {
	var p pathBytes
	chunks := 0
	var arrow int64
	for _, w := range written {
		chunks += w.Chunks
		p.CopyChunks += w.CopiedChunks
		p.CopyArrowBytes += w.CopiedArrowBytes
		p.PassChunks += w.PassedChunks
		p.PassArrowBytes += w.PassedArrowBytes
	}
	for _, c := range outputs {
		arrow += c.ArrowSizeBytes
	}
	if chunks != len(outputs) {
		return p, fmt.Errorf("WriteChunks wrote %d output chunks, the catalog lists %d after the commit", chunks, len(outputs))
	}
	if p.CopyChunks+p.PassChunks > chunks || p.CopyArrowBytes+p.PassArrowBytes > arrow {
		return p, fmt.Errorf("WriteChunks copied %d and kept %d output chunks of %d Arrow bytes, more than the %d committed (%d Arrow bytes)",
			p.CopyChunks, p.PassChunks, p.CopyArrowBytes+p.PassArrowBytes, chunks, arrow)
	}
	p.RewriteChunks = chunks - p.CopyChunks - p.PassChunks
	p.RewriteArrowBytes = arrow - p.CopyArrowBytes - p.PassArrowBytes
	return p, nil
}

// path names the write path the job's bytes took: pathRewrite, pathCopy or pathPass when all
// took one, pathMixed when several had some, "" when there were no output bytes. It says which
// path a job's cpu s/GB is the cost of.
func (p pathBytes) path() string {
	took := ""
	for _, b := range []struct {
		path  string
		bytes int64
	}{{pathRewrite, p.RewriteArrowBytes}, {pathCopy, p.CopyArrowBytes}, {pathPass, p.PassArrowBytes}} {
		switch {
		case b.bytes == 0:
		case took == "":
			took = b.path
		default:
			return pathMixed
		}
	}
	return took
}

// String describes the split for the log and the table's notes, e.g.
// "rewrite 1 chunk (50.8 MB Arrow), copy 0 chunks (0.0 MB), pass-through 0 chunks (0.0 MB)".
func (p pathBytes) String() string {
	plural := func(n int) string {
		if n == 1 {
			return "chunk"
		}
		return "chunks"
	}
	return fmt.Sprintf("rewrite %d %s (%.1f MB Arrow), copy %d %s (%.1f MB), pass-through %d %s (%.1f MB)",
		p.RewriteChunks, plural(p.RewriteChunks), float64(p.RewriteArrowBytes)/1e6,
		p.CopyChunks, plural(p.CopyChunks), float64(p.CopyArrowBytes)/1e6,
		p.PassChunks, plural(p.PassChunks), float64(p.PassArrowBytes)/1e6)
}
