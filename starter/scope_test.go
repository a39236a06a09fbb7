package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/pgtest"
)

// TestStoreOptimizerRefusesScopeNotInCatalog runs `starter store-optimizer --scope …` against a
// real catalog holding the topic run_1/imu: a scope naming a sequence or topic the catalog does
// not have fails with exit status 2 and a message naming it, before any run is started (no
// Temporal server is needed to get there).
func TestStoreOptimizerRefusesScopeNotInCatalog(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	cat, err := catalog.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	seq, err := cat.CreateSequence(ctx, "run_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTopic(ctx, seq, "run_1/imu", "tp_A", "parquet"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scope []string
		want  string
	}{
		{[]string{"sequence:nosuch"}, `no topic of sequence "nosuch" in the catalog`},
		{[]string{"sequence:run_"}, `no topic of sequence "run_" in the catalog`}, // a prefix of run_1 is no sequence
		{[]string{"topic:nosuch/x"}, `no topic "nosuch/x" in the catalog`},
		{[]string{"sequence:run_1", "topic:run_1/imu", "topic:run_1/nosuch"}, `no topic "run_1/nosuch" in the catalog`},
	} {
		// No Temporal server listens on port 1: were the check missing, no run could start anywhere.
		args := []string{"--database-url", dbURL, "--temporal-address", "127.0.0.1:1", "store-optimizer"}
		for _, s := range tc.scope {
			args = append(args, "--scope", s)
		}
		root := newRootCommand()
		root.SetArgs(args)
		var out bytes.Buffer
		root.SetOut(&out)
		err := root.ExecuteContext(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--scope %v: error %v, want one saying %q", tc.scope, err, tc.want)
			continue
		}
		if got := exitStatus(err); got != exitError {
			t.Errorf("--scope %v: exit status %d, want %d", tc.scope, got, exitError)
		}
		if out.Len() != 0 {
			t.Errorf("--scope %v: printed %q, want nothing (no run started)", tc.scope, out.String())
		}
	}
}
