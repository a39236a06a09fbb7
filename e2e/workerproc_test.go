package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
)

// newIsolatedEnv gives one test or scenario its own catalog database, store directory and task
// queue on a shared dev server, so scenarios can run side by side on one server: workers of one
// scenario never see another's tasks.
func newIsolatedEnv(t *testing.T, srv *testenv.DevServer, taskQueue string) *env {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	cat, err := catalog.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cat.Close)
	b, storeURL := testenv.NewBucket(t)
	cfg := srv.Config(dbURL, storeURL)
	cfg.TaskQueue = taskQueue
	return &env{srv: srv, cat: cat, b: b, cfg: cfg}
}

// faultStoreURL is e's store seen through the fault store (faults.StoreScheme): the same
// directory, with the store.read and store.write points.
func (e *env) faultStoreURL() string {
	return strings.Replace(e.cfg.StoreURL, "file://", faults.StoreScheme+"://", 1)
}

// procLog collects the output of worker processes.
type procLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// faultHit reports whether a worker logged that the fault at point acted.
func (l *procLog) faultHit(point string) bool {
	return strings.Contains(l.String(), faults.LogPrefix+point+"=")
}

// workerProc is one worker process (the worker command built with fault injection).
type workerProc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when the process has exited
	err     error         // exit error, valid once done is closed
	exited  time.Time
}

// startWorkerProc runs the worker command for e (its Temporal server, database and task queue,
// the fault store over its store directory) with STOREOPT_FAULTS=faultSpec; output goes to log.
// The process is killed when the test ends.
func startWorkerProc(t *testing.T, e *env, faultSpec string, log *procLog) *workerProc {
	t.Helper()
	p, err := launchWorker(e, faultSpec, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	return p
}

// launchWorker is startWorkerProc without a test: the caller kills the process.
func launchWorker(e *env, faultSpec string, log *procLog) (*workerProc, error) {
	bin, err := buildWorker()
	if err != nil {
		return nil, fmt.Errorf("build worker: %v", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		app.EnvTemporalAddress+"="+e.cfg.TemporalAddress,
		app.EnvDatabaseURL+"="+e.cfg.DatabaseURL,
		app.EnvStoreURL+"="+e.faultStoreURL(),
		app.EnvTaskQueue+"="+e.cfg.TaskQueue,
		app.EnvLogLevel+"=warn",
		faults.EnvVar+"="+faultSpec)
	cmd.Env = append(cmd.Env, e.procEnv...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start worker: %v", err)
	}
	p := &workerProc{cmd: cmd, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		p.exited = time.Now()
		close(p.done)
	}()
	return p, nil
}

// kill SIGKILLs the process (if it still runs) and waits for it.
func (p *workerProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// workerSupervisor keeps one worker process running for an environment, as systemd would: when
// the process dies it starts a new one, without faults (or with those of setRestartFaults).
type workerSupervisor struct {
	log *procLog
	mu  sync.Mutex
	cur *workerProc
	// restartFaults is the STOREOPT_FAULTS of the processes it starts after a death.
	restartFaults string
	// starts counts the processes started; deaths lists how each one that died ended.
	starts     int
	deaths     []string
	restartErr string
	stopped    bool
	quit       chan struct{}
	wg         sync.WaitGroup
}

// superviseWorker starts a worker process with faultSpec and restarts it without faults
// whenever it dies, until stop (or the end of the test).
func superviseWorker(t *testing.T, e *env, faultSpec string) *workerSupervisor {
	t.Helper()
	s := &workerSupervisor{log: &procLog{}, quit: make(chan struct{})}
	p, err := launchWorker(e, faultSpec, s.log)
	if err != nil {
		t.Fatal(err)
	}
	s.cur, s.starts = p, 1
	s.wg.Add(1)
	go s.supervise(e)
	t.Cleanup(func() {
		s.stop()
		if err := s.failure(); err != "" {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("worker process output:\n%s", s.log.String())
		}
	})
	return s
}

// supervise restarts the worker process without faults each time it dies.
func (s *workerSupervisor) supervise(e *env) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		p := s.cur
		s.mu.Unlock()
		select {
		case <-s.quit:
			return
		case <-p.done:
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return
		}
		s.deaths = append(s.deaths, fmt.Sprint(p.err))
		next, err := launchWorker(e, s.restartFaults, s.log)
		if err != nil {
			s.restartErr = err.Error()
			s.mu.Unlock()
			return
		}
		s.cur = next
		s.starts++
		s.mu.Unlock()
	}
}

// setRestartFaults sets the STOREOPT_FAULTS of the worker processes started after the next deaths.
func (s *workerSupervisor) setRestartFaults(spec string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.restartFaults = spec
}

// killCurrent SIGKILLs the running worker process, as a crash would, and waits for it to exit;
// the supervisor then starts the next one. It returns the process it killed.
func (s *workerSupervisor) killCurrent() *workerProc {
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	p.kill()
	return p
}

// stop ends supervision and kills the running worker process.
func (s *workerSupervisor) stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	close(s.quit)
	s.mu.Unlock()
	s.wg.Wait()
	s.cur.kill()
}

// failure says why the supervisor could not restart a worker, or "".
func (s *workerSupervisor) failure() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.restartErr != "" {
		return "restart worker: " + s.restartErr
	}
	return ""
}

// restarts returns how each worker process that died ended ("signal: killed", …).
func (s *workerSupervisor) restarts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deaths...)
}
