package metrics

import (
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.temporal.io/sdk/client"
	sdktally "go.temporal.io/sdk/contrib/tally"

	"github.com/storeopt/storeopt/mempool"
	"github.com/storeopt/storeopt/policy"
	"github.com/storeopt/storeopt/store"
)

// Namespace is the prefix of storeopt's own metric names.
const Namespace = "storeopt"

// Policies are the policy label values whose series exist from the start (at 0), so that rate()
// and increase() see the first optimization of each policy: the policies a compaction applies
// (auto is resolved to tiered or leveled for each topic).
var Policies = resolvedPolicies()

func resolvedPolicies() []string {
	var names []string
	for _, c := range policy.All {
		if c.Resolved() {
			names = append(names, string(c.Name()))
		}
	}
	return names
}

// StepBuckets are the upper bounds of storeopt_step_duration_seconds, seconds: a lease takes
// milliseconds, a write of a 256 MB chunk tens of seconds, a read-sort of thousands of chunks
// minutes.
var StepBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// SDKReportInterval is how often the Temporal SDK's metrics (kept by tally) are copied into the
// Prometheus registry: a scrape sees them at most this late.
const SDKReportInterval = time.Second

// Registry is one Prometheus registry with storeopt's metrics, the store's byte counters, Go
// runtime and process metrics and, through TemporalHandler, the Temporal SDK's metrics. It
// implements Recorder. Safe for concurrent use.
type Registry struct {
	reg   *prometheus.Registry
	names []string // metric family names of storeopt's own metrics, in registration order

	optimized, quarantined          *prometheus.CounterVec // {policy}
	failed                          *prometheus.CounterVec // {policy, error_type}
	skipped                         *prometheus.CounterVec // {policy, reason}
	inputChunks, outputChunks, rows *prometheus.CounterVec // {policy}
	inputBytes, outputBytes         *prometheus.CounterVec // {policy}
	steps                           *prometheus.HistogramVec
	cleanupDeleted, cleanupFailed   *prometheus.CounterVec // {kind}
	writtenChunks, writtenBytes     *prometheus.CounterVec // {path}
	temporal                        client.MetricsHandler
	temporalCloser                  io.Closer
	onRegisterError                 func(error)
}

// NewRegistry returns a Registry with every storeopt metric registered (the known label
// combinations at 0). onError receives the errors of the Temporal SDK's metrics that could not
// be registered (a name used with two label sets); nil ignores them.
func NewRegistry(onError func(error)) *Registry {
	if onError == nil {
		onError = func(error) {}
	}
	r := &Registry{reg: prometheus.NewRegistry(), onRegisterError: onError}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	r.optimized = r.counterVec("topics_optimized_total", "Topics optimized (committed), by policy.", "policy")
	r.failed = r.counterVec("topics_failed_total",
		"Topic optimizations that failed or were canceled (the lease released), by policy and error type.", "policy", "error_type")
	r.skipped = r.counterVec("topics_skipped_total",
		"Topics a run left alone: optimized or quarantined by another run since the run listed them, or nothing to do for the policy.",
		"policy", "reason")
	r.quarantined = r.counterVec("topics_quarantined_total", "Topics quarantined by a failure, by policy.", "policy")
	r.inputChunks = r.counterVec("input_chunks_total", "Chunks replaced by committed optimizations.", "policy")
	r.outputChunks = r.counterVec("output_chunks_total", "Chunks written by committed optimizations.", "policy")
	r.rows = r.counterVec("rows_total", "Rows rewritten by committed optimizations.", "policy")
	r.inputBytes = r.counterVec("input_bytes_total", "Object bytes of the chunks replaced by committed optimizations.", "policy")
	r.outputBytes = r.counterVec("output_bytes_total", "Object bytes of the chunks written by committed optimizations.", "policy")
	r.steps = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "step_duration_seconds",
		Help:    "Duration of one execution (attempt) of an optimization step: lease, read-sort, write-chunks (one output group), commit.",
		Buckets: StepBuckets,
	}, []string{"step", "outcome"})
	r.register(r.steps, "step_duration_seconds")
	r.cleanupDeleted = r.counterVec("cleanup_deleted_total",
		"What cleanup deleted: prefixes, objects of those prefixes, temporary files, aborted uploads, replaced objects.", "kind")
	r.cleanupFailed = r.counterVec("cleanup_failed_total", "What cleanup failed to delete (retried by a later pass), by kind.", "kind")
	r.writtenChunks = r.counterVec("written_chunks_total",
		"Output chunks written and read back by write-chunks steps (also of optimizations that failed later), by path: rewritten, or assembled from the inputs' pages by the copy path.", "path")
	r.writtenBytes = r.counterVec("written_arrow_bytes_total", "Arrow bytes of the rows of the output chunks written, by path.", "path")
	r.counterFunc("bytes_read_total", "Bytes this process read from the object store.", store.BytesRead)
	r.counterFunc("bytes_written_total", "Bytes of the objects this process wrote to the object store.", store.BytesWritten)

	for _, p := range Policies {
		for _, v := range []*prometheus.CounterVec{r.optimized, r.quarantined, r.inputChunks, r.outputChunks, r.rows, r.inputBytes, r.outputBytes} {
			v.WithLabelValues(p)
		}
		for _, reason := range SkipReasons {
			r.skipped.WithLabelValues(p, reason)
		}
	}
	for _, s := range Steps {
		for _, o := range []string{OutcomeOK, OutcomeError} {
			r.steps.WithLabelValues(s, o)
		}
	}
	for _, k := range CleanupKinds {
		r.cleanupDeleted.WithLabelValues(k)
		r.cleanupFailed.WithLabelValues(k)
	}
	for _, p := range WritePaths {
		r.writtenChunks.WithLabelValues(p)
		r.writtenBytes.WithLabelValues(p)
	}
	return r
}

