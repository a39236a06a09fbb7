package grafana

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	dto "github.com/prometheus/client_model/go"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/metrics"
)

var update = flag.Bool("update", false, "rewrite "+File+" from Build")

func readDashboard(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(File)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDashboardFile: the committed dashboard is Build's output.
func TestDashboardFile(t *testing.T) {
	want, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(File, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := readDashboard(t); string(got) != string(want) {
		t.Fatalf("%s differs from Build's output: run go test ./deploy/grafana -update", File)
	}
}

// TestDashboardSchema loads the file with the strict decoder of Grafana's dashboard schema (the
// foundation SDK's types are generated from it; panel options, field configs and Prometheus
// queries are decoded into their plugins' types): an unknown field, a wrong type or a missing
// required field anywhere fails, and so does Validate.
func TestDashboardSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	if err := buildErr(d.UnmarshalJSONStrict(readDashboard(t))); err != nil {
		t.Fatalf("%s does not match Grafana's dashboard schema: %v", File, err)
	}
	if err := buildErr(d.Validate()); err != nil {
		t.Fatalf("%s: %v", File, err)
	}
	if len(d.Panels) == 0 || d.Templating.List == nil {
		t.Fatalf("%s decoded without panels or variables", File)
	}
	var broken map[string]any
	if err := json.Unmarshal(readDashboard(t), &broken); err != nil {
		t.Fatal(err)
	}
	broken["panels"].([]any)[1].(map[string]any)["gridPoss"] = map[string]any{} // a typo
	data, _ := json.Marshal(broken)
	if err := buildErr(new(dashboard.Dashboard).UnmarshalJSONStrict(data)); err == nil {
		t.Fatal("the strict decoder accepted an unknown panel field: it checks nothing")
	}
}

// buildErr returns err, or nil for the SDK's typed nil (a nil cog.BuildErrors in an error).
func buildErr(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// TestDashboardLint checks what the schema cannot: every panel and query uses the Prometheus
// datasource variable and the instance filter, ids and titles are unique, panels tile the grid
// without overlapping, and every metric a query selects is one the worker exports: storeopt's
// own (metrics.Registry), Go and process metrics (its collectors). The Temporal SDK's metrics
// exist only once the SDK has used them: e2e.TestMetricsAfterAPass checks those in a real
// worker's scrape after a pass.
func TestDashboardLint(t *testing.T) {
	var d struct {
		UID        string `json:"uid"`
		Panels     []lintPanel
		Templating struct {
			List []struct {
				Name, Type string
				Query      any
				Datasource *lintDatasource
			}
		}
	}
	data := readDashboard(t)
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID != UID {
		t.Errorf("uid %q, want %q", d.UID, UID)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == DatasourceVariable && v.Query != "prometheus" {
			t.Errorf("variable %s picks %v datasources, want prometheus", v.Name, v.Query)
		}
		if v.Type == "query" {
			checkDatasource(t, "variable "+v.Name, v.Datasource)
		}
	}
	if vars[DatasourceVariable] != "datasource" || vars[InstanceVariable] != "query" {
		t.Fatalf("variables %v: want %s (datasource) and %s (query)", vars, DatasourceVariable, InstanceVariable)
	}

	ids, titles := map[int]bool{}, map[string]bool{}
	var grid [][24]bool
	for _, p := range d.Panels {
		if ids[p.ID] || p.ID == 0 {
			t.Errorf("panel %q: id %d is 0 or repeated", p.Title, p.ID)
		}
		ids[p.ID] = true
		if titles[p.Title] {
			t.Errorf("panel title %q repeated", p.Title)
		}
		titles[p.Title] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		for y := g.Y; y < g.Y+g.H; y++ {
			for len(grid) <= y {
				grid = append(grid, [24]bool{})
			}
			for x := g.X; x < min(g.X+g.W, 24); x++ {
				if grid[y][x] {
					t.Errorf("panel %q overlaps another at x=%d y=%d", p.Title, x, y)
				}
				grid[y][x] = true
			}
		}
		if p.Type == "row" {
			continue
		}
		checkDatasource(t, p.Title, p.Datasource)
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			checkDatasource(t, p.Title+" "+q.RefID, q.Datasource)
			if refs[q.RefID] {
				t.Errorf("panel %q: refId %s repeated", p.Title, q.RefID)
			}
			refs[q.RefID] = true
			if !strings.Contains(q.Expr, `instance=~"$`+InstanceVariable+`"`) {
				t.Errorf("panel %q: query %s does not filter on $%s", p.Title, q.Expr, InstanceVariable)
			}
		}
	}

	exported := exportedMetrics(t)
	queries, err := Queries(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < len(ids) {
		t.Fatalf("%d queries found in %d panels", len(queries), len(ids))
	}
	var sdk []string
	for _, q := range queries {
		names := MetricNames(q.Expr)
		if len(names) == 0 {
			t.Errorf("panel %q: query %s selects no metric", q.Panel, q.Expr)
		}
		for _, n := range names {
			switch {
			case exported[n]:
			case strings.HasPrefix(n, "temporal_"):
				sdk = append(sdk, n) // checked against a real scrape by the e2e test
			default:
				t.Errorf("panel %q queries %s, which the worker does not export", q.Panel, n)
			}
		}
	}
	slices.Sort(sdk)
	t.Logf("Temporal SDK series queried (checked by e2e.TestMetricsAfterAPass): %s", strings.Join(slices.Compact(sdk), ", "))
}

type lintDatasource struct{ Type, UID string }

type lintPanel struct {
	ID          int
	Type, Title string
	Datasource  *lintDatasource
	GridPos     struct{ X, Y, W, H int }
	Targets     []struct {
		RefID      string
		Expr       string
		Datasource *lintDatasource
	}
}

func checkDatasource(t *testing.T, where string, ds *lintDatasource) {
	t.Helper()
	if ds == nil || ds.Type != "prometheus" || ds.UID != "${"+DatasourceVariable+"}" {
		t.Errorf("%s: datasource %+v, want {prometheus ${%s}}", where, ds, DatasourceVariable)
	}
}

// exportedMetrics returns the series names a worker's registry exports: storeopt's metrics
// (histograms with their _bucket, _count and _sum series), Go and process metrics.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	reg := metrics.NewRegistry(nil)
	reg.WatchPool(mempool.New(0))
	reg.WatchDebt(func(context.Context) (catalog.DebtTotals, error) { return catalog.DebtTotals{}, nil }, nil)
	reg.TopicFailed("full", metrics.ErrorOther) // the one family without series until then
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range fams {
		out[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				out[f.GetName()+s] = true
			}
		}
	}
	for _, n := range reg.Names() {
		if !out[n] {
			t.Fatalf("registered metric %s is not gathered", n)
		}
	}
	if !out["process_resident_memory_bytes"] || !out["go_memstats_heap_inuse_bytes"] {
		t.Fatalf("Go and process metrics missing: %v", out)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{`sum by (policy) (rate(storeopt_rows_total{instance=~"$instance", policy="full"}[$__rate_interval]))`, []string{"storeopt_rows_total"}},
		{`histogram_quantile(0.95, sum by (le, step) (rate(storeopt_step_duration_seconds_bucket{outcome="ok"}[5m])))`, []string{"storeopt_step_duration_seconds_bucket"}},
		{`a_total / on (instance) group_left(policy) b_info * 1e3 + -2.5`, []string{"a_total", "b_info"}},
		{`sum without (kind) (increase(x[$__range])) or vector(0)`, []string{"x"}},
		{`max_over_time(up[1h:5m]) > bool 0 unless absent(y_bytes offset 1h)`, []string{"up", "y_bytes"}},
		{`label_values(storeopt_memory_pool_limit_bytes, instance)`, []string{"storeopt_memory_pool_limit_bytes"}},
		{`{__name__="hidden"} + count(z{a="{b}", c='x[y]'})`, []string{"z"}},
		{`$datasource_var + ${other}`, nil},
	} {
		if got := MetricNames(c.expr); !slices.Equal(got, c.want) {
			t.Errorf("MetricNames(%s) = %v, want %v", c.expr, got, c.want)
		}
	}
}
