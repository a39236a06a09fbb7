package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// TestDryRunChangesNothing runs `starter store-optimizer --dry-run` (JSON and table) with a
// scope, a policy and a trigger, after a real run gave the catalog a history of optimization
// costs: the catalog (every row of every table, and every sequence) and the store (every key and
// its bytes) are identical before and after, every planned topic has its plan (its chunks and
// bytes as the catalog has them, outputs, rows) and an estimate, the trigger and scope are
// respected, and a real run with the same options then writes the planned output chunks.
func TestDryRunChangesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, seq := range []string{"dry_history", "dry_planned"} {
		opts := testPreset(t)
		opts.Sequence = seq
		e.ingest(t, opts)
	}
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	const maxChunk = "32768"
	if out, code := e.starter(t, "store-optimizer", "--scope", "sequence:dry_history", "--max-chunk-size", maxChunk); code != 0 {
		t.Fatalf("real run of dry_history: exit %d\n%s", code, out)
	}

	catalogBefore, storeBefore := catalogDump(t, e), e.storeContent(t)
	out, code := e.starter(t, "store-optimizer", "--dry-run", "--json", "--scope", "sequence:dry_planned",
		"--max-chunk-size", maxChunk)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	var res workflows.StoreOptimizerResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.DryRun == nil {
		t.Fatalf("dry run --json: %v\n%s", err, out)
	}
	d := res.DryRun
	if d.Planned != 3 || len(d.Topics) != 3 || d.WouldFail != 0 || d.NothingToDo != 0 || d.Seconds <= 0 {
		t.Fatalf("dry run report %+v: want the 3 topics of dry_planned planned and estimated", d)
	}
	planned := map[string]int{}
	for _, tp := range d.Topics {
		if !strings.HasPrefix(tp.Locator, "dry_planned/") || tp.Policy != "full" {
			t.Errorf("planned topic %s (%s) is outside the scope or policy", tp.Locator, tp.Policy)
		}
		chunks, err := e.cat.Chunks(ctx, tp.TopicID)
		if err != nil {
			t.Fatal(err)
		}
		var bytes, arrow, rows int64
		for _, c := range chunks {
			bytes, arrow, rows = bytes+c.SizeBytes, arrow+c.ArrowSizeBytes, rows+c.RowCount
		}
		if tp.InputChunks != len(chunks) || tp.InputBytes != bytes || tp.InputArrowBytes != arrow || tp.Rows != rows {
			t.Errorf("plan of %s: %d chunks, %d bytes (%d Arrow), %d rows; the catalog has %d, %d (%d), %d",
				tp.Locator, tp.InputChunks, tp.InputBytes, tp.InputArrowBytes, tp.Rows, len(chunks), bytes, arrow, rows)
		}
		if tp.OutputChunks < 1 || tp.OutputBytes <= 0 || tp.Seconds <= 0 || tp.Estimate == "" {
			t.Errorf("plan of %s: %+v: want outputs and an estimate", tp.Locator, tp)
		}
		planned[tp.Locator] = tp.OutputChunks
	}

	table, code := e.starter(t, "store-optimizer", "--dry-run", "--scope", "sequence:dry_planned", "--max-chunk-size", maxChunk)
	if code != 0 || !strings.Contains(table, "(dry run: nothing was queued, leased, written or changed)") ||
		!strings.Contains(table, "topics   3 to optimize") {
		t.Errorf("dry run table: exit %d\n%s", code, table)
	}
	for locator := range planned {
		if !strings.Contains(table, locator) {
			t.Errorf("dry run table does not list %s:\n%s", locator, table)
		}
	}
	// A trigger no topic reaches plans nothing.
	out, code = e.starter(t, "store-optimizer", "--dry-run", "--json", "--policy", "leveled", "--min-chunks", "100")
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.DryRun == nil || res.DryRun.Planned != 0 {
		t.Errorf("dry run with --min-chunks 100: exit %d, %v\n%s", code, err, out)
	}
	// A dry run over pages of one topic: its history is saved for the replay test.
	id, res, err := e.pass(app.PassOptions{DryRun: true, PageSize: 1, Scope: []string{"sequence:dry_planned"},
		MaxChunkSizeBytes: 32768})
	if err != nil || res.DryRun == nil || res.DryRun.Planned != 3 {
		t.Fatalf("dry run over pages of 1: %+v, %v", res.DryRun, err)
	}
	saveHistory(t, e.srv.Client, id, "store-optimizer-dry-run")
	if out, code := e.starter(t, "store-optimizer", "--dry-run", "--time-interval", "60"); code != 2 ||
		!strings.Contains(out, "--dry-run runs once") {
		t.Errorf("scheduled dry run: exit %d\n%s", code, out)
	}

	if after := catalogDump(t, e); !reflect.DeepEqual(catalogBefore, after) {
		for table, rows := range after {
			if rows != catalogBefore[table] {
				t.Errorf("dry runs changed catalog table %s:\nbefore:\n%s\nafter:\n%s", table, catalogBefore[table], rows)
			}
		}
	}
	if after := e.storeContent(t); !reflect.DeepEqual(storeBefore, after) {
		t.Errorf("dry runs changed the store: %d objects before, %d after", len(storeBefore), len(after))
	}

	// The real run does what the dry run planned.
	_, real, err := e.pass(app.PassOptions{MaxChunkSizeBytes: 32768, Scope: []string{"sequence:dry_planned"}})
	if err != nil || real.Optimized != 3 {
		t.Fatalf("real run of dry_planned: %+v, %v", real, err)
	}
	for locator, outputs := range planned {
		tp, err := e.cat.TopicByLocator(ctx, locator)
		if err != nil {
			t.Fatal(err)
		}
		if chunks, err := e.cat.Chunks(ctx, tp.ID); err != nil || len(chunks) != outputs {
			t.Errorf("%s: the real run wrote %d chunks (%v), the dry run planned %d", locator, len(chunks), err, outputs)
		}
	}
}

// catalogDump returns every row of every table of the catalog database (as text, sorted) and
// the last value of every sequence, by table or sequence name.
func catalogDump(t *testing.T, e *env) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, _ := e.cat.Pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 5 {
		t.Fatalf("catalog tables: %v, %v", tables, err)
	}
	dump := map[string]string{}
	for _, table := range tables {
		var text string
		q := fmt.Sprintf(`SELECT coalesce(string_agg(r::text, E'\n' ORDER BY r::text), '') FROM %s r`, pgx.Identifier{table}.Sanitize())
		if err := e.cat.Pool.QueryRow(ctx, q).Scan(&text); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		dump[table] = text
	}
	rows, _ = e.cat.Pool.Query(ctx, `SELECT sequencename, coalesce(last_value, 0) FROM pg_sequences WHERE schemaname = 'public'`)
	var name string
	var last int64
	_, err = pgx.ForEachRow(rows, []any{&name, &last}, func() error {
		dump["sequence "+name] = fmt.Sprint(last)
		return nil
	})
	if err != nil {
		t.Fatalf("catalog sequences: %v", err)
	}
	return dump
}
