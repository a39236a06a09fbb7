package app_test

import (
	"strings"
	"testing"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/workflows"
)

func TestPassOptionsRefuseAPageBeyondTheLargest(t *testing.T) {
	if err := (app.PassOptions{PageSize: workflows.MaxPageSize}).Validate(); err != nil {
		t.Fatalf("page size %d: %v", workflows.MaxPageSize, err)
	}
	err := (app.PassOptions{PageSize: workflows.MaxPageSize + 1}).Validate()
	if err == nil || !strings.Contains(err.Error(), "page size") {
		t.Fatalf("page size %d: %v, want an error naming the page size", workflows.MaxPageSize+1, err)
	}
}
