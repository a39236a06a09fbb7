// Package metricstest scrapes a Prometheus endpoint over HTTP and looks up its series, for tests
// of storeopt's metrics.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples are the metric families of one scrape, by family name.
type Samples map[string]*dto.MetricFamily

// Scrape GETs url and parses the Prometheus text format; it fails t on any error.
func Scrape(t testing.TB, url string) Samples {
	t.Helper()
	s, err := Fetch(url)
	if err != nil {
		t.Fatalf("metricstest: %v", err)
	}
	return s
}

// Fetch GETs url and parses the Prometheus text format.
func Fetch(url string) (Samples, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("scrape %s: %s: %s", url, resp.Status, body)
	}
	return Parse(resp.Body)
}

// Parse parses the Prometheus text format.
func Parse(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Samples(fams), nil
}

// Sum returns the sum of the values of the series of name whose labels include match, and
// whether any series matched. name is a family (counter, gauge, untyped: the value) or a
// histogram's series name: <family>_count (observations) or <family>_sum.
func (s Samples) Sum(name string, match map[string]string) (float64, bool) {
	fam, part := s.family(name)
	if fam == nil {
		return 0, false
	}
	var sum float64
	found := false
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, match) {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Histogram != nil && part == "_count":
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Histogram != nil && part == "_sum":
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum, found
}

// Value is Sum that fails t when no series matches.
func (s Samples) Value(t testing.TB, name string, match map[string]string) float64 {
	t.Helper()
	v, ok := s.Sum(name, match)
	if !ok {
		t.Fatalf("metricstest: no series %s%v in the scrape (families: %s)", name, match, strings.Join(s.Names(), ", "))
	}
	return v
}

// Has reports whether the scrape has a series named name: a family, or a histogram's
// <family>_bucket, _count or _sum.
func (s Samples) Has(name string) bool {
	fam, _ := s.family(name)
	return fam != nil && len(fam.GetMetric()) > 0
}

// Names returns the family names of the scrape, sorted.
func (s Samples) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// family returns the family of a series name and, for a histogram's or summary's series, its
// suffix (_bucket, _count, _sum).
func (s Samples) family(name string) (*dto.MetricFamily, string) {
	if f, ok := s[name]; ok {
		return f, ""
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := s[base]; ok && (f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY) {
				return f, suffix
			}
		}
	}
	return nil, ""
}

func hasLabels(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
