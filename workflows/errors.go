package workflows

import (
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/activities"
)

// ErrTypeTopicFailed is the type of the non-retryable ApplicationError an OptimizeTopicWorkflow
// fails with. Its message is "topic <locator>: <step>: <cause>"; its cause chain keeps the
// activity's error, so the activity's error type (activities.ErrTypeInput, …) is still there for
// errors.As. A canceled optimization is not wrapped: it ends canceled, not failed.
const ErrTypeTopicFailed = "StoreoptTopicFailed"

// stepError says which step of an optimization failed ("read-sort", "write-chunks group 3").
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// topicFailure turns the error of a failed step into the error OptimizeTopicWorkflow returns.
func topicFailure(locator string, err error) error {
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return canceled
	}
	step := "optimize"
	var se *stepError
	if errors.As(err, &se) {
		step, err = se.step, se.err
	}
	// Activity errors name the topic themselves; say it once.
	cause := strings.TrimPrefix(causeMessage(err), "topic "+locator+": ")
	msg := fmt.Sprintf("topic %s: %s: %s", locator, step, cause)
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeTopicFailed, err)
}

// causeMessage returns the messages of err's chain joined by ": ", skipping the Temporal wrappers
// (activity and child workflow errors, whose messages only name the activity or workflow) and
// leaving out the "(type: …, retryable: …)" annotations of ApplicationError.Error.
func causeMessage(err error) string {
	var parts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch t := e.(type) {
		case *temporal.ActivityError, *temporal.ChildWorkflowExecutionError, *stepError:
			continue
		case *temporal.ApplicationError:
			parts = append(parts, t.Message())
		case *temporal.TimeoutError:
			parts = append(parts, fmt.Sprintf("%s (type: %s)", t.Message(), t.TimeoutType()))
		case *temporal.CanceledError:
			parts = append(parts, t.Error())
		default:
			// Any other error's message already contains the rest of its chain.
			return strings.Join(append(parts, e.Error()), ": ")
		}
	}
	return strings.Join(parts, ": ")
}

// childFailureMessage returns what a TopicFailure records for the error of a failed child: the
// message of the child's ErrTypeTopicFailed error, or for a child that ended otherwise (timed out,
// terminated, canceled) the messages of its cause chain.
func childFailureMessage(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrTypeTopicFailed {
		return appErr.Message()
	}
	return causeMessage(err)
}

// isAlreadyStarted reports whether a child start was refused because an execution with the same
// workflow ID is running: another run is optimizing the topic. A Temporal server reports
// temporal.ChildWorkflowExecutionAlreadyStartedError; the SDK's test environment reports
// serviceerror.WorkflowExecutionAlreadyStarted.
func isAlreadyStarted(err error) bool {
	var childErr *temporal.ChildWorkflowExecutionAlreadyStartedError
	var serviceErr *serviceerror.WorkflowExecutionAlreadyStarted
	return errors.As(err, &childErr) || errors.As(err, &serviceErr)
}

// storeFaultOf finds the activities.ErrTypeStore error in err's cause chain (a failed child's
// error holds the failed activity's) and returns its StoreFault details and message.
func storeFaultOf(err error) (fault activities.StoreFault, msg string, ok bool) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		appErr, isApp := e.(*temporal.ApplicationError)
		if !isApp || appErr.Type() != activities.ErrTypeStore {
			continue
		}
		if appErr.HasDetails() {
			_ = appErr.Details(&fault) // unreadable details: every such fault counts as one
		}
		return fault, appErr.Message(), true
	}
	return fault, "", false
}
