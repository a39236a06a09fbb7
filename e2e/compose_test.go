package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/operatorservice/v1"
	"go.yaml.in/yaml/v3"

	"github.com/storeopt/storeopt/internal/pgtest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/workflows"
)

// composeFile is the part of docker-compose.yml this test runs.
type composeFile struct {
	StoreoptEnv map[string]string         `yaml:"x-storeopt-env"`
	Services    map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Environment map[string]string `yaml:"environment"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Volumes     []string          `yaml:"volumes"`
}

// composeDefault matches "${NAME:-default}" and "${NAME}" in a compose value.
var composeDefault = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// interpolate resolves a compose value as `docker compose` would without an .env file and with
// none of the variables set: every ${NAME:-default} takes its default, $$ is a $.
func interpolate(v string) string {
	v = composeDefault.ReplaceAllString(v, "$2")
	return strings.ReplaceAll(v, "$$", "$")
}

// env returns the service's environment, interpolated, as NAME=value entries (sorted).
func (s composeService) env() []string {
	var out []string
	for k, v := range s.Environment {
		out = append(out, k+"="+interpolate(v))
	}
	slices.Sort(out)
	return out
}

// script returns the host path of the shell script the service's entrypoint runs
// (["/bin/sh", "/scripts/NAME.sh"] with ./deploy/compose mounted at /scripts).
func (s composeService) script(t *testing.T, name string) string {
	t.Helper()
	if len(s.Entrypoint) != 2 || s.Entrypoint[0] != "/bin/sh" {
		t.Fatalf("service %s: entrypoint %v, want [/bin/sh /scripts/…]", name, s.Entrypoint)
	}
	for _, v := range s.Volumes {
		host, container, ok := strings.Cut(strings.TrimSuffix(v, ":ro"), ":")
		if ok && strings.HasPrefix(s.Entrypoint[1], container+"/") {
			return filepath.Join("..", host, strings.TrimPrefix(s.Entrypoint[1], container+"/"))
		}
	}
	t.Fatalf("service %s: no volume holds %s", name, s.Entrypoint[1])
	return ""
}

func loadCompose(t *testing.T) composeFile {
	t.Helper()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

// runScript runs a service script with sh, its environment plus extra, and returns its output.
func runScript(t *testing.T, ctx context.Context, script string, env []string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "sh", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestComposeServicesOutsideDocker runs what docker-compose.yml's services run, without Docker
// (there is no Docker engine here; scripts/compose-check.sh validates the file against the
// compose schema): the temporal-schema job's script, with temporal-sql-tool of the admin-tools
// image's version, sets up Temporal's two databases on a PostgreSQL server, twice (it runs on
// every `docker compose up`); the s3 service's script starts the Versity S3 gateway (the image's binary is
// the one the tests build, same version) and creates the bucket; the temporal-namespace job's
// script, with the temporal CLI of the admin-tools image's version, creates a namespace on a dev
// server and registers storeopt's search attribute, twice (it must be safe to run again); then
// a worker and the starter, with the environment every storeopt service gets (x-storeopt-env:
// S3 store URL and credentials, database URL, Temporal address) pointed at these stand-ins,
// ingest, optimize and clean up. Only the temporal server itself is not run (its image renders
// its configuration from the environment; the dev server stands in for it).
func TestComposeServicesOutsideDocker(t *testing.T) {
	f := loadCompose(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for name, svc := range f.Services {
		if svc.Image != "" && !strings.Contains(svc.Image, ":") {
			t.Errorf("service %s: image %s has no tag", name, svc.Image)
		}
	}

	// temporal-schema: the job's script with temporal-sql-tool of the image's version, twice, on
	// a PostgreSQL server of the test's own (it creates fixed database names).
	checkComposeSchemaJob(t, ctx, f.Services["temporal-schema"])

	// s3: the gateway's script, with the volume and the port moved to this test's.
	s3svc := f.Services["s3"]
	gwDir := filepath.Dir(testenv.VersityGW(t))
	root, port := t.TempDir(), freePort(t)
	gw := exec.Command("sh", s3svc.script(t, "s3"))
	gw.Env = append(append(os.Environ(), s3svc.env()...), "S3_ROOT="+root, "S3_LISTEN=127.0.0.1:"+port,
		"PATH="+gwDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	gwLog := &procLog{}
	gw.Stdout, gw.Stderr = gwLog, gwLog
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gw.Process.Kill(); _ = gw.Wait() })
	endpoint := "http://127.0.0.1:" + port
	waitUntil(t, 20*time.Second, "the s3 service's health endpoint answers", func() bool {
		resp, err := http.Get(endpoint + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	bucket := s3svc.Environment["S3_BUCKET"]
	if st, err := os.Stat(filepath.Join(root, bucket)); err != nil || !st.IsDir() {
		t.Fatalf("the s3 service did not create bucket %q: %v\n%s", bucket, err, gwLog.String())
	}

	// temporal-namespace: the job's script creates a namespace of its own on a dev server.
	srv := testenv.StartDevServer(t)
	nsJob := f.Services["temporal-namespace"]
	const namespace = "storeopt-compose"
	cliDir := filepath.Dir(testenv.TemporalCLI(t))
	jobEnv := append(nsJob.env(), "TEMPORAL_ADDRESS="+srv.Address, "TEMPORAL_NAMESPACE="+namespace,
		"PATH="+cliDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for run := 1; run <= 2; run++ {
		out, err := runScript(t, ctx, nsJob.script(t, "temporal-namespace"), jobEnv)
		if err != nil {
			t.Fatalf("temporal-namespace job, run %d: %v\n%s", run, err, out)
		}
		t.Logf("temporal-namespace job, run %d:\n%s", run, strings.TrimSpace(out))
	}
	attrs, err := srv.Client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := attrs.GetCustomAttributes()[workflows.TopicLocatorSearchAttribute]; !ok {
		t.Fatalf("the namespace job did not register %s in %s", workflows.TopicLocatorSearchAttribute, namespace)
	}

	// worker and starter: x-storeopt-env with the hosts of the compose network replaced.
	storeoptEnv := composeStoreoptEnv(t, f, srv.Address, namespace, endpoint, pgtest.NewDatabase(t))
	bin, err := buildWorker()
	if err != nil {
		t.Fatalf("build worker: %v", err)
	}
	worker := exec.Command(bin)
	worker.Env = append(os.Environ(), storeoptEnv...)
	wLog := &procLog{}
	worker.Stdout, worker.Stderr = wLog, wLog
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		_ = worker.Wait()
		if t.Failed() {
			t.Logf("worker:\n%s", wLog.String())
		}
	})
	e := &env{procEnv: storeoptEnv} // the starter's own variables are overridden by these
	for _, args := range [][]string{
		{"ingest", "--preset", "test", "--sequence", "compose_1"},
		{"store-optimizer", "--max-chunk-size", "65536"},
		{"cleanup", "--retention-duration", "0"},
	} {
		out, code := e.starter(t, args...)
		if code != 0 {
			t.Fatalf("starter %v with the compose environment exited %d:\n%s", args, code, out)
		}
		t.Logf("starter %s:\n%s", args[0], strings.TrimSpace(out))
		if args[0] == "store-optimizer" && !regexp.MustCompile(`(?m)^optimized\s+3$`).MatchString(out) {
			t.Errorf("starter store-optimizer did not optimize the 3 topics:\n%s", out)
		}
	}
}

// checkComposeSchemaJob runs the temporal-schema service's script twice against a PostgreSQL
// server of its own, with the service's environment (the host and port moved there), and checks
// that both of Temporal's databases carry a schema version afterwards.
func checkComposeSchemaJob(t *testing.T, ctx context.Context, job composeService) {
	t.Helper()
	pg := pgtest.StartServer(t)
	u, err := url.Parse(pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	env := append(job.env(), "SQL_HOST="+u.Hostname(), "SQL_PORT="+u.Port(), "SQL_USER=postgres", "SQL_PASSWORD=",
		"PATH="+filepath.Dir(testenv.TemporalSQLTool(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	for run := 1; run <= 2; run++ {
		out, err := runScript(t, ctx, job.script(t, "temporal-schema"), env)
		if err != nil {
			t.Fatalf("temporal-schema job, run %d: %v\n%s", run, err, out)
		}
		if run == 2 {
			t.Logf("temporal-schema job, run 2:\n%s", lastLines(out, 4))
		}
	}
	for _, db := range []string{"temporal", "temporal_visibility"} {
		du := *u
		du.Path = "/" + db
		conn, err := pgx.Connect(ctx, du.String())
		if err != nil {
			t.Fatalf("database %s: %v", db, err)
		}
		var version string
		err = conn.QueryRow(ctx, `SELECT curr_version FROM schema_version`).Scan(&version)
		conn.Close(ctx)
		if want := composeSchemaVersions[db]; err != nil || version != want {
			t.Fatalf("database %s: schema version %q (err %v), want %s", db, version, err, want)
		}
		t.Logf("temporal-schema job: database %s at schema version %s", db, version)
	}
}

// composeSchemaVersions are the latest PostgreSQL schema versions of Temporal server v1.29.1
// (its schema/postgresql/v12/version.go), which the schema job must reach.
var composeSchemaVersions = map[string]string{"temporal": "1.18", "temporal_visibility": "1.9"}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// composeStoreoptEnv returns x-storeopt-env, interpolated, with the compose network's hosts
// replaced by this test's stand-ins: temporal:7233 by the dev server (and the namespace by the
// one the namespace job made), postgresql:5432/storeopt by a test database (user, password and
// parameters as compose gives them), http://s3:7070 by the gateway.
func composeStoreoptEnv(t *testing.T, f composeFile, temporal, namespace, s3Endpoint, databaseURL string) []string {
	t.Helper()
	test, err := url.Parse(databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for k, v := range f.StoreoptEnv {
		v = interpolate(v)
		switch k {
		case "TEMPORAL_ADDRESS":
			v = strings.Replace(v, "temporal:7233", temporal, 1)
		case "TEMPORAL_NAMESPACE":
			v = namespace
		case "STOREOPT_DATABASE_URL":
			u, err := url.Parse(v)
			if err != nil || u.Host != "postgresql:5432" {
				t.Fatalf("compose database URL %q: want host postgresql:5432 (%v)", v, err)
			}
			u.Host, u.Path = test.Host, test.Path
			v = u.String()
		case "STOREOPT_STORE_URL":
			if !strings.Contains(v, "endpoint=http://s3:7070") {
				t.Fatalf("compose store URL %q: want endpoint=http://s3:7070", v)
			}
			v = strings.Replace(v, "http://s3:7070", s3Endpoint, 1)
		}
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	slices.Sort(out)
	return append(out, "STOREOPT_LOG_LEVEL=warn")
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	addr, err := testenv.FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(addr, ":")
	return port
}
