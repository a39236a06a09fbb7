package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/storeopt/storeopt/catalog"
)

// DebtMaxAge is how long a measurement of the compaction debt serves scrapes: several
// Prometheus servers (or a scrape and a curl) within it share one catalog query.
const DebtMaxAge = 2 * time.Second

// DebtTimeout bounds one measurement of the compaction debt.
const DebtTimeout = 5 * time.Second

// debtCollector serves the catalog's compaction debt (catalog.DebtTotals) as gauges, measured
// when scraped. Every series is an aggregate over all topics (no per-topic label: a fleet has
// thousands), and each worker of a catalog reports the same values: take max(), not sum(),
// across workers.
type debtCollector struct {
	measure func(context.Context) (catalog.DebtTotals, error)
	onError func(error)

	up, topics, l0Chunks, l0Bytes, uncompacted, maxTopic, overTrigger, oldest *prometheus.Desc
	ingested, written, amplification                                          *prometheus.Desc

	mu     sync.Mutex
	last   catalog.DebtTotals
	lastAt time.Time
	lastOK bool
}

func debtDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

// WatchDebt adds the compaction debt gauges (storeopt_debt_…), measured by measure (the
// catalog's DebtTotals) at most every DebtMaxAge; onError (nil: ignored) receives a failed
// measurement, which sets storeopt_debt_up to 0 and leaves the other series out. Call it once.
func (r *Registry) WatchDebt(measure func(context.Context) (catalog.DebtTotals, error), onError func(error)) {
	if onError == nil {
		onError = func(error) {}
	}
	c := &debtCollector{measure: measure, onError: onError,
		up:          debtDesc("debt_up", "1 when the last measurement of the compaction debt from the catalog succeeded, else 0."),
		topics:      debtDesc("debt_topics", "Topics in the catalog, by the write signal's state for them (ok, delay, stop).", "write_state"),
		l0Chunks:    debtDesc("debt_l0_chunks", "L0 chunks of all topics: waiting for a compaction into the sorted run (tiered outputs included)."),
		l0Bytes:     debtDesc("debt_l0_bytes", "Object bytes of the L0 chunks of all topics."),
		uncompacted: debtDesc("debt_uncompacted_chunks", "L0 chunks as ingestion wrote them, not yet joined by any compaction."),
		maxTopic:    debtDesc("debt_max_topic_l0_chunks", "The most L0 chunks one topic has."),
		overTrigger: debtDesc("debt_topics_over_trigger", "Topics with at least the latest run's --min-chunks L0 chunks."),
		oldest:      debtDesc("debt_oldest_uncompacted_age_seconds", "Age of the oldest L0 chunk no compaction has joined yet (0 when there is none)."),
		ingested:    debtDesc("debt_ingested_bytes", "Object bytes ingestion appended to the catalog's topics, ever."),
		written:     debtDesc("debt_compaction_written_bytes", "Object bytes committed compactions wrote, ever."),
		amplification: debtDesc("debt_write_amplification",
			"Bytes written by committed compactions per byte ingested, ever (debt_compaction_written_bytes / debt_ingested_bytes)."),
	}
	r.register(c, "debt_up")
	r.names = append(r.names, Namespace+"_debt_topics", Namespace+"_debt_l0_chunks", Namespace+"_debt_l0_bytes",
		Namespace+"_debt_uncompacted_chunks", Namespace+"_debt_max_topic_l0_chunks", Namespace+"_debt_topics_over_trigger",
		Namespace+"_debt_oldest_uncompacted_age_seconds", Namespace+"_debt_ingested_bytes",
		Namespace+"_debt_compaction_written_bytes", Namespace+"_debt_write_amplification")
}

// Describe implements prometheus.Collector.
func (c *debtCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.topics, c.l0Chunks, c.l0Bytes, c.uncompacted, c.maxTopic,
		c.overTrigger, c.oldest, c.ingested, c.written, c.amplification} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *debtCollector) Collect(ch chan<- prometheus.Metric) {
	d, ok := c.measured()
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	if !ok {
		gauge(c.up, 0)
		return
	}
	gauge(c.up, 1)
	for _, s := range catalog.WriteStates {
		gauge(c.topics, float64(d.TopicsByState[s]), s)
	}
	gauge(c.l0Chunks, float64(d.L0Chunks))
	gauge(c.l0Bytes, float64(d.L0Bytes))
	gauge(c.uncompacted, float64(d.UncompactedChunks))
	gauge(c.maxTopic, float64(d.MaxTopicL0Chunks))
	gauge(c.overTrigger, float64(d.TopicsOverTrigger))
	gauge(c.oldest, d.OldestUncompactedAge.Seconds())
	gauge(c.ingested, float64(d.IngestedBytes))
	gauge(c.written, float64(d.CompactionWrittenBytes))
	gauge(c.amplification, d.WriteAmplification())
}

// measured returns the last measurement if it is fresh, else measures again.
func (c *debtCollector) measured() (catalog.DebtTotals, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lastAt.IsZero() && time.Since(c.lastAt) < DebtMaxAge {
		return c.last, c.lastOK
	}
	ctx, cancel := context.WithTimeout(context.Background(), DebtTimeout)
	defer cancel()
	d, err := c.measure(ctx)
	if err != nil {
		c.onError(err)
	}
	c.last, c.lastAt, c.lastOK = d, time.Now(), err == nil
	return d, c.lastOK
}
