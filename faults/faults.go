// Package faults injects failures at named points of the activities, for the fault tests only.
// It is inert unless the binary is built with the tag storeopt_faults AND the environment
// variable STOREOPT_FAULTS names the point; a production build compiles Hit to a no-op.
//
// STOREOPT_FAULTS is a ";"-separated list of "point=action[*count]": action is "fail" (a
// retryable error), "hang" (block until the activity's context ends), "kill" (SIGKILL the worker
// process, as a crash would) or "exit" (os.Exit(3)); count limits how many hits act (default:
// every hit). Example: STOREOPT_FAULTS="write-chunks.after-object=kill".
package faults

// Points at which activities call Hit.
const (
	LeaseAfter             = "lease.after"
	ReadSortBeforeSave     = "read-sort.before-save"
	WriteChunksBeforeWrite = "write-chunks.before-object"
	WriteChunksAfterWrite  = "write-chunks.after-object"
	WriteChunksAfterStage  = "write-chunks.after-stage"
	CommitBeforeTx         = "commit.before-tx"
	CommitAfterTx          = "commit.after-tx"
	ReleaseBefore          = "release.before"
)

// Points lists every point, for suites that try each one.
var Points = []string{LeaseAfter, ReadSortBeforeSave, WriteChunksBeforeWrite, WriteChunksAfterWrite,
	WriteChunksAfterStage, CommitBeforeTx, CommitAfterTx, ReleaseBefore}

// EnvVar is the environment variable read by builds with the storeopt_faults tag.
const EnvVar = "STOREOPT_FAULTS"
