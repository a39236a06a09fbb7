package store

import (
	"errors"
	"io/fs"
	"syscall"

	"gocloud.dev/gcerrors"
)

func isNotExist(err error) bool { return gcerrors.Code(err) == gcerrors.NotFound }

// Fault is a store error that no retry can fix: the store refuses the work until an operator
// changes the store or the worker's store URL.
type Fault struct {
	// Cause is short and the same for every object the fault hits ("read-only file system"), so
	// that failures of many topics can be recognized as one fault.
	Cause string
	// Remedy says what to change.
	Remedy string
}

// apiError is the error of an S3 (smithy) API call.
type apiError interface{ ErrorCode() string }

// FaultOf returns the Fault that caused err, if err (or an error it wraps) is one: a rename
// across filesystems (EXDEV), a read-only filesystem (EROFS), permission denied (EACCES, EPERM,
// or a store that answers PermissionDenied), a path of the store that is not a directory
// (ENOTDIR), a bucket that does not exist (S3 NoSuchBucket). Any other error (network, timeouts,
// a full disk, a missing object) is not a Fault.
func FaultOf(err error) (Fault, bool) {
	var api apiError
	switch {
	case err == nil:
		return Fault{}, false
	case errors.Is(err, syscall.EXDEV):
		return Fault{Cause: "rename across filesystems (invalid cross-device link)",
			Remedy: "every file:// store storeopt opens writes temporary files next to the object; " +
				"a store written by another program needs no_tmp_dir=1 in its file:// URL, or TMPDIR on the store's filesystem"}, true
	case errors.Is(err, syscall.EROFS):
		return Fault{Cause: "read-only file system",
			Remedy: "mount the store's filesystem read-write, or give the worker a writable --store-url"}, true
	case errors.Is(err, fs.ErrPermission), gcerrors.Code(err) == gcerrors.PermissionDenied:
		return Fault{Cause: "permission denied",
			Remedy: "give the worker's user read and write access to the store (every directory and object in it), " +
				"or its credentials access to the bucket, or change --store-url"}, true
	case errors.Is(err, syscall.ENOTDIR):
		return Fault{Cause: "a path of the store is not a directory",
			Remedy: "--store-url must name a directory, and nothing inside it may be a file where storeopt needs a directory"}, true
	case errors.As(err, &api) && api.ErrorCode() == "NoSuchBucket":
		return Fault{Cause: "the bucket does not exist",
			Remedy: "create the bucket, or fix the bucket name in --store-url"}, true
	}
	return Fault{}, false
}
