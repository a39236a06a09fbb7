// Package app wires storeopt together: configuration from flags and environment variables, the
// Temporal client, the object store, the worker (RunWorker), one optimization pass (RunPass), the
// Temporal Schedule (EnsureSchedule), the catalog report and the read benchmark. The mains in
// worker/ and starter/ are thin shells around it, so everything here is callable from tests.
package app

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/workflows"
)

// Environment variables that give flags their defaults.
const (
	EnvTemporalAddress         = "TEMPORAL_ADDRESS"
	EnvTemporalNamespace       = "TEMPORAL_NAMESPACE"
	EnvTaskQueue               = "STOREOPT_TASK_QUEUE"
	EnvDatabaseURL             = "STOREOPT_DATABASE_URL"
	EnvStoreURL                = "STOREOPT_STORE_URL"
	EnvMemoryPoolSize          = "STOREOPT_MEMORY_POOL_SIZE"
	EnvMaxConcurrentActivities = "STOREOPT_MAX_CONCURRENT_ACTIVITIES"
	EnvLogLevel                = "STOREOPT_LOG_LEVEL"
	EnvQuarantineAfter         = "STOREOPT_QUARANTINE_AFTER"
	EnvMetricsAddress          = "STOREOPT_METRICS_ADDRESS"
	EnvWriteDelayL0Chunks      = "STOREOPT_WRITE_DELAY_L0_CHUNKS"
	EnvWriteStopL0Chunks       = "STOREOPT_WRITE_STOP_L0_CHUNKS"
	EnvWriteMaxDelay           = "STOREOPT_WRITE_MAX_DELAY"
)

// Defaults used when neither a flag nor its environment variable is set.
const (
	DefaultTemporalAddress = "127.0.0.1:7233"
	DefaultNamespace       = "default"
	DefaultDatabaseURL     = "postgres://postgres@127.0.0.1:5432/storeopt?sslmode=disable"
	// DefaultStoreDir is the directory (relative to the working directory) of the default
	// file:// store.
	DefaultStoreDir = "demo-data/store"
	// MinMemoryPoolBytes is the smallest memory pool a worker accepts (other than 0 = unlimited):
	// batches and row groups are sized from the pool, and in a pool of a few kilobytes they
	// shrink to single rows, which made a test topic's output 20 times larger than its input.
	MinMemoryPoolBytes = 16 << 20
	// DefaultMaxConcurrentActivities is the number of activities one worker runs at once. The
	// data-path activities are CPU and memory heavy, so the default is small.
	DefaultMaxConcurrentActivities = 4
)

// Config is the configuration shared by the worker and the starter.
type Config struct {
	// TemporalAddress is the host:port of the Temporal frontend (gRPC).
	TemporalAddress string
	// Namespace is the Temporal namespace.
	Namespace string
	// Temporal is the rest of the Temporal client's connection as the temporal CLI loads it
	// (LoadTemporalProfile): API key, TLS and mTLS certificates, gRPC metadata, authority. Its
	// Address and Namespace are not used: TemporalAddress and Namespace are. The zero value is a
	// plaintext connection without credentials.
	Temporal envconfig.ClientConfigProfile
	// TaskQueue is the task queue the worker polls and the starter starts workflows on.
	TaskQueue string
	// DatabaseURL is the PostgreSQL URL of the catalog (may hold a password: log it only through
	// RedactURL).
	DatabaseURL string
	// StoreURL is the gocloud.dev/blob URL of the object store: file:///dir, mem://, s3://bucket?….
	StoreURL string
	// MemoryPoolBytes caps the memory all activities of one worker use together, bytes;
	// 0 = unlimited.
	MemoryPoolBytes int64
	// MaxConcurrentActivities is the number of activities one worker executes at once; 0 = the
	// Temporal SDK default.
	MaxConcurrentActivities int
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// QuarantineAfter is how many consecutive failures of a topic with the same input or
	// verification error quarantine it (worker only, BindWorkerFlags); 0 =
	// catalog.DefaultQuarantineAfter (3).
	QuarantineAfter int
	// MetricsAddress is the host:port where the worker serves Prometheus metrics at /metrics
	// (worker only, BindWorkerFlags); "" = no metrics.
	MetricsAddress string
	// WriteSignal are the thresholds of the write signal ingestion polls (worker only,
	// BindWorkerFlags; docs/operations.md#the-write-signal), stored in the catalog at start; zero
	// fields = catalog.DefaultWriteThresholds'.
	WriteSignal catalog.WriteThresholds

	// temporalFlags are the parsed Temporal connection flags (BindFlags), applied by
	// LoadTemporalProfile.
	temporalFlags *temporalFlags
}

