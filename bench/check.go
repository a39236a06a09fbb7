package main

import (
	"context"
	"fmt"
	"os"

	"github.com/storeopt/storeopt/parquetio"
)

// outputCheck is what checkOutputs found in a job's output chunks.
type outputCheck struct {
	Files int
	Bytes int64
	Rows  int64
	// Sorted: timestamp_ns ascending with nulls last across all files in order.
	Sorted      bool
	SortProblem string // first violation, "" when sorted
	// MetadataPreserved: every file's footer (Parquet schema elements and key/value pairs,
	// ARROW:schema included) equals the input's.
	MetadataPreserved bool
	MetadataProblem   string // first difference, "" when preserved
}

// sortState follows timestamp_ns across files: the last non-null value and whether a null was
// seen (after which only nulls may come).
type sortState struct {
	rows     int64
	last     int64
	haveLast bool
	sawNull  bool
	problem  string
}

// add checks the next timestamps (valid(i) false = null) and records the first violation.
func (s *sortState) add(n int, value func(int) int64, valid func(int) bool, where string) {
	for i := range n {
		row := s.rows + int64(i)
		if !valid(i) {
			s.sawNull = true
			continue
		}
		v := value(i)
		if s.problem == "" {
			switch {
			case s.sawNull:
				s.problem = fmt.Sprintf("%s: row %d (output row %d) has timestamp %d after a null", where, i, row, v)
			case s.haveLast && v < s.last:
				s.problem = fmt.Sprintf("%s: row %d (output row %d) has timestamp %d < previous %d", where, i, row, v, s.last)
			}
		}
		s.last, s.haveLast = v, true
	}
	s.rows += int64(n)
}

// checkOutputs reads the footer and the timestamp_ns column of every file in order and compares
// them with the input's footer (Parquet schema elements and key/value pairs, ARROW:schema
// included).
func checkOutputs(ctx context.Context, files []string, want *parquetio.Footer) (outputCheck, error) {
	res := outputCheck{Files: len(files), MetadataPreserved: true}
	var st sortState
	for _, path := range files {
		if err := checkFile(ctx, path, want, &st, &res); err != nil {
			return res, fmt.Errorf("check output %s: %w", path, err)
		}
	}
	res.Rows = st.rows
	res.Sorted, res.SortProblem = st.problem == "", st.problem
	return res, nil
}

func checkFile(ctx context.Context, path string, want *parquetio.Footer, st *sortState, res *outputCheck) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	res.Bytes += fi.Size()
	c, err := parquetio.Open(f, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if d := parquetio.FirstFooterDifference(want, c.Footer); d != "" && res.MetadataPreserved {
		res.MetadataPreserved = false
		res.MetadataProblem = path + ": " + d
	}
	ts, err := c.Timestamps(ctx)
	if err != nil {
		return err
	}
	defer ts.Release()
	st.add(ts.Len(), ts.Value, ts.IsValid, path)
	return nil
}
