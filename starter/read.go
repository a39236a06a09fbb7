package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/topicread"
)

func newReadCommand(e *env) *cobra.Command {
	var (
		locator  string
		from, to int64
		asJSON   bool
		rows     bool
	)
	cmd := &cobra.Command{
		Use:   "read",
		Short: "Read the rows of a time window of a topic, fetching only the blocks that overlap it",
		Long: `Read the rows of a topic with --from <= timestamp_ns < --to (nanoseconds since the Unix
epoch) in the topic's global order, on any mix of L0 and L1 chunks: the catalog's chunk ranges
and block indexes pick the blocks (row groups) that may hold rows of the window and, in a chunk
with a page index (every chunk storeopt writes), the pages of them that may; only their byte
ranges (plus each chunk's footer) are fetched from the store. Rows whose timestamp_ns is null
are in no window. Prints the rows found, the
chunks and blocks read, the bytes fetched and the seconds taken (--json: one JSON object);
--rows also prints every row (tab-separated values, in order).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if locator == "" {
				return fmt.Errorf("--topic is required")
			}
			if !cmd.Flags().Changed("from") || !cmd.Flags().Changed("to") {
				return fmt.Errorf("--from and --to are required (timestamp_ns, nanoseconds since the Unix epoch); " +
					"a topic's first and last timestamp_ns: see starter report")
			}
			if to <= from {
				return fmt.Errorf("--to %d must be after --from %d", to, from)
			}
			if err := app.CheckStoreExists(e.cfg.StoreURL); err != nil {
				return err
			}
			ctx := cmd.Context()
			cat, bucket, closeData, err := openData(ctx, e)
			if err != nil {
				return err
			}
			defer closeData()
			out := cmd.OutOrStdout()
			st, err := topicread.Window(ctx, cat, bucket, locator, from, to, nil, func(rec arrow.RecordBatch) error {
				if !rows {
					return nil
				}
				for i := range int(rec.NumRows()) {
					parts := make([]string, rec.NumCols())
					for c, col := range rec.Columns() {
						parts[c] = col.ValueStr(i)
					}
					if _, err := fmt.Fprintln(out, strings.Join(parts, "\t")); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(out).Encode(map[string]any{
					"topic": locator, "from_ns": from, "to_ns": to, "rows": st.Rows, "chunks": st.Chunks,
					"blocks": st.Blocks, "blocks_by_pages": st.Pages, "bytes_fetched": st.BytesFetched,
					"requests": st.Requests, "seconds": st.Elapsed.Seconds(),
				})
			}
			_, err = fmt.Fprintf(out, "rows %d\nchunks %d\nblocks %d (%d by pages)\nbytes fetched %d in %d requests\nseconds %.4f\n",
				st.Rows, st.Chunks, st.Blocks, st.Pages, st.BytesFetched, st.Requests, st.Elapsed.Seconds())
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&locator, "topic", "", "topic locator (<sequence>/<path>)")
	f.Int64Var(&from, "from", 0, "window start, timestamp_ns (inclusive)")
	f.Int64Var(&to, "to", 0, "window end, timestamp_ns (exclusive)")
	f.BoolVar(&asJSON, "json", false, "print the figures as one JSON object")
	f.BoolVar(&rows, "rows", false, "also print every row of the window")
	return cmd
}
