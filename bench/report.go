package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"
)

// median returns the median of f over runs (the mean of the two middle values for an even
// count); 0 for no runs.
func median(runs []measurement, f func(measurement) float64) float64 {
	if len(runs) == 0 {
		return 0
	}
	v := make([]float64, len(runs))
	for i, m := range runs {
		v[i] = f(m)
	}
	return medianOf(v)
}

// medianOf returns the median of v (the mean of the two middle values for an even count),
// sorting v; 0 for none.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ratiosOf computes the ratios of one dataset from its job reports (nil where a job is missing).
func ratiosOf(d *dataset, reports []jobReport) ratioReport {
	by := map[string]jobReport{}
	for _, r := range reports {
		by[r.Job] = r
	}
	rr := ratioReport{Type: "ratios", Dataset: d.Name, Shape: d.Params.Shape}
	so, okS := by[jobStoreopt]
	if !okS {
		return rr
	}
	ratio := func(a, b float64) *float64 {
		if b <= 0 {
			return nil
		}
		x := a / b
		return &x
	}
	if dk, ok := by[jobDuckDB]; ok {
		rr.SecondsStoreoptOverDuckDB = ratio(so.Seconds, dk.Seconds)
		rr.PeakRSSStoreoptOverDuckDB = ratio(float64(so.PeakRSSBytes), float64(dk.PeakRSSBytes))
		rr.CPUStoreoptOverDuckDB = ratio(so.CPUSeconds, dk.CPUSeconds)
	}
	if rd, ok := by[jobRead]; ok {
		rr.SecondsStoreoptOverRead = ratio(so.Seconds, rd.Seconds)
		rr.CPUStoreoptOverRead = ratio(so.CPUSeconds, rd.CPUSeconds)
	}
	return rr
}

func printJSON(reports []jobReport, ratios []ratioReport) error {
	enc := json.NewEncoder(os.Stdout)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	for _, r := range ratios {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func boolCell(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "yes"
	default:
		return "NO"
	}
}

// pathCost says whose cost a job's cpu s/GB is, given the path its bytes took.
func pathCost(path string) string {
	switch path {
	case pathRewrite, pathCopy, pathPass:
		return "the " + path + " path's"
	case pathMixed:
		return "that of the paths together"
	default:
		return "that of no output"
	}
}

// mibCell renders bytes in MiB, "-" when unknown (0).
func mibCell(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(n)/(1<<20))
}

// rssSplit renders a peak's anonymous and file-backed parts (" (anon A MiB, file F MiB)"), "" when
// unknown.
func rssSplit(anon, file int64) string {
	if anon <= 0 && file <= 0 {
		return ""
	}
	return fmt.Sprintf(" (anon %s MiB, file %s MiB)", mibCell(anon), mibCell(file))
}

func ratioCell(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *x)
}

// printTable prints the job table (medians), the problems found and the ratios per dataset.
func printTable(w io.Writer, reports []jobReport, ratios []ratioReport, pool int64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "job\tshape\tinput MB\toutput MB\trows\tseconds\tcpu s\trewrite GB\tcopy GB\tpass GB\tpath\tcpu s/GB\tpeak RSS MiB\tanon MiB\tfile MiB\tout chunks\tsorted\tmetadata\t")
	for _, r := range reports {
		rows := fmt.Sprint(r.Rows)
		if !r.RowsMatch {
			rows += " (≠ input!)"
		}
		outMB, outChunks := "-", "-"
		if r.Job != jobRead {
			outMB, outChunks = fmt.Sprintf("%.1f", float64(r.OutputBytes)/1e6), fmt.Sprint(r.OutputChunks)
		}
		rewriteGB, copyGB, passGB, path := "-", "-", "-", "-"
		if p := r.Paths; p != nil {
			gb := func(n int64) string { return fmt.Sprintf("%.3f", float64(n)/1e9) }
			rewriteGB, copyGB, passGB = gb(p.RewriteArrowBytes), gb(p.CopyArrowBytes), gb(p.PassArrowBytes)
			path = firstNonEmpty(r.Path, "-")
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", r.Job, r.Shape,
			float64(r.InputBytes)/1e6, outMB, rows, r.Seconds, r.CPUSeconds, rewriteGB, copyGB, passGB, path,
			ratioCell(r.CPUSecondsPerArrowGB), float64(r.PeakRSSBytes)/(1<<20), mibCell(r.PeakAnonBytes), mibCell(r.PeakFileBytes),
			outChunks, boolCell(r.Sorted), boolCell(r.MetadataPreserved))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range reports {
		if r.SortProblem != "" {
			fmt.Fprintf(w, "%s %s: not sorted: %s\n", r.Job, r.Shape, r.SortProblem)
		}
		if r.MetadataProblem != "" {
			fmt.Fprintf(w, "%s %s: metadata not preserved: %s\n", r.Job, r.Shape, r.MetadataProblem)
		}
		if r.Paths != nil {
			fmt.Fprintf(w, "%s %s: output by path: %s; cpu s/GB is %s\n", r.Job, r.Shape, r.Paths, pathCost(r.Path))
		}
		if len(r.Phases) > 0 {
			names := make([]string, 0, len(r.Phases))
			for n := range r.Phases {
				names = append(names, n)
			}
			sort.Strings(names)
			fmt.Fprintf(w, "%s %s: phases (median s):", r.Job, r.Shape)
			for _, n := range names {
				fmt.Fprintf(w, " %s %.2f", n, r.Phases[n])
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	for _, rr := range ratios {
		fmt.Fprintf(w, "%s (%s): storeopt/duckdb seconds %s, cpu s %s, peak RSS %s; storeopt/read seconds %s, cpu s %s\n", rr.Shape, rr.Dataset,
			ratioCell(rr.SecondsStoreoptOverDuckDB), ratioCell(rr.CPUStoreoptOverDuckDB), ratioCell(rr.PeakRSSStoreoptOverDuckDB),
			ratioCell(rr.SecondsStoreoptOverRead), ratioCell(rr.CPUStoreoptOverRead))
	}
	if pool > 0 {
		for _, r := range reports {
			if r.Job == jobStoreopt || r.Job == jobWorker {
				fmt.Fprintf(w, "%s %s: peak RSS %.0f MiB%s with a memory pool of %.0f MiB (RSS - pool = %.0f MiB)\n", r.Job, r.Shape,
					float64(r.PeakRSSBytes)/(1<<20), rssSplit(r.PeakAnonBytes, r.PeakFileBytes), float64(pool)/(1<<20),
					float64(r.PeakRSSBytes-pool)/(1<<20))
			}
		}
	}
	printEstimates(w, reports)
}
