// Package grafana builds storeopt's Grafana dashboard (deploy/grafana/dashboards/storeopt.json)
// with Grafana's own Go SDK (github.com/grafana/grafana-foundation-sdk, whose types are generated
// from Grafana's dashboard schema), and reads back the metric names its queries use. The JSON
// file is what Grafana loads (docker-compose provisions it); TestDashboardFile keeps it equal to
// Build's output (`go test ./deploy/grafana -update` rewrites it) and lints it.
package grafana

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Identity of the dashboard and of the datasource it queries.
const (
	// UID is the dashboard's UID (its URL is /d/storeopt).
	UID = "storeopt"
	// DatasourceVariable is the dashboard variable that picks the Prometheus datasource; every
	// panel and query uses it (${datasource}).
	DatasourceVariable = "datasource"
	// InstanceVariable is the dashboard variable that picks the workers (Prometheus' instance
	// label); every query filters on it.
	InstanceVariable = "instance"
	// File is the dashboard's path relative to this package.
	File = "dashboards/storeopt.json"
)

// datasource is the reference every panel and query carries.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + DatasourceVariable + "}")}
}

// sel is the label selector of the chosen workers, with extra matchers.
func sel(extra string) string {
	s := `instance=~"$` + InstanceVariable + `"`
	if extra != "" {
		s += ", " + extra
	}
	return "{" + s + "}"
}

// query is one Prometheus query of a panel.
type query struct {
	expr, legend string
}

func (q query) builder(refID string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(datasource()).RefId(refID).Expr(q.expr).LegendFormat(q.legend)
}

// panelIDs numbers the panels in the order they are added.
type panelIDs struct{ next uint32 }

func (p *panelIDs) id() uint32 { p.next++; return p.next }

func (p *panelIDs) row(title string) *dashboard.RowBuilder {
	return dashboard.NewRowBuilder(title).Id(p.id())
}

func (p *panelIDs) graph(title, description, unit string, queries ...query) *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().Id(p.id()).Title(title).Description(description).Datasource(datasource()).
		Unit(unit).Min(0).Height(8).Span(12).FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending))
	for i, q := range queries {
		b.WithTarget(q.builder(string(rune('A' + i))))
	}
	return b
}

func (p *panelIDs) total(title, description string, q query) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Id(p.id()).Title(title).Description(description).Datasource(datasource()).
		Unit("short").Height(4).Span(6).GraphMode(common.BigValueGraphModeNone).Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		WithTarget(q.builder("A").Instant())
}

// rate is the per-second rate of a counter summed by the given labels.
func rate(metric, matchers, by string) string {
	return fmt.Sprintf("sum by (%s) (rate(%s%s[$__rate_interval]))", by, metric, sel(matchers))
}

// quantile is the q-quantile of a histogram's series, by the given labels.
func quantile(q float64, metric, matchers, by string) string {
	return fmt.Sprintf("histogram_quantile(%g, sum by (le, %s) (rate(%s_bucket%s[$__rate_interval])))", q, by, metric, sel(matchers))
}

// increase is the increase of a counter over the dashboard's time range.
func increase(metric string) string {
	return fmt.Sprintf("sum(increase(%s%s[$__range]))", metric, sel(""))
}

