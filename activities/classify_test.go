package activities

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/compaction"
	"github.com/storeopt/storeopt/panics"
	"github.com/storeopt/storeopt/parquetio"
)

// A panic recovered by the reader of a chunk is an internal error when storeopt's code raised it
// (parquetio returns a *panics.Error, which the chunk's error wraps) and an input error when the
// input's decoder did (a parquetio.InputError); only the latter counts toward quarantine.
func TestClassifyReaderPanics(t *testing.T) {
	a := &Activities{}
	cases := []struct {
		err  error
		want string
	}{
		{&compaction.ChunkError{Key: "tp_X/data/00000.parquet", Err: &panics.Error{Where: "parquetio read rows", Value: "boom", Stack: []byte("stack")}}, ErrTypeInternal},
		{&compaction.ChunkError{Key: "tp_X/data/00000.parquet", Err: &parquetio.InputError{Err: errors.New("read rows: reader panicked on malformed data: boom")}}, ErrTypeInput},
		{&compaction.OutputError{Key: "tp_Y/data/00000.parquet", Err: &parquetio.InputError{Err: errors.New("concatenate rows of the inputs: cannot combine dictionaries")}}, ErrTypeInput},
	}
	for _, tc := range cases {
		var appErr *temporal.ApplicationError
		err := a.classify("seq/topic", tc.err)
		if !errors.As(err, &appErr) || appErr.Type() != tc.want || !appErr.NonRetryable() {
			t.Errorf("%v: classified as %v, want non-retryable %s", tc.err, err, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), "topic seq/topic: ") || !strings.Contains(err.Error(), "/data/00000.parquet") {
			t.Errorf("message %q does not name the topic and the chunk", err)
		}
	}
}
