package app_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/policy"
)

// ingestTestData writes the "test" preset into a fresh catalog and file store.
func ingestTestData(t *testing.T) (*catalog.Catalog, *blob.Bucket, []ingest.IngestedTopic) {
	t.Helper()
	ctx := context.Background()
	cat, err := catalog.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cat.Close)
	bucket, _ := testenv.NewBucket(t)
	opts, err := ingest.Preset("test", 1)
	if err != nil {
		t.Fatal(err)
	}
	topics, err := ingest.Ingest(ctx, cat, bucket, opts)
	if err != nil {
		t.Fatal(err)
	}
	return cat, bucket, topics
}

func TestReportAndReadObjects(t *testing.T) {
	ctx := context.Background()
	cat, b, ingested := ingestTestData(t)

	reports, err := app.Report(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != len(ingested) {
		t.Fatalf("%d topics reported, %d ingested", len(reports), len(ingested))
	}
	for i, want := range ingested {
		got := reports[i]
		if got.Locator != want.Locator || got.DataPrefix != want.Prefix || got.Chunks != want.Chunks ||
			got.Rows != want.Rows || got.Bytes != want.Bytes || len(got.ChunkKeys) != want.Chunks ||
			!got.Finalized || got.OptimizedAt != nil {
			t.Errorf("topic %d: report %+v, ingested %+v", i, got, want)
		}
		st, err := app.ReadObjects(ctx, b, got.ChunkKeys, 2)
		if err != nil {
			t.Fatalf("read %s: %v", got.Locator, err)
		}
		if st.Objects != want.Chunks || st.Rows != want.Rows || st.Bytes != want.Bytes {
			t.Errorf("read %s: %+v, want %d objects, %d rows, %d bytes", got.Locator, st, want.Chunks, want.Rows, want.Bytes)
		}
	}

	// Each topic's first and last timestamp_ns (from the chunk stats) are the ones the catalog
	// aggregated into the topic row when ingestion finalized it, and the table prints them.
	topics, err := cat.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := app.WriteReportTable(ctx, &text, reports, nil); err != nil {
		t.Fatal(err)
	}
	for i, tp := range topics {
		got := reports[i]
		if tp.MinTimestampNs == nil || got.FirstTimestampNs == nil || got.LastTimestampNs == nil ||
			*got.FirstTimestampNs != *tp.MinTimestampNs || *got.LastTimestampNs != *tp.MaxTimestampNs {
			t.Errorf("topic %s: report range %s..%s, catalog topic %s..%s", tp.Locator,
				nsString(got.FirstTimestampNs), nsString(got.LastTimestampNs), nsString(tp.MinTimestampNs), nsString(tp.MaxTimestampNs))
			continue
		}
		if *got.FirstTimestampNs >= *got.LastTimestampNs {
			t.Errorf("topic %s: first %d not before last %d", tp.Locator, *got.FirstTimestampNs, *got.LastTimestampNs)
		}
		want := fmt.Sprintf("%s %s %d %d %d %s %d %d", got.Locator, got.DataPrefix, got.Chunks, got.Bytes, got.Rows, "-",
			*got.FirstTimestampNs, *got.LastTimestampNs)
		if !slices.ContainsFunc(strings.Split(text.String(), "\n"), func(l string) bool { return strings.Join(strings.Fields(l), " ") == want }) {
			t.Errorf("topic %s: table lacks its range %d %d:\n%s", tp.Locator, *got.FirstTimestampNs, *got.LastTimestampNs, text.String())
		}
	}

	// A snapshot round-trips, and the comparison prints one line per topic present in both.
	path := filepath.Join(t.TempDir(), "before.json")
	var buf bytes.Buffer
	if err := app.WriteReportJSON(&buf, reports); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, buf.Bytes())
	before, err := app.ReadReportJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := app.WriteComparison(ctx, &table, before, reports, b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 1+len(reports) {
		t.Fatalf("comparison has %d lines, want header + %d:\n%s", len(lines), len(reports), table.String())
	}
	if strings.Contains(table.String(), "error") {
		t.Errorf("comparison reports a read error:\n%s", table.String())
	}
}

func nsString(ns *int64) string {
	if ns == nil {
		return "nil"
	}
	return fmt.Sprint(*ns)
}

func TestReadObjectsNamesTheBadObject(t *testing.T) {
	ctx := context.Background()
	_, b, ingested := ingestTestData(t)
	bad := ingested[0].Prefix + "/data/99999.parquet"
	if err := b.WriteAll(ctx, bad, []byte("not parquet"), nil); err != nil {
		t.Fatal(err)
	}
	keys := []string{ingest.ChunkKey(ingested[0].Prefix, 0), bad}
	_, err := app.ReadObjects(ctx, b, keys, 1)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v, want one naming %s", err, bad)
	}
	_, err = app.ReadObjects(ctx, b, []string{ingested[0].Prefix + "/data/missing.parquet"}, 1)
	if err == nil || !strings.Contains(err.Error(), "missing.parquet") {
		t.Fatalf("missing object: error %v, want one naming it", err)
	}
}

func TestCheckScopeAcceptsWhatExists(t *testing.T) {
	locators := []string{"run_1/imu", "run_2/gps"}
	for _, s := range []policy.Scope{{}, {Sequences: []string{"run_1", "run_2"}, Topics: []string{"run_2/gps"}}} {
		if err := app.CheckScope(locators, s); err != nil {
			t.Errorf("scope %s: %v, want nil", s, err)
		}
	}
	if err := app.CheckScope(locators, policy.Scope{Sequences: []string{"run_1"}, Topics: []string{"run_1/gps"}}); err == nil ||
		err.Error() != `no topic "run_1/gps" in the catalog` {
		t.Errorf("topic run_1/gps not in the catalog: %v", err)
	}
}
