package app

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/storeopt/storeopt/workflows"
)

// WriteDryRun writes the report of a dry run (StoreOptimizerInput.DryRun): the totals, then one
// line per topic with its policy, chunks and bytes to read, chunks and estimated bytes to write,
// rows and estimated seconds (and where the estimate comes from), or why nothing would be
// written. Bytes are object sizes. A result without a dry-run report is an error.
func WriteDryRun(w io.Writer, runID string, res workflows.StoreOptimizerResult) error {
	d := res.DryRun
	if d == nil {
		return fmt.Errorf("run %s: the result has no dry-run report (a worker older than --dry-run ran it?)", runID)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s (dry run: nothing was queued, leased, written or changed)\n", runID)
	fmt.Fprintf(tw, "topics\t%d to optimize, %d nothing to do, %d would fail, %d quarantined\n",
		d.Planned-d.NothingToDo-d.WouldFail, d.NothingToDo, d.WouldFail, res.Quarantined)
	fmt.Fprintf(tw, "read\t%d bytes in %d chunks (%d bytes of Arrow data), %d rows\n", d.InputBytes, d.InputChunks,
		d.InputArrowBytes, d.Rows)
	fmt.Fprintf(tw, "write\tabout %d bytes in %d chunks%s\n", d.OutputBytes, d.OutputChunks, keptText(d.PassThroughChunks))
	fmt.Fprintf(tw, "seconds\tabout %.1f (one topic at a time)\n", d.Seconds)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Topics) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "topic\tpolicy\tchunks\tbytes\t→ chunks\t≈ bytes\trows\t≈ seconds\testimate from")
	for _, tp := range d.Topics {
		switch {
		case tp.Error != "":
			fmt.Fprintf(tw, "%s\t%s\twould fail: %s\n", tp.Locator, tp.Policy, oneLine(tp.Error))
		case tp.NothingToDo:
			fmt.Fprintf(tw, "%s\t%s\tnothing to do\n", tp.Locator, tp.Policy)
		default:
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%s\n", tp.Locator, tp.Policy, tp.InputChunks, tp.InputBytes,
				tp.OutputChunks, tp.OutputBytes, tp.Rows, tp.Seconds, tp.Estimate)
		}
	}
	if more := d.Planned - len(d.Topics); more > 0 {
		fmt.Fprintf(tw, "…\t%d more topics not listed (counted above)\n", more)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeQuarantinedTopics(w, res)
}

// WriteJSON writes a run's result as indented JSON (the starter's --json).
func WriteJSON(w io.Writer, runID string, res workflows.StoreOptimizerResult) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Run string
		workflows.StoreOptimizerResult
	}{runID, res})
}

// keptText says how many output chunks are input chunks kept as they are, "" when none.
func keptText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them input chunks kept as they are)", n)
}
