package app

import (
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/metrics"
)

// Metrics is a worker's Prometheus metrics: one registry (storeopt's metrics, the Temporal SDK's,
// Go runtime and process metrics) served over HTTP at /metrics. Pass it to Dial and RunWorker
// with WithMetrics. A nil *Metrics is metrics off: its methods do nothing.
type Metrics struct {
	Registry *metrics.Registry
	server   *metrics.Server
}

// StartMetrics serves a new metrics registry at cfg.MetricsAddress (host:port) and returns it, or
// nil when cfg.MetricsAddress is empty. It fails when the address cannot be listened on. Close
// stops it.
func StartMetrics(cfg Config, logger *slog.Logger) (*Metrics, error) {
	if cfg.MetricsAddress == "" {
		return nil, nil
	}
	if err := cfg.validateMetricsAddress(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	reg := metrics.NewRegistry(func(err error) {
		logger.Warn("A Temporal SDK metric is not exported", "error", err)
	})
	srv, err := metrics.Listen(cfg.MetricsAddress, reg, logger)
	if err != nil {
		_ = reg.Close()
		return nil, err
	}
	logger.Info("Serving Prometheus metrics", "url", srv.URL())
	return &Metrics{Registry: reg, server: srv}, nil
}

// URL returns the URL of the metrics ("" when m is nil).
func (m *Metrics) URL() string {
	if m == nil {
		return ""
	}
	return m.server.URL()
}

// Close stops serving the metrics and the reporting of the Temporal SDK's metrics. Call it after
// the worker and the client are closed.
func (m *Metrics) Close() error {
	if m == nil {
		return nil
	}
	err := m.server.Close()
	if cerr := m.Registry.Close(); err == nil {
		err = cerr
	}
	return err
}

// Option configures Dial and RunWorker.
type Option func(*options)

type options struct {
	metrics *Metrics
}

// WithMetrics makes Dial report the Temporal SDK's metrics into m, and RunWorker record
// storeopt's metrics (topics, steps, cleanup, memory pool) into m. A nil m changes nothing.
func WithMetrics(m *Metrics) Option {
	return func(o *options) { o.metrics = m }
}

func applyOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// metricsHandler returns the client's SDK metrics handler (nil: the SDK's default, none).
func (o options) metricsHandler() client.MetricsHandler {
	if o.metrics == nil {
		return nil
	}
	return o.metrics.Registry.TemporalHandler()
}

// recorder returns where activities record storeopt's metrics.
func (o options) recorder() metrics.Recorder {
	if o.metrics == nil {
		return metrics.Nop{}
	}
	return o.metrics.Registry
}
