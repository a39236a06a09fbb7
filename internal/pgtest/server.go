package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Server is a PostgreSQL server of one test's own: a cluster made by initdb in a temporary
// directory (trust authentication, user postgres), listening on a free port of 127.0.0.1. It is
// for tests that restart or stop the server, which they must never do to the shared test server.
type Server struct {
	// URL is the server's maintenance database, in the form of ServerURL.
	URL string
	dir string
	bin string // directory of initdb and pg_ctl
}

// StartServer makes and starts a Server, stopped and removed when the test ends. It needs the
// PostgreSQL server binaries (pg_config --bindir, else initdb and pg_ctl on PATH); PostgreSQL
// refuses to run as root, so as root it runs them as the user postgres (runuser). Without them
// the test is skipped, or fails when $CI is set. Takes a few seconds (initdb).
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin, err := serverBinaries()
	if err != nil {
		missing(t, err.Error())
	}
	// Not t.TempDir: its parent directories are private to this user, and the server may run as
	// another.
	dir, err := os.MkdirTemp("", "storeopt-pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &Server{dir: dir, bin: bin}
	if err := s.chownToServerUser(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if out, err := s.run("initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c full_page_writes=off", port, dir)
	if out, err := s.run("pg_ctl", "-D", s.dataDir(), "-l", s.logFile(), "-o", opts, "-w", "start"); err != nil {
		t.Fatalf("pgtest: start server: %v\n%s\n%s", err, out, s.Log())
	}
	t.Cleanup(func() {
		if out, err := s.run("pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop"); err != nil {
			t.Errorf("pgtest: stop server: %v\n%s", err, out)
		}
	})
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("pgtest: connect to the new server: %v\n%s", err, s.Log())
	}
	_ = conn.Close(ctx)
	return s
}

// Restart stops the server (fast shutdown: every session is disconnected) and starts it again
// with the same options, waiting until it accepts connections.
func (s *Server) Restart() error {
	// -l again: a server started without it writes to pg_ctl's output, which it then holds open.
	if out, err := s.run("pg_ctl", "-D", s.dataDir(), "-l", s.logFile(), "-m", "fast", "-w", "restart"); err != nil {
		return fmt.Errorf("pg_ctl restart: %v\n%s", err, out)
	}
	return nil
}

// Log returns the server's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logFile())
	return string(b)
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logFile() string { return filepath.Join(s.dir, "server.log") }

// run runs the server binary name with args, as the user postgres when this process is root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	return cmd.CombinedOutput()
}

// chownToServerUser gives the directory to the user postgres when this process is root.
func (s *Server) chownToServerUser() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root, and no user postgres to run the server as: %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("user postgres has uid %q, gid %q", u.Uid, u.Gid)
	}
	return os.Chown(s.dir, uid, gid)
}

// serverBinaries returns the directory holding initdb and pg_ctl.
func serverBinaries() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	path, err := exec.LookPath("initdb")
	if err != nil {
		return "", fmt.Errorf("PostgreSQL server binaries (initdb, pg_ctl) not found: %v", err)
	}
	return filepath.Dir(path), nil
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// missing skips the test, or fails it when $CI is set.
func missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "" {
		t.Skipf("pgtest: %s; skipping (with CI set this fails)", msg)
	}
	t.Fatalf("pgtest: %s (CI is set, so this is a failure)", msg)
}