// DefaultStoreURL returns file://<absolute path of ./demo-data/store>.
func DefaultStoreURL() string {
	dir, err := filepath.Abs(DefaultStoreDir)
	if err != nil {
		dir = filepath.Join(os.TempDir(), "storeopt-store")
	}
	return "file://" + filepath.ToSlash(dir)
}

// BindFlags registers one flag per Config field on fs. Each flag's default comes from its
// environment variable (see the Env* constants) or, when that is unset or empty, from the
// Default* constants. A malformed numeric environment variable is reported by Validate. The
// Temporal connection (--temporal-address, --namespace, --profile, --config-file, --api-key,
// --tls*) is resolved after parsing by LoadTemporalProfile, from the flags given, the TEMPORAL_*
// variables and the temporal.toml profile, like the temporal CLI.
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	c.bindTemporalFlags(fs)
	fs.StringVar(&c.TaskQueue, "task-queue", envOr(EnvTaskQueue, workflows.TaskQueue),
		"Temporal task queue (env "+EnvTaskQueue+")")
	fs.StringVar(&c.DatabaseURL, "database-url", envOr(EnvDatabaseURL, DefaultDatabaseURL),
		"PostgreSQL URL of the catalog (env "+EnvDatabaseURL+")")
	fs.StringVar(&c.StoreURL, "store-url", envOr(EnvStoreURL, DefaultStoreURL()),
		"object store URL: file:///dir, mem://, s3://bucket?endpoint=… (env "+EnvStoreURL+")")
	fs.StringVar(&c.LogLevel, "log-level", envOr(EnvLogLevel, "info"),
		"log level: debug, info, warn, error (env "+EnvLogLevel+")")
}

// BindWorkerFlags registers the flags only the worker has (after BindFlags): memory pool,
// activity concurrency, quarantine threshold, metrics address. Without them the fields keep the
// defaults the worker would take (starter commands do not use them).
func (c *Config) BindWorkerFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&c.MemoryPoolBytes, "memory-pool-size", envInt64(EnvMemoryPoolSize, 0),
		"memory shared by a worker's activities, bytes; 0 = unlimited, else at least 16777216 (env "+EnvMemoryPoolSize+")")
	fs.IntVar(&c.MaxConcurrentActivities, "max-concurrent-activities",
		int(envInt64(EnvMaxConcurrentActivities, DefaultMaxConcurrentActivities)),
		"activities one worker runs at once; 0 = the Temporal SDK's default, 1000 (env "+EnvMaxConcurrentActivities+")")
	fs.IntVar(&c.QuarantineAfter, "quarantine-after", int(envInt64(EnvQuarantineAfter, catalog.DefaultQuarantineAfter)),
		"consecutive identical input or verification failures that quarantine a topic (env "+EnvQuarantineAfter+")")
	fs.StringVar(&c.MetricsAddress, "metrics-address", os.Getenv(EnvMetricsAddress),
		"host:port to serve Prometheus metrics on at /metrics, e.g. :9464; empty = no metrics (env "+EnvMetricsAddress+")")
	d := catalog.DefaultWriteThresholds
	fs.IntVar(&c.WriteSignal.DelayL0Chunks, "write-delay-l0-chunks", int(envInt64(EnvWriteDelayL0Chunks, int64(d.DelayL0Chunks))),
		"write signal: L0 chunks of a topic at which its writers are asked to slow down (env "+EnvWriteDelayL0Chunks+")")
	fs.IntVar(&c.WriteSignal.StopL0Chunks, "write-stop-l0-chunks", int(envInt64(EnvWriteStopL0Chunks, int64(d.StopL0Chunks))),
		"write signal: L0 chunks of a topic at which its writers are asked to stop (env "+EnvWriteStopL0Chunks+")")
	fs.DurationVar(&c.WriteSignal.MaxDelay, "write-max-delay", envDuration(EnvWriteMaxDelay, d.MaxDelay),
		"write signal: the delay asked of writers at the stop threshold (env "+EnvWriteMaxDelay+")")
}

