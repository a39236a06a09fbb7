package app

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/workflows"
)

// parse parses args with the worker's flags (BindFlags and BindWorkerFlags) and loads the
// Temporal profile, as the worker command does. The result has no parsed flags attached, so that
// it compares with a Config literal.
func parse(t *testing.T, args ...string) Config {
	t.Helper()
	cfg, err := tryParse(args...)
	if err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return cfg
}

func tryParse(args ...string) (Config, error) {
	var cfg Config
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	cfg.BindFlags(fs)
	cfg.BindWorkerFlags(fs)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	err := cfg.LoadTemporalProfile()
	cfg.temporalFlags = nil
	return cfg, err
}

// clearEnv empties every variable the configuration reads, and points TEMPORAL_CONFIG_FILE at a
// file that does not exist (the developer's own temporal.toml must not leak into tests).
func clearEnv(t *testing.T) {
	for _, name := range []string{EnvTemporalAddress, EnvTemporalNamespace, EnvTaskQueue, EnvDatabaseURL,
		EnvStoreURL, EnvMemoryPoolSize, EnvMaxConcurrentActivities, EnvLogLevel, EnvQuarantineAfter, EnvMetricsAddress,
		EnvWriteDelayL0Chunks, EnvWriteStopL0Chunks, EnvWriteMaxDelay,
		EnvTemporalAPIKey, EnvTemporalTLS, EnvTemporalTLSCert, EnvTemporalTLSKey, EnvTemporalTLSCA,
		EnvTemporalTLSServerName, EnvTemporalProfile, "TEMPORAL_TLS_CLIENT_CERT_DATA", "TEMPORAL_TLS_CLIENT_KEY_DATA",
		"TEMPORAL_TLS_SERVER_CA_CERT_DATA", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION", "TEMPORAL_CLIENT_AUTHORITY"} {
		t.Setenv(name, "")
	}
	t.Setenv(EnvTemporalConfigFile, filepath.Join(t.TempDir(), "none.toml"))
}

func TestConfigDefaults(t *testing.T) {
	clearEnv(t)
	cfg := parse(t)
	want := Config{
		TemporalAddress:         DefaultTemporalAddress,
		Namespace:               DefaultNamespace,
		TaskQueue:               workflows.TaskQueue,
		DatabaseURL:             DefaultDatabaseURL,
		StoreURL:                DefaultStoreURL(),
		MaxConcurrentActivities: DefaultMaxConcurrentActivities,
		LogLevel:                "info",
		QuarantineAfter:         3,
		WriteSignal:             catalog.DefaultWriteThresholds,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
	if !strings.HasPrefix(cfg.StoreURL, "file:///") || !strings.HasSuffix(cfg.StoreURL, "/demo-data/store") {
		t.Errorf("default store URL %q: want file://<abs>/demo-data/store", cfg.StoreURL)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestConfigFromEnvironmentAndFlags(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvTemporalAddress, "temporal:7233")
	t.Setenv(EnvTemporalNamespace, "prod")
	t.Setenv(EnvTaskQueue, "q")
	t.Setenv(EnvDatabaseURL, "postgres://db/cat")
	t.Setenv(EnvStoreURL, "mem://")
	t.Setenv(EnvMemoryPoolSize, "1073741824")
	t.Setenv(EnvMaxConcurrentActivities, "8")
	t.Setenv(EnvWriteStopL0Chunks, "300")
	t.Setenv(EnvWriteMaxDelay, "250ms")
	cfg := parse(t, "--namespace", "flag-wins", "--memory-pool-size", "20000000", "--write-delay-l0-chunks", "40")
	want := Config{
		TemporalAddress: "temporal:7233", Namespace: "flag-wins", TaskQueue: "q",
		DatabaseURL: "postgres://db/cat", StoreURL: "mem://", MemoryPoolBytes: 20000000,
		MaxConcurrentActivities: 8, LogLevel: "info", QuarantineAfter: 3,
		WriteSignal: catalog.WriteThresholds{DelayL0Chunks: 40, StopL0Chunks: 300, MaxDelay: 250 * time.Millisecond},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("\n got %+v\nwant %+v", cfg, want)
	}
}

func TestConfigValidate(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvMemoryPoolSize, "1GB")
	cfg := parse(t)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), EnvMemoryPoolSize) {
		t.Errorf("malformed %s: error %v, want one naming the variable", EnvMemoryPoolSize, err)
	}
	t.Setenv(EnvMemoryPoolSize, "")
	for name, mutate := range map[string]func(*Config){
		"negative pool":  func(c *Config) { c.MemoryPoolBytes = -1 },
		"tiny pool":      func(c *Config) { c.MemoryPoolBytes = 1000 },
		"empty queue":    func(c *Config) { c.TaskQueue = "" },
		"empty database": func(c *Config) { c.DatabaseURL = "" },
		"bad log level":  func(c *Config) { c.LogLevel = "loud" },
	} {
		c := parse(t)
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

func TestQuarantineAfterIsAWorkerSetting(t *testing.T) {
	clearEnv(t)
	worker := func(args ...string) Config { return parse(t, args...) }
	if got := worker().QuarantineAfter; got != 3 {
		t.Errorf("default %d, want 3", got)
	}
	if got := worker("--quarantine-after", "5").QuarantineAfter; got != 5 {
		t.Errorf("flag: %d, want 5", got)
	}
	t.Setenv(EnvQuarantineAfter, "7")
	if got := worker().QuarantineAfter; got != 7 {
		t.Errorf("environment: %d, want 7", got)
	}
	var starter Config
	fs := pflag.NewFlagSet("starter", pflag.ContinueOnError)
	starter.BindFlags(fs)
	for _, name := range []string{"quarantine-after", "memory-pool-size", "max-concurrent-activities", "metrics-address"} {
		if fs.Lookup(name) != nil {
			t.Errorf("the starter has the worker's flag --%s", name)
		}
	}
	cfg := worker("--quarantine-after", "-1")
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "quarantine") {
		t.Errorf("negative threshold: %v", err)
	}
	t.Setenv(EnvQuarantineAfter, "three")
	cfg = worker()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), EnvQuarantineAfter) {
		t.Errorf("malformed environment: %v", err)
	}
}

func TestMetricsAddress(t *testing.T) {
	clearEnv(t)
	if got := parse(t).MetricsAddress; got != "" {
		t.Errorf("default %q, want empty (no metrics)", got)
	}
	t.Setenv(EnvMetricsAddress, ":9464")
	if got := parse(t).MetricsAddress; got != ":9464" {
		t.Errorf("environment: %q, want :9464", got)
	}
	if got := parse(t, "--metrics-address", "127.0.0.1:9100").MetricsAddress; got != "127.0.0.1:9100" {
		t.Errorf("flag over environment: %q, want 127.0.0.1:9100", got)
	}
	for _, addr := range []string{":9464", "127.0.0.1:0", "[::1]:9464", "worker:9464"} {
		cfg := parse(t, "--metrics-address", addr)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q refused: %v", addr, err)
		}
	}
	for _, addr := range []string{"9464", "localhost", ":http-alt", ":70000"} {
		cfg := parse(t, "--metrics-address", addr)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "--metrics-address") || !strings.Contains(err.Error(), EnvMetricsAddress) {
			t.Errorf("%q: %v, want an error naming the flag and %s", addr, err, EnvMetricsAddress)
		}
	}
}
