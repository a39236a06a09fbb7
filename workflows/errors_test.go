package workflows

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

func TestCauseMessageDropsWrappersAndAnnotations(t *testing.T) {
	inner := temporal.NewNonRetryableApplicationError("chunk tp_x/data/00004.parquet: corrupt footer",
		"StoreoptInputError", fmt.Errorf("read footer: %w", fmt.Errorf("unexpected EOF")))
	require.Equal(t, "chunk tp_x/data/00004.parquet: corrupt footer: read footer: unexpected EOF",
		causeMessage(&stepError{step: "read-sort", err: inner}))
	require.Equal(t, "Test timeout (type: StartToClose)",
		causeMessage(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, nil)))
	require.Equal(t, "plain", causeMessage(fmt.Errorf("plain")))
}

func TestTopicFailureNamesTopicAndStepAndKeepsCause(t *testing.T) {
	cause := temporal.NewNonRetryableApplicationError("lease lost", "StoreoptLeaseLostError", nil)
	err := topicFailure("seq/imu", &stepError{step: "commit", err: cause})
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, ErrTypeTopicFailed, appErr.Type())
	require.Equal(t, "topic seq/imu: commit: lease lost", appErr.Message())
	require.ErrorIs(t, err, cause)
	require.Equal(t, "topic seq/imu: commit: lease lost", childFailureMessage(err))

	canceled := temporal.NewCanceledError()
	require.Same(t, canceled, topicFailure("seq/imu", &stepError{step: "lease", err: canceled}))
}