// Validate reports the first invalid setting, including malformed numeric environment variables
// that BindFlags had to ignore.
func (c *Config) Validate() error {
	if v := os.Getenv(EnvWriteMaxDelay); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("%s=%q: not a duration (1s, 500ms)", EnvWriteMaxDelay, v)
		}
	}
	if err := c.writeSignal().Validate(); err != nil {
		return fmt.Errorf("--write-delay-l0-chunks, --write-stop-l0-chunks, --write-max-delay: %w", err)
	}
	for _, name := range []string{EnvMemoryPoolSize, EnvMaxConcurrentActivities, EnvQuarantineAfter, EnvWriteDelayL0Chunks, EnvWriteStopL0Chunks} {
		if v := os.Getenv(name); v != "" {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return fmt.Errorf("%s=%q: not an integer", name, v)
			}
		}
	}
	switch {
	case c.TemporalAddress == "":
		return fmt.Errorf("temporal address is empty (--temporal-address or %s)", EnvTemporalAddress)
	case c.Namespace == "":
		return fmt.Errorf("namespace is empty (--namespace or %s)", EnvTemporalNamespace)
	case c.TaskQueue == "":
		return fmt.Errorf("task queue is empty (--task-queue or %s)", EnvTaskQueue)
	case c.DatabaseURL == "":
		return fmt.Errorf("database URL is empty (--database-url or %s)", EnvDatabaseURL)
	case c.StoreURL == "":
		return fmt.Errorf("store URL is empty (--store-url or %s)", EnvStoreURL)
	case c.MemoryPoolBytes < 0:
		return fmt.Errorf("memory pool size %d bytes is negative (0 = unlimited)", c.MemoryPoolBytes)
	case c.MemoryPoolBytes > 0 && c.MemoryPoolBytes < MinMemoryPoolBytes:
		return fmt.Errorf("memory pool size %d bytes is too small: at least %d (16 MiB), or 0 = unlimited (in a tiny pool row groups shrink to a few rows and the output grows many times larger)",
			c.MemoryPoolBytes, MinMemoryPoolBytes)
	case c.MaxConcurrentActivities < 0:
		return fmt.Errorf("max concurrent activities %d is negative", c.MaxConcurrentActivities)
	case c.QuarantineAfter < 0:
		return fmt.Errorf("quarantine after %d failures: want 1 or more (or 0 for the default, %d)", c.QuarantineAfter, catalog.DefaultQuarantineAfter)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if _, err := c.TemporalClientOptions(); err != nil {
		return err
	}
	return c.validateMetricsAddress()
}

// validateMetricsAddress checks that MetricsAddress is empty or host:port with a numeric port
// (the host may be empty: all interfaces).
func (c *Config) validateMetricsAddress() error {
	if c.MetricsAddress == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(c.MetricsAddress)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("metrics address %q (--metrics-address or %s): want host:port, e.g. :9464 or 127.0.0.1:9464 (%v)",
			c.MetricsAddress, EnvMetricsAddress, err)
	}
	return nil
}

// NewLogger returns a text slog.Logger on stderr at c.LogLevel (info when invalid).
func (c *Config) NewLogger() *slog.Logger { return c.NewLoggerTo(os.Stderr) }

// NewLoggerTo returns a text slog.Logger writing to w at c.LogLevel (info when invalid).
func (c *Config) NewLoggerTo(w io.Writer) *slog.Logger {
	level, err := parseLevel(c.LogLevel)
	if err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.TrimSpace(s))); err != nil {
		return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt64(name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return def // reported by Validate
	}
	return n
}

// writeSignal returns the write signal's thresholds, zero fields replaced by the defaults.
func (c *Config) writeSignal() catalog.WriteThresholds {
	th, d := c.WriteSignal, catalog.DefaultWriteThresholds
	if th.DelayL0Chunks == 0 && th.StopL0Chunks == 0 {
		th.DelayL0Chunks, th.StopL0Chunks = d.DelayL0Chunks, d.StopL0Chunks
	}
	if th.MaxDelay == 0 {
		th.MaxDelay = d.MaxDelay
	}
	return th
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}
