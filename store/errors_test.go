package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// apiErr stands for an S3 (smithy) API error.
type apiErr string

func (e apiErr) Error() string     { return "api error " + string(e) }
func (e apiErr) ErrorCode() string { return string(e) }

func TestFaultOf(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("upload tp_x/data/00000.parquet: %w", &os.LinkError{Op: "rename", Old: "/tmp/a", New: "/s/a", Err: err})
	}
	for _, tc := range []struct {
		err   error
		cause string
	}{
		{wrap(syscall.EXDEV), "rename across filesystems (invalid cross-device link)"},
		{wrap(syscall.EROFS), "read-only file system"},
		{wrap(syscall.EACCES), "permission denied"},
		{&fs.PathError{Op: "open", Path: "/s/x", Err: syscall.EPERM}, "permission denied"},
		{wrap(syscall.ENOTDIR), "a path of the store is not a directory"},
		{fmt.Errorf("list: %w", apiErr("NoSuchBucket")), "the bucket does not exist"},
		{wrap(syscall.ENOSPC), ""},
		{wrap(syscall.ENOENT), ""},
		{fmt.Errorf("list: %w", apiErr("SlowDown")), ""},
		{context.DeadlineExceeded, ""},
		{errors.New("connection refused"), ""},
		{nil, ""},
	} {
		f, ok := FaultOf(tc.err)
		if ok != (tc.cause != "") || f.Cause != tc.cause {
			t.Errorf("FaultOf(%v) = %+v, %v; want cause %q", tc.err, f, ok, tc.cause)
		}
		if ok && f.Remedy == "" {
			t.Errorf("FaultOf(%v) says no remedy", tc.err)
		}
	}
}
