package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/internal/testenv"
)

// TestTemporalMTLS connects a worker and the starter to a Temporal frontend that requires mTLS
// (a TLS-terminating proxy in front of the dev server, server and client certificates from a
// test CA). The worker process takes its connection from a temporal.toml profile that the
// temporal CLI wrote (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE), the starter from --tls-* flags, as
// an operator of Temporal Cloud would; together they run a pass that optimizes a topic. A starter without a
// client certificate, with a certificate of another CA, or that does not trust the server's CA,
// and a worker without a client certificate, are refused at once with an error that says which
// setting to fix.
func TestTemporalMTLS(t *testing.T) {
	e := newEnv(t)
	ca := testenv.NewTestCA(t, "temporal")
	e.cfg.TemporalAddress = testenv.StartTLSProxy(t, e.srv.Address, ca, ca)
	cert, key := ca.Issue(t, "storeopt")
	before := e.ingestTopics(t, "tls_run", 1)

	// The worker's profile is written by the temporal CLI itself: storeopt reads what the CLI writes.
	profile := filepath.Join(t.TempDir(), "temporal.toml")
	for _, prop := range [][2]string{{"address", e.cfg.TemporalAddress}, {"namespace", "default"},
		{"tls.client_cert_path", cert}, {"tls.client_key_path", key}, {"tls.server_ca_cert_path", ca.CertPath}} {
		cmd := exec.Command(testenv.TemporalCLI(t), "config", "set", "--config-file", profile, "--profile", "secure",
			"--prop", prop[0], "--value", prop[1])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("temporal config set %s: %v\n%s", prop[0], err, out)
		}
	}
	e.procEnv = []string{app.EnvTemporalConfigFile + "=" + profile, app.EnvTemporalProfile + "=secure"}
	log := &procLog{}
	startWorkerProc(t, e, "", log)

	e.procEnv = nil
	out, code := e.starter(t, "store-optimizer", "--max-chunk-size", "32768",
		"--tls-cert-path", cert, "--tls-key-path", key, "--tls-ca-path", ca.CertPath)
	if code != 0 {
		t.Fatalf("starter over mTLS exited %d:\n%s\nworker:\n%s", code, out, log.String())
	}
	e.checkOptimized(t, before[0], 32768)
	e.queueEmpty(t)

	other := testenv.NewTestCA(t, "other")
	otherCert, otherKey := other.Issue(t, "intruder")
	for _, c := range []struct {
		name, want string
		args       []string
	}{
		{"no client certificate", "requires a client certificate", []string{"--tls-ca-path", ca.CertPath}},
		{"a certificate of another CA", "refused the client certificate",
			[]string{"--tls-cert-path", otherCert, "--tls-key-path", otherKey, "--tls-ca-path", ca.CertPath}},
		{"the server's CA not trusted", "certificate is not trusted", []string{"--tls-cert-path", cert, "--tls-key-path", key}},
	} {
		start := time.Now()
		out, code := e.starter(t, append([]string{"store-optimizer"}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.want) || !strings.Contains(out, "--tls-") {
			t.Errorf("starter with %s exited %d, want 2 and an error saying %q and naming the flag to set:\n%s", c.name, code, c.want, out)
		}
		if d := time.Since(start); d > app.DialTimeout/2 {
			t.Errorf("starter with %s took %s: a refused certificate must not be retried", c.name, d)
		}
		t.Logf("starter with %s: %s", c.name, strings.TrimSpace(out))
	}

	e.procEnv = []string{app.EnvTemporalTLS + "=true", app.EnvTemporalTLSCA + "=" + ca.CertPath}
	refusedLog := &procLog{}
	w := startWorkerProc(t, e, "", refusedLog)
	select {
	case <-w.done:
	case <-time.After(app.DialTimeout / 2):
		t.Fatal("a worker without a client certificate is still running")
	}
	if !strings.Contains(refusedLog.String(), "requires a client certificate") {
		t.Errorf("worker without a client certificate ended with %v:\n%s", w.err, refusedLog.String())
	}
}
