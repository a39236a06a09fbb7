// Package testenv gives integration tests the real parts of a storeopt deployment: a Temporal
// dev server (the CLI binary built by scripts/temporal-cli.sh), a file:// object store in a
// temporary directory, a real S3 server (the Versity S3 gateway built by scripts/versitygw.sh)
// and a worker running app.RunWorker. For a catalog database use
// internal/pgtest.
//
// Missing infrastructure skips a test, unless $CI is set: then it fails, so CI never passes by
// skipping everything.
package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/workflows"
)

// EnvTemporalCLI names the Temporal CLI binary; scripts/test.sh sets it.
const EnvTemporalCLI = "STOREOPT_TEMPORAL_CLI"

// CachedCLIPath returns where scripts/temporal-cli.sh caches the CLI:
// ${STOREOPT_CACHE:-$HOME/.cache/storeopt}/bin/temporal.
func CachedCLIPath() string { return cachedPath("temporal") }

// cachedPath returns ${STOREOPT_CACHE:-$HOME/.cache/storeopt}/bin/<name>, where the scripts cache
// the binaries they build.
func cachedPath(name string) string {
	dir := os.Getenv("STOREOPT_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".cache", "storeopt")
	}
	return filepath.Join(dir, "bin", name)
}

// TemporalCLI returns the path of the Temporal CLI binary: $STOREOPT_TEMPORAL_CLI, else
// CachedCLIPath. When neither is an executable file the test is skipped (failed when $CI is set)
// with a message saying how to build it.
func TemporalCLI(t testing.TB) string {
	t.Helper()
	return cachedBinary(t, EnvTemporalCLI, "temporal", "scripts/temporal-cli.sh")
}

// EnvTemporalSQLTool names the temporal-sql-tool binary; scripts/test.sh sets it.
const EnvTemporalSQLTool = "STOREOPT_TEMPORAL_SQL_TOOL"

// TemporalSQLTool returns the path of temporal-sql-tool (Temporal's schema tool, the one of
// docker-compose.yml's admin-tools image): $STOREOPT_TEMPORAL_SQL_TOOL, else
// ${STOREOPT_CACHE:-$HOME/.cache/storeopt}/bin/temporal-sql-tool (scripts/temporal-sql-tool.sh
// builds it); skipped, or failed when $CI is set, without it.
func TemporalSQLTool(t testing.TB) string {
	t.Helper()
	return cachedBinary(t, EnvTemporalSQLTool, "temporal-sql-tool", "scripts/temporal-sql-tool.sh")
}

// EnvPromtool names the promtool binary (Prometheus' checker); scripts/test.sh sets it.
const EnvPromtool = "STOREOPT_PROMTOOL"

// Promtool returns the path of promtool: $STOREOPT_PROMTOOL, else the copy scripts/promtool.sh
// caches. When neither is an executable file the test is skipped (failed when $CI is set).
func Promtool(t testing.TB) string {
	t.Helper()
	return cachedBinary(t, EnvPromtool, "promtool", "scripts/promtool.sh")
}

// cachedBinary returns $<envVar>, else cachedPath(name), when it is an executable file; else it
// skips the test (fails it when $CI is set), saying that script builds it.
func cachedBinary(t testing.TB, envVar, name, script string) string {
	t.Helper()
	path := os.Getenv(envVar)
	if path == "" {
		path = cachedPath(name)
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
		return path
	}
	Missing(t, name+" not found at "+path+" (run "+script+", or set "+envVar+")")
	return ""
}

// Missing skips the test because msg (some infrastructure or test data is missing), or fails it
// when $CI is set: CI never passes by skipping.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("testenv: %s; CI is set, so this is a failure", msg)
	}
	t.Skipf("testenv: %s; skipping (with CI set this fails)", msg)
}

// DevServer is a Temporal dev server started for one test.
type DevServer struct {
	// Client is connected to the server's "default" namespace.
	Client client.Client
	// Address is the server's frontend host:port.
	Address string
}

// Config returns an app.Config pointing at this server, with the given catalog database and
// store URLs and the default task queue.
func (s *DevServer) Config(databaseURL, storeURL string) app.Config {
	return app.Config{
		TemporalAddress:         s.Address,
		Namespace:               "default",
		TaskQueue:               workflows.TaskQueue,
		DatabaseURL:             databaseURL,
		StoreURL:                storeURL,
		MaxConcurrentActivities: app.DefaultMaxConcurrentActivities,
		LogLevel:                "warn",
	}
}

// StartDevServer starts an in-memory Temporal dev server on a free port with the
// StoreoptTopicLocator search attribute registered, and stops it when the test ends. Server
// output goes to the test log only when the test fails (and -v is not needed).
func StartDevServer(t testing.TB) *DevServer {
	t.Helper()
	path := TemporalCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &lockedBuffer{}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: path,
		LogLevel:     "error",
		ClientOptions: &client.Options{
			Namespace: "default",
			Logger:    tlog.NewStructuredLogger(TestLogger(t)),
		},
		SearchAttributes: temporal.NewSearchAttributes(workflows.TopicLocatorKey.ValueSet("")),
		Stdout:           out,
		Stderr:           out,
	})
	if err != nil {
		t.Fatalf("testenv: start Temporal dev server (%s): %v\n%s", path, err, out.String())
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Logf("testenv: stop Temporal dev server: %v", err)
		}
		if t.Failed() {
			t.Logf("testenv: Temporal dev server output:\n%s", out.String())
		}
	})
	return &DevServer{Client: srv.Client(), Address: srv.FrontendHostPort()}
}

// NewBucket opens a file:// store in a fresh temporary directory (removed when the test ends)
// and returns it with its URL.
func NewBucket(t testing.TB) (*blob.Bucket, string) {
	t.Helper()
	return openBucket(t, t.TempDir())
}

