package app_test

import (
	"github.com/storeopt/storeopt/workflows"
	"os"
	"testing"
)

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// workflowsResult is a run result with two optimized topics and two failures, one of them
// recorded, with a multi-line error.
func workflowsResult() workflows.StoreOptimizerResult {
	return workflows.StoreOptimizerResult{
		Optimized: 2, Failed: 2,
		Failures: []workflows.TopicFailure{{
			Locator: "run_7/imu",
			Error:   "topic run_7/imu: chunk tp_1/data/00042.parquet: no column \"timestamp_ns\"\nsecond line",
		}},
	}
}
