package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
)

// Helpers of TestHostileCredentials: a PostgreSQL role with a password, a worker process whose
// output is captured, and the text of every workflow history of the test's server.

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// createLoginRole creates a superuser role that logs in with password on the test server and
// drops it when the test ends (after the cleanups registered later, such as the worker's).
func createLoginRole(t *testing.T, role, password string) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("PostgreSQL test server unreachable: %v", err))
	}
	defer admin.Close(ctx)
	// Identifiers and the password literal are built from hex digits and constants only.
	if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN SUPERUSER PASSWORD '"+password+"'"); err != nil {
		t.Fatalf("create role: %v", err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		admin, err := pgx.Connect(ctx, pgtest.ServerURL())
		if err != nil {
			t.Errorf("drop role %s: %v", role, err)
			return
		}
		defer admin.Close(ctx)
		_, _ = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role)
		if _, err := admin.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()); err != nil {
			t.Errorf("drop role %s: %v", role, err)
		}
	})
}

// capturedWorker is a worker process whose stdout and stderr are kept.
type capturedWorker struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
}

// startCapturedWorker runs the worker command with the given configuration at log level debug.
func (e *env) startCapturedWorker(t *testing.T, databaseURL, storeURL string) *capturedWorker {
	t.Helper()
	bin, err := buildWorker()
	if err != nil {
		t.Fatalf("build worker: %v", err)
	}
	w := &capturedWorker{cmd: exec.Command(bin)}
	w.cmd.Env = append(os.Environ(),
		app.EnvTemporalAddress+"="+e.cfg.TemporalAddress,
		app.EnvDatabaseURL+"="+databaseURL,
		app.EnvStoreURL+"="+storeURL,
		app.EnvLogLevel+"=debug")
	w.cmd.Stdout = writerFunc(func(p []byte) { w.mu.Lock(); w.out.Write(p); w.mu.Unlock() })
	w.cmd.Stderr = w.cmd.Stdout
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
	})
	return w
}

// stop interrupts the worker (graceful stop, so its shutdown is logged too) and returns its
// output.
func (w *capturedWorker) stop(t *testing.T) string {
	t.Helper()
	_ = w.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker exited with %v", err)
		}
	case <-time.After(app.WorkerStopTimeout + 10*time.Second):
		t.Errorf("worker did not stop after SIGINT")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// allHistories returns the JSON of every workflow history in the namespace plus the decoded data
// of every payload in them (JSON shows payload data base64-encoded), and the number of
// workflows.
func (e *env) allHistories(t *testing.T) (string, int) {
	t.Helper()
	ctx := context.Background()
	var text strings.Builder
	n := 0
	var token []byte
	for {
		page, err := e.srv.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", NextPageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range page.Executions {
			n++
			it := e.srv.Client.GetWorkflowHistory(ctx, ex.Execution.WorkflowId, ex.Execution.RunId, false,
				enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			var h historypb.History
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					t.Fatal(err)
				}
				h.Events = append(h.Events, ev)
			}
			data, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(&h)
			if err != nil {
				t.Fatal(err)
			}
			text.Write(data)
			text.WriteByte('\n')
			err = proxy.VisitPayloads(ctx, &h, proxy.VisitPayloadsOptions{
				Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
					for _, p := range ps {
						text.Write(p.GetData())
						text.WriteByte('\n')
					}
					return ps, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if token = page.NextPageToken; len(token) == 0 {
			return text.String(), n
		}
	}
}

// withUserInfo returns databaseURL with the given user and password.
func withUserInfo(t *testing.T, databaseURL, user, password string) string {
	t.Helper()
	u, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatalf("database URL does not parse")
	}
	u.User = url.UserPassword(user, password)
	return u.String()
}

// secretKeyFile writes a fileblob URL-signing key whose path and content are both secrets.
func secretKeyFile(t *testing.T, pathSecret, keySecret string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), pathSecret+".key")
	if err := os.WriteFile(path, []byte(keySecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
