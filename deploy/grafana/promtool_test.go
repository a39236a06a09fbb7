package grafana

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/storeopt/storeopt/internal/testenv"
)

// PrometheusConfig is the compose stack's Prometheus configuration, relative to this package.
const PrometheusConfig = "../prometheus/prometheus.yml"

// TestPrometheusConfig: Prometheus' own checker accepts the compose stack's configuration.
func TestPrometheusConfig(t *testing.T) {
	promtool := testenv.Promtool(t)
	out, err := exec.Command(promtool, "check", "config", PrometheusConfig).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check config %s: %v\n%s", PrometheusConfig, err, out)
	}
}

// grafanaVariable matches $name and ${name} in a query.
var grafanaVariable = regexp.MustCompile(`\$\{?(\w+)\}?`)

// promQL returns expr with Grafana's variables replaced by values Prometheus accepts.
func promQL(expr string) (string, error) {
	values := map[string]string{"__rate_interval": "1m", "__range": "6h", "__interval": "15s", InstanceVariable: ".*"}
	var unknown []string
	out := grafanaVariable.ReplaceAllStringFunc(expr, func(m string) string {
		name := grafanaVariable.FindStringSubmatch(m)[1]
		v, ok := values[name]
		if !ok {
			unknown = append(unknown, name)
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown variables %v", unknown)
	}
	return out, nil
}

// TestDashboardQueriesArePromQL: every query of the dashboard (Grafana's variables replaced) is
// an expression Prometheus' parser accepts: they are checked as recording rules by promtool.
func TestDashboardQueriesArePromQL(t *testing.T) {
	promtool := testenv.Promtool(t)
	queries, err := Queries(readDashboard(t))
	if err != nil {
		t.Fatal(err)
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: storeopt-dashboard\n    rules:\n")
	n := 0
	for _, q := range queries {
		if strings.HasPrefix(q.Expr, "label_values(") { // a Grafana function, not PromQL
			continue
		}
		expr, err := promQL(q.Expr)
		if err != nil {
			t.Fatalf("panel %q: %s: %v", q.Panel, q.Expr, err)
		}
		n++
		fmt.Fprintf(&rules, "      - record: storeopt:dashboard_query_%d # %s\n        expr: %q\n", n, q.Panel, expr)
	}
	file := filepath.Join(t.TempDir(), "rules.yml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s\n%s", err, out, rules.String())
	}
	if !strings.Contains(string(out), fmt.Sprintf("%d rules found", n)) {
		t.Fatalf("promtool checked other than the %d queries:\n%s", n, out)
	}
}
