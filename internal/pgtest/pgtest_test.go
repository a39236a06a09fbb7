package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestNewDatabaseIsMigratedAndDropped(t *testing.T) {
	var name string
	t.Run("use", func(t *testing.T) {
		dbURL := NewDatabase(t)
		u, err := url.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		name = strings.TrimPrefix(u.Path, "/")
		if !strings.HasPrefix(name, "storeopt_t_") || len(name) != len("storeopt_t_")+16 {
			t.Fatalf("database name %q, want storeopt_t_<16 hex>", name)
		}
		c := NewCatalog(t)
		if _, err := c.CreateSequence(context.Background(), "run_1"); err != nil {
			t.Fatalf("the catalog is not migrated: %v", err)
		}
	})
	if t.Skipped() || name == "" {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s still exists after the test ended", name)
	}
}

// outcome records how NewEmptyDatabase ended the test without ending ours.
type outcome struct {
	testing.TB
	skipped, failed string
}

func (o *outcome) Helper() {}
func (o *outcome) Skipf(format string, a ...any) {
	o.skipped = fmt.Sprintf(format, a...)
	runtime.Goexit()
}
func (o *outcome) Fatalf(format string, a ...any) {
	o.failed = fmt.Sprintf(format, a...)
	runtime.Goexit()
}

func runUnreachable(t *testing.T, ci string) *outcome {
	t.Setenv("STOREOPT_TEST_DATABASE_URL", "postgres://postgres:hunter2@127.0.0.1:1/postgres?sslmode=disable")
	t.Setenv("CI", ci)
	o := &outcome{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		NewEmptyDatabase(o)
		t.Error("NewEmptyDatabase returned although the server is unreachable")
	}()
	<-done
	return o
}

func TestUnreachableServer(t *testing.T) {
	o := runUnreachable(t, "")
	if o.skipped == "" || o.failed != "" {
		t.Fatalf("without CI: want a skip, got skip %q, failure %q", o.skipped, o.failed)
	}
	if !strings.Contains(o.skipped, "unreachable") || strings.Contains(o.skipped, "hunter2") {
		t.Fatalf("skip message %q should say unreachable and hide the password", o.skipped)
	}

	o = runUnreachable(t, "true")
	if o.failed == "" || o.skipped != "" {
		t.Fatalf("with CI: want a failure, got skip %q, failure %q", o.skipped, o.failed)
	}
	if strings.Contains(o.failed, "hunter2") {
		t.Fatalf("failure message %q shows the password", o.failed)
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:p@h:5432/postgres?sslmode=disable", "postgres://u:p@h:5432/storeopt_t_x?sslmode=disable"},
		{"postgresql://h/", "postgresql://h/storeopt_t_x"},
		{"host=h dbname=postgres", "host=h dbname=postgres dbname=storeopt_t_x"},
	} {
		got, err := withDatabase(tc.in, "storeopt_t_x")
		if err != nil || got != tc.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := withDatabase("postgres://u:se%zzcret@h/db", "x"); err == nil || strings.Contains(err.Error(), "se%zzcret") {
		t.Errorf("unparsable URL: error %v should exist and hide the password", err)
	}
}