// Build returns the storeopt dashboard: topics (optimized, failed, skipped, quarantined),
// chunks, rows and bytes, step durations, store throughput, memory pool, cleanup, and the
// Temporal SDK's worker metrics, for the workers chosen in the instance variable.
func Build() (dashboard.Dashboard, error) {
	var p panelIDs
	b := dashboard.NewDashboardBuilder("storeopt").
		Uid(UID).
		Description("storeopt workers: topics optimized, data rewritten, step durations, store throughput, memory pool, cleanup and the Temporal SDK's worker metrics (metrics of `worker --metrics-address`).").
		Tags([]string{"storeopt", "temporal"}).
		Refresh("30s").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder(DatasourceVariable).Label("Prometheus").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder(InstanceVariable).Label("Worker").
			Datasource(datasource()).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(storeopt_memory_pool_limit_bytes, instance)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).IncludeAll(true).AllValue(".*"))

	b.WithRow(p.row("Topics")).
		WithPanel(p.total("Topics optimized", "Topics optimized (committed) in the time range.", query{expr: increase("storeopt_topics_optimized_total")})).
		WithPanel(p.total("Topics failed", "Topic optimizations that failed or were canceled in the time range.", query{expr: increase("storeopt_topics_failed_total")})).
		WithPanel(p.total("Topics skipped", "Topics left alone: optimized or quarantined by another run since listed, or nothing to do for the policy.", query{expr: increase("storeopt_topics_skipped_total")})).
		WithPanel(p.total("Topics quarantined", "Topics quarantined by a failure in the time range (`starter quarantine list`).", query{expr: increase("storeopt_topics_quarantined_total")})).
		WithPanel(p.graph("Topics optimized per second", "By policy (full, tiered, leveled).", "ops",
			query{rate("storeopt_topics_optimized_total", "", "policy"), "{{policy}}"})).
		WithPanel(p.graph("Topics failed and skipped per second", "Failures by error type (StoreoptInputError, …, canceled, other); skips by reason.", "ops",
			query{rate("storeopt_topics_failed_total", "", "error_type"), "failed: {{error_type}}"},
			query{rate("storeopt_topics_skipped_total", "", "reason"), "skipped: {{reason}}"},
			query{rate("storeopt_topics_quarantined_total", "", "policy"), "quarantined: {{policy}}"}))

	// The debt gauges come from the catalog: every worker reports the same values, hence max().
	debt := func(metric, by string) string {
		if by == "" {
			return fmt.Sprintf("max(%s%s)", metric, sel(""))
		}
		return fmt.Sprintf("max by (%s) (%s%s)", by, metric, sel(""))
	}
	b.WithRow(p.row("Compaction debt")).
		WithPanel(p.graph("L0 chunks waiting", "L0 chunks of all topics waiting for a compaction into the sorted run, those no compaction has joined yet, and the most one topic has (the catalog's counts: docs/operations.md#compaction-debt).", "short",
			query{debt("storeopt_debt_l0_chunks", ""), "L0 chunks"},
			query{debt("storeopt_debt_uncompacted_chunks", ""), "uncompacted"},
			query{debt("storeopt_debt_max_topic_l0_chunks", ""), "most in one topic"})).
		WithPanel(p.graph("Topics over the trigger and write signal", "Topics with at least the latest run's --min-chunks L0 chunks, and topics whose writers the write signal asks to delay or stop.", "short",
			query{debt("storeopt_debt_topics_over_trigger", ""), "over the trigger"},
			query{fmt.Sprintf(`max by (write_state) (storeopt_debt_topics%s)`, sel(`write_state!="ok"`)), "write {{write_state}}"})).
		WithPanel(p.graph("Oldest uncompacted L0 chunk", "Age of the oldest L0 chunk no compaction has joined yet: a schedule that keeps up holds it to a few schedule intervals.", "s",
			query{debt("storeopt_debt_oldest_uncompacted_age_seconds", ""), "age"})).
		WithPanel(p.graph("L0 bytes waiting", "Object bytes of the L0 chunks of all topics.", "bytes",
			query{debt("storeopt_debt_l0_bytes", ""), "L0 bytes"})).
		WithPanel(p.graph("Write amplification", "Bytes written by committed compactions per byte ingested: ever, and over the last 15 minutes.", "short",
			query{debt("storeopt_debt_write_amplification", ""), "ever"},
			query{fmt.Sprintf("max(delta(storeopt_debt_compaction_written_bytes%s[15m])) / max(delta(storeopt_debt_ingested_bytes%s[15m]))", sel(""), sel("")), "last 15m"}))

	b.WithRow(p.row("Data rewritten")).
		WithPanel(p.graph("Chunks per second", "Chunks replaced (input) and written (output) by committed optimizations.", "ops",
			query{rate("storeopt_input_chunks_total", "", "policy"), "input {{policy}}"},
			query{rate("storeopt_output_chunks_total", "", "policy"), "output {{policy}}"})).
		WithPanel(p.graph("Rows per second", "Rows rewritten by committed optimizations.", "rowsps",
			query{rate("storeopt_rows_total", "", "policy"), "{{policy}}"})).
		WithPanel(p.graph("Optimized bytes per second", "Object bytes of the chunks replaced (input) and written (output) by committed optimizations.", "Bps",
			query{rate("storeopt_input_bytes_total", "", "policy"), "input {{policy}}"},
			query{rate("storeopt_output_bytes_total", "", "policy"), "output {{policy}}"})).
		WithPanel(p.graph("Written by path", "Arrow bytes of the output chunks written and read back, by path: rewritten (decoded, merged, encoded) or assembled from the inputs' pages (copy).", "Bps",
			query{rate("storeopt_written_arrow_bytes_total", "", "path"), "{{path}}"})).
		WithPanel(p.graph("Store throughput", "Bytes the workers read from and wrote to the object store (failed attempts included).", "Bps",
			query{rate("storeopt_bytes_read_total", "", "instance"), "read {{instance}}"},
			query{rate("storeopt_bytes_written_total", "", "instance"), "written {{instance}}"}))

	b.WithRow(p.row("Steps")).
		WithPanel(p.graph("Step duration (p50, p95)", "Duration of successful executions of lease, read-sort, write-chunks (one output group) and commit.", "s",
			query{quantile(0.5, "storeopt_step_duration_seconds", `outcome="ok"`, "step"), "p50 {{step}}"},
			query{quantile(0.95, "storeopt_step_duration_seconds", `outcome="ok"`, "step"), "p95 {{step}}"})).
		WithPanel(p.graph("Step executions per second", "Executions (attempts) of each step, by outcome.", "ops",
			query{rate("storeopt_step_duration_seconds_count", "", "step, outcome"), "{{step}} {{outcome}}"}))

	b.WithRow(p.row("Memory")).
		WithPanel(p.graph("Memory pool", "The worker's memory pool (STOREOPT_MEMORY_POOL_SIZE; a limit of 0 is unlimited): reserved by running activities, Arrow buffers in use.", "bytes",
			query{fmt.Sprintf("sum by (instance) (storeopt_memory_pool_limit_bytes%s)", sel("")), "limit {{instance}}"},
			query{fmt.Sprintf("sum by (instance) (storeopt_memory_pool_reserved_bytes%s)", sel("")), "reserved {{instance}}"},
			query{fmt.Sprintf("sum by (instance) (storeopt_memory_pool_in_use_bytes%s)", sel("")), "in use {{instance}}"})).
		WithPanel(p.graph("Worker process memory", "Resident memory of the worker process and its Go heap.", "bytes",
			query{fmt.Sprintf("sum by (instance) (process_resident_memory_bytes%s)", sel("")), "resident {{instance}}"},
			query{fmt.Sprintf("sum by (instance) (go_memstats_heap_inuse_bytes%s)", sel("")), "Go heap {{instance}}"}))

	b.WithRow(p.row("Cleanup")).
		WithPanel(p.graph("Cleanup deletions", "What cleanup passes deleted (prefixes, their objects, temporary files, aborted uploads, replaced objects) and failed to delete, per second.", "ops",
			query{rate("storeopt_cleanup_deleted_total", "", "kind"), "deleted {{kind}}"},
			query{rate("storeopt_cleanup_failed_total", "", "kind"), "failed {{kind}}"}))

	b.WithRow(p.row("Temporal worker")).
		WithPanel(p.graph("Activity execution latency (p95)", "The Temporal SDK's execution latency of each activity type (temporal_activity_execution_latency).", "s",
			query{quantile(0.95, "temporal_activity_execution_latency_seconds", "", "activity_type"), "{{activity_type}}"})).
		WithPanel(p.graph("Activity schedule-to-start latency (p95)", "Time activities waited in the task queue for a worker: high values mean too few workers or activity slots.", "s",
			query{quantile(0.95, "temporal_activity_schedule_to_start_latency_seconds", "", "activity_type"), "{{activity_type}}"})).
		WithPanel(p.graph("Activity failures per second", "Failed activity executions (attempts) by activity type.", "ops",
			query{rate("temporal_activity_execution_failed_total", "", "activity_type"), "{{activity_type}}"})).
		WithPanel(p.graph("Workflows completed and failed per second", "Workflow executions by type and end.", "ops",
			query{rate("temporal_workflow_completed_total", "", "workflow_type"), "completed {{workflow_type}}"},
			query{rate("temporal_workflow_failed_total", "", "workflow_type"), "failed {{workflow_type}}"})).
		WithPanel(p.graph("Task slots available", "Free execution slots per worker type (--max-concurrent-activities for activities).", "short",
			query{fmt.Sprintf("sum by (instance, worker_type) (temporal_worker_task_slots_available%s)", sel("")), "{{worker_type}} {{instance}}"})).
		WithPanel(p.graph("Pollers", "Pollers of the task queue per poller type.", "short",
			query{fmt.Sprintf("sum by (poller_type) (temporal_num_pollers%s)", sel("")), "{{poller_type}}"}))
	return b.Build()
}

// JSON returns the dashboard as Grafana loads it: indented JSON with a final newline.
func JSON() ([]byte, error) {
	d, err := Build()
	if err != nil {
		return nil, fmt.Errorf("build dashboard: %w", err)
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
