package app

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// TemporalRuns is the worker's activities.Runs: it asks Temporal (DescribeWorkflowExecution)
// whether the workflow run that holds a topic's lease is still open, so that a lease is taken over
// only from a run that is gone (docs/design.md#one-optimization-per-topic).
type TemporalRuns struct {
	Client client.Client
}

// RunOpen reports whether run runID of workflow workflowID is open (running, or paused). A closed run (completed,
// failed, canceled, terminated, timed out, continued as new) and a run Temporal does not know (never
// started in this namespace, or its history already past retention) are gone: false, nil. A run ID
// Temporal refuses as invalid is not known to be gone: true. Any other error (Temporal
// unreachable, no permission) is returned, so the activity asking is retried.
func (r TemporalRuns) RunOpen(ctx context.Context, workflowID, runID string) (bool, error) {
	resp, err := r.Client.DescribeWorkflowExecution(ctx, workflowID, runID)
	var notFound *serviceerror.NotFound
	var invalid *serviceerror.InvalidArgument
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case errors.As(err, &invalid):
		// Not a run Temporal can describe (a lease a tool took with a run ID of its own): nothing
		// says it is gone, and asking again gives the same answer.
		return true, nil
	case err != nil:
		return false, fmt.Errorf("describe run %q of workflow %q: %w", runID, workflowID, err)
	}
	switch resp.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, enumspb.WORKFLOW_EXECUTION_STATUS_FAILED,
		enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return false, nil
	}
	return true, nil // running, paused, or a status this build does not know: not gone
}
