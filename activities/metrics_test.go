package activities

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/metrics"
)

// metricsLog is a Recorder that writes down every call.
type metricsLog struct{ calls []string }

func (l *metricsLog) add(s string) { l.calls = append(l.calls, s) }
func (l *metricsLog) TopicOptimized(o metrics.Optimization) {
	l.add(fmt.Sprintf("optimized %s %d %d", o.Policy, o.InputChunks, o.Rows))
}
func (l *metricsLog) TopicFailed(policy, errorType string) {
	l.add("failed " + policy + " " + errorType)
}
func (l *metricsLog) TopicSkipped(policy, reason string)        { l.add("skipped " + policy + " " + reason) }
func (l *metricsLog) TopicQuarantined(policy string)            { l.add("quarantined " + policy) }
func (l *metricsLog) StepFinished(string, time.Duration, error) {}
func (l *metricsLog) CleanupDone(kind string, deleted, failed int) {
	l.add(fmt.Sprintf("cleanup %s %d %d", kind, deleted, failed))
}
func (l *metricsLog) ChunksWritten(path string, chunks int, arrowBytes int64) {
	l.add(fmt.Sprintf("written %s %d %d", path, chunks, arrowBytes))
}

// TestRecordOutcome: what RecordOutcome reads from each activity's input and result, for every
// kind of end of a topic and every cleanup result.
func TestRecordOutcome(t *testing.T) {
	var fail = errors.New("store unreachable")
	for _, c := range []struct {
		in   any
		res  any
		err  error
		want string
	}{
		{ReleaseInput{Policy: "tiered", ErrorType: ErrTypeInput}, ReleaseResult{}, nil, "failed tiered StoreoptInputError"},
		{ReleaseInput{ErrorType: ErrTypeVerification}, ReleaseResult{Quarantined: true}, nil, "failed full StoreoptVerificationError|quarantined full"},
		{ReleaseInput{Policy: "leveled", Canceled: true}, ReleaseResult{}, nil, "failed leveled canceled"},
		{ReleaseInput{ErrorType: "*fmt.wrapError"}, ReleaseResult{}, nil, "failed full other"},
		{ReleaseInput{}, ReleaseResult{}, nil, "failed full other"},
		{ReleaseInput{Policy: "leveled", NothingToDo: true}, ReleaseResult{}, nil, "skipped leveled nothing_to_do"},
		{ReleaseInput{Policy: "tiered", ErrorType: ErrTypeInput}, ReleaseResult{}, fail, ""},
		{LeaseInput{}, LeaseResult{AlreadyOptimized: true, Policy: "tiered"}, nil, "skipped tiered already_optimized"},
		{LeaseInput{}, LeaseResult{Quarantined: &QuarantinedTopic{}, Policy: "leveled"}, nil, "skipped leveled quarantined"},
		{LeaseInput{}, LeaseResult{Leased: true}, nil, "skipped full leased"},
		{LeaseInput{}, LeaseResult{FreshPrefix: "tp_1", Policy: "tiered"}, nil, ""},
		{CommitInput{}, CommitResult{AlreadyCommitted: true, NewPrefix: "tp_1", Policy: "tiered"}, nil, ""},
		{CommitInput{}, CommitResult{NewPrefix: "tp_1", Policy: "tiered", InputChunks: 3, Rows: 7}, nil, "optimized tiered 3 7"},
		{CommitInput{}, CommitResult{NewPrefix: "tp_1", InputChunks: 3}, fail, "optimized full 3 0"}, // switched, then failed
		{CommitInput{}, CommitResult{}, fail, ""},
		{nil, DeleteMarkedPrefixesResult{Deleted: 2, DeletedObjects: 9, DeleteFailed: 1}, nil, "cleanup prefixes 2 1|cleanup objects 9 0"},
		{nil, DeleteTempFilesResult{Deleted: 1}, nil, "cleanup temp_files 1 0"},
		{nil, AbortUploadsResult{Aborted: 4, Failed: 2}, nil, "cleanup aborted_uploads 4 2"},
		{nil, DeleteReplacedObjectsResult{Deleted: 5}, nil, "cleanup replaced_objects 5 0"},
		{nil, DeleteReplacedObjectsResult{Deleted: 5}, fail, ""},
		{ReadSortInput{}, ReadSortResult{NothingToDo: true}, nil, ""},
		{WriteChunksInput{}, WriteChunksResult{Chunks: 4, WrittenChunks: 3, WrittenArrowBytes: 300, CopiedChunks: 2, CopiedArrowBytes: 250}, nil,
			"written copy 2 250|written rewrite 1 50"},
		{WriteChunksInput{}, WriteChunksResult{Chunks: 2, WrittenChunks: 1, WrittenArrowBytes: 10}, nil, "written rewrite 1 10"},
		{WriteChunksInput{}, WriteChunksResult{Chunks: 2}, nil, ""}, // all staged by an earlier attempt
		{WriteChunksInput{}, WriteChunksResult{WrittenChunks: 1, WrittenArrowBytes: 10}, fail, ""},
	} {
		log := &metricsLog{}
		RecordOutcome(log, c.in, c.res, c.err)
		if got := strings.Join(log.calls, "|"); got != c.want {
			t.Errorf("%T %+v (%v): recorded %q, want %q", c.res, c.res, c.err, got, c.want)
		}
	}
}