// openBucket opens the file:// store in dir, closed when the test ends.
func openBucket(t testing.TB, dir string) (*blob.Bucket, string) {
	t.Helper()
	storeURL := "file://" + filepath.ToSlash(dir)
	b, err := app.OpenStore(context.Background(), storeURL)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, storeURL
}

// CrossDeviceDir returns a fresh directory, removed when the test ends, on another filesystem
// than os.TempDir() (where gocloud's fileblob writes temporary files unless told otherwise): the
// first of /dev/shm (a tmpfs on Linux), /tmp and /var/tmp that is on another device. Without one
// the test is skipped (failed when $CI is set).
func CrossDeviceDir(t testing.TB) string {
	t.Helper()
	tmp, err := deviceOf(os.TempDir())
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for _, root := range []string{"/dev/shm", "/tmp", "/var/tmp"} {
		if dev, err := deviceOf(root); err != nil || dev == tmp {
			continue
		}
		dir, err := os.MkdirTemp(root, "storeopt-xdev-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	Missing(t, "no directory on another filesystem than "+os.TempDir()+" (tried /dev/shm, /tmp, /var/tmp)")
	return ""
}

// deviceOf returns the ID of the device (filesystem) holding path.
func deviceOf(path string) (uint64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("no device ID for %s on this system", path)
	}
	return uint64(sys.Dev), nil
}

// NewCrossDeviceBucket is NewBucket with the store in CrossDeviceDir: another filesystem than
// the temporary directory.
func NewCrossDeviceBucket(t testing.TB) (*blob.Bucket, string) {
	t.Helper()
	return openBucket(t, CrossDeviceDir(t))
}

// ReadOnlyDir makes dir (and everything under it) unwritable until the test ends, in a way root
// cannot write through either: with CAP_SYS_ADMIN (root on this machine) a read-only bind mount
// of dir over itself, so writes fail with EROFS ("read-only file system"), as on a filesystem
// mounted read-only; without it (not root), mode 0555 on every directory, so writes fail with
// EACCES ("permission denied"). It returns what writes will fail with. When neither works (root
// without mount rights, where modes do not stop writes) the test is skipped (failed when $CI is
// set).
func ReadOnlyDir(t testing.TB, dir string) syscall.Errno {
	t.Helper()
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err == nil {
		t.Cleanup(func() {
			if err := syscall.Unmount(dir, 0); err != nil {
				t.Errorf("testenv: unmount the read-only bind mount %s: %v", dir, err)
			}
		})
		if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			t.Fatalf("testenv: remount %s read-only: %v", dir, err)
		}
		return syscall.EROFS
	}
	if os.Geteuid() == 0 {
		Missing(t, "cannot make "+dir+" read-only: root without CAP_SYS_ADMIN ignores file modes and cannot mount")
		return 0
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatalf("testenv: %v", err)
		}
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			_ = os.Chmod(d, 0o755)
		}
	})
	return syscall.EACCES
}

// StartWorker runs app.RunWorker with cfg and c in a goroutine. stop cancels it, waits for it
// to return (at most app.WorkerStopTimeout plus a margin) and returns its error; it is also
// called when the test ends, failing the test if the worker returned an error that stop's caller
// did not see. A worker that fails before stop is called fails the test from the cleanup.
func StartWorker(t testing.TB, c client.Client, cfg app.Config) (stop func() error) {
	t.Helper()
	return startWorker(t, c, cfg)
}

// StartWorkerWithMetrics is StartWorker with Prometheus metrics: it serves them at
// cfg.MetricsAddress (127.0.0.1 on a free port when empty) and runs the worker with a client of
// its own, dialed to cfg.TemporalAddress with the metrics (app.WithMetrics), so the Temporal SDK's
// metrics are served too. It returns the metrics URL (http://host:port/metrics).
func StartWorkerWithMetrics(t testing.TB, cfg app.Config) (url string, stop func() error) {
	t.Helper()
	if cfg.MetricsAddress == "" {
		cfg.MetricsAddress = "127.0.0.1:0"
	}
	logger := TestLogger(t)
	m, err := app.StartMetrics(cfg, logger)
	if err != nil {
		t.Fatalf("testenv: start metrics: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := app.Dial(ctx, cfg, logger, app.WithMetrics(m))
	if err != nil {
		_ = m.Close()
		t.Fatalf("testenv: dial %s: %v", cfg.TemporalAddress, err)
	}
	t.Cleanup(func() { // after the worker's own cleanup, registered below
		c.Close()
		if err := m.Close(); err != nil {
			t.Errorf("testenv: close metrics: %v", err)
		}
	})
	return m.URL(), startWorker(t, c, cfg, app.WithMetrics(m))
}

func startWorker(t testing.TB, c client.Client, cfg app.Config, opts ...app.Option) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.RunWorker(ctx, cfg, c, TestLogger(t), opts...) }()
	var (
		once   sync.Once
		result error
	)
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(app.WorkerStopTimeout + 10*time.Second):
				result = errors.New("testenv: worker did not stop")
			}
		})
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("testenv: worker: %v", err)
		}
	})
	return stop
}

// TestLogger returns a slog.Logger writing to t.Log at warn level and above (debug with
// $STOREOPT_TEST_LOG=debug). Records logged after the cleanups registered before this call
// have run (background goroutines of a closing client) are dropped instead of panicking.
func TestLogger(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("STOREOPT_TEST_LOG") == "debug" {
		level = slog.LevelDebug
	}
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

type testWriter struct {
	t      testing.TB
	mu     sync.Mutex
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// lockedBuffer collects the dev server's output from two pipes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

var _ io.Writer = (*lockedBuffer)(nil)

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