func (r *Registry) register(c prometheus.Collector, name string) {
	r.reg.MustRegister(c)
	r.names = append(r.names, Namespace+"_"+name)
}

func (r *Registry) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	r.register(v, name)
	return v
}

func (r *Registry) counterFunc(name, help string, f func() int64) {
	r.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help},
		func() float64 { return float64(f()) }), name)
}

func (r *Registry) gaugeFunc(name, help string, f func() int64) {
	r.register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help},
		func() float64 { return float64(f()) }), name)
}

// WatchPool adds the gauges of the worker's memory pool p: storeopt_memory_pool_limit_bytes (0 =
// unlimited), storeopt_memory_pool_reserved_bytes (reserved by running work) and
// storeopt_memory_pool_in_use_bytes (Arrow buffers allocated through the pool). Call it once.
func (r *Registry) WatchPool(p *mempool.Pool) {
	r.gaugeFunc("memory_pool_limit_bytes", "Size of the worker's memory pool, bytes (0 = unlimited).", p.Limit)
	r.gaugeFunc("memory_pool_reserved_bytes", "Bytes of the memory pool reserved by running activities.", p.Reserved)
	r.gaugeFunc("memory_pool_in_use_bytes", "Bytes of Arrow buffers allocated through the memory pool and not freed.", p.Allocator().InUse)
}

// Names returns the metric family names of storeopt's own metrics registered so far (without the
// _bucket, _sum and _count series names of the histogram), sorted.
func (r *Registry) Names() []string {
	out := slices.Clone(r.names)
	slices.Sort(out)
	return out
}

// Gatherer returns the registry, for tests and for serving it yourself.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler returns the HTTP handler of /metrics: every metric of the registry in Prometheus' text
// format (or OpenMetrics when the scraper asks for it).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg, EnableOpenMetrics: true})
}

// TemporalHandler returns the Temporal SDK metrics handler for client.Options.MetricsHandler:
// the SDK's metrics (temporal_…, names as the SDK's Prometheus conventions have them: counters
// _total, timers _seconds histograms) reported into this registry every SDKReportInterval. The
// first call creates it; Close flushes and stops it.
func (r *Registry) TemporalHandler() client.MetricsHandler {
	if r.temporal != nil {
		return r.temporal
	}
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:       r.reg,
		DefaultTimerType: tallyprom.HistogramTimerType,
		OnRegisterError:  r.onRegisterError,
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
		// tally's own tally_internal_*_cardinality gauges are about tally, not the worker (and
		// break Prometheus' naming rules: promtool check metrics refuses them).
		OmitCardinalityMetrics: true,
	}, SDKReportInterval)
	r.temporal = sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope))
	r.temporalCloser = closer
	return r.temporal
}

// Close reports the Temporal SDK's last metrics into the registry and stops reporting them.
func (r *Registry) Close() error {
	if r.temporalCloser == nil {
		return nil
	}
	return r.temporalCloser.Close()
}

// TopicOptimized implements Recorder.
func (r *Registry) TopicOptimized(o Optimization) {
	r.optimized.WithLabelValues(o.Policy).Inc()
	r.inputChunks.WithLabelValues(o.Policy).Add(float64(o.InputChunks))
	r.outputChunks.WithLabelValues(o.Policy).Add(float64(o.OutputChunks))
	r.rows.WithLabelValues(o.Policy).Add(float64(o.Rows))
	r.inputBytes.WithLabelValues(o.Policy).Add(float64(o.InputBytes))
	r.outputBytes.WithLabelValues(o.Policy).Add(float64(o.OutputBytes))
}

// ChunksWritten implements Recorder.
func (r *Registry) ChunksWritten(path string, chunks int, arrowBytes int64) {
	r.writtenChunks.WithLabelValues(path).Add(float64(chunks))
	r.writtenBytes.WithLabelValues(path).Add(float64(arrowBytes))
}

// TopicFailed implements Recorder.
func (r *Registry) TopicFailed(policy, errorType string) {
	r.failed.WithLabelValues(policy, errorType).Inc()
}

// TopicSkipped implements Recorder.
func (r *Registry) TopicSkipped(policy, reason string) {
	r.skipped.WithLabelValues(policy, reason).Inc()
}

// TopicQuarantined implements Recorder.
func (r *Registry) TopicQuarantined(policy string) {
	r.quarantined.WithLabelValues(policy).Inc()
}

// StepFinished implements Recorder.
func (r *Registry) StepFinished(step string, d time.Duration, err error) {
	outcome := OutcomeOK
	if err != nil {
		outcome = OutcomeError
	}
	r.steps.WithLabelValues(step, outcome).Observe(d.Seconds())
}

// CleanupDone implements Recorder.
func (r *Registry) CleanupDone(kind string, deleted, failed int) {
	r.cleanupDeleted.WithLabelValues(kind).Add(float64(max(deleted, 0)))
	r.cleanupFailed.WithLabelValues(kind).Add(float64(max(failed, 0)))
}
