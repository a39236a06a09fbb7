package e2e

import (
	"context"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.temporal.io/sdk/client"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/ingest"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// newS3Env is newEnv with a bucket of a real S3 server (the Versity S3 gateway) as the store:
// s3://BUCKET?endpoint=http://127.0.0.1:PORT&use_path_style=true&region=us-east-1 with the AWS
// variables set, as an operator would configure it.
func newS3Env(t *testing.T) *env {
	t.Helper()
	b, storeURL := testenv.StartS3(t).NewBucket(t)
	return newEnvOn(t, b, storeURL)
}

// multipartUploads returns the store's unfinished multipart uploads with the bytes of their
// parts, by upload ID.
func (e *env) multipartUploads(t *testing.T) map[string]partsOf {
	t.Helper()
	c, bucket := testenv.S3Client(t, e.b, e.cfg.StoreURL)
	out := map[string]partsOf{}
	for _, u := range testenv.MultipartUploads(t, e.b, e.cfg.StoreURL) {
		parts, err := c.ListParts(context.Background(), &s3.ListPartsInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId})
		var apiErr interface{ ErrorCode() string }
		if errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchUpload" {
			continue // completed or aborted since the listing
		}
		if err != nil {
			t.Fatalf("list the parts of upload %s of %s: %v", aws.ToString(u.UploadId), aws.ToString(u.Key), err)
		}
		if aws.ToBool(parts.IsTruncated) {
			t.Fatalf("list the parts of upload %s of %s: truncated after %d parts", aws.ToString(u.UploadId), aws.ToString(u.Key), len(parts.Parts))
		}
		p := partsOf{key: aws.ToString(u.Key)}
		for _, part := range parts.Parts {
			p.parts++
			p.bytes += aws.ToInt64(part.Size)
		}
		out[aws.ToString(u.UploadId)] = p
	}
	return out
}

// partsOf is what an unfinished multipart upload holds.
type partsOf struct {
	key   string
	parts int
	bytes int64
}

// TestS3OptimizeAndCleanup runs the happy path on a real S3 server: ingest the test preset into
// a bucket, optimize every topic (output verified against the input), then clean up with
// retention 0 through the starter: the old prefixes' objects are deleted, the new ones untouched,
// and an unfinished multipart upload left under an old prefix (a crashed ingester's) is aborted
// and reported.
func TestS3OptimizeAndCleanup(t *testing.T) {
	e := newS3Env(t)
	ctx := context.Background()
	before := e.ingestTopics(t, "s3_run", 0, 1, 2)
	abandoned := store.ChunkKey(before[0].topic.DataPrefix, 99)
	testenv.StartMultipartUpload(t, e.b, e.cfg.StoreURL, abandoned, 4096)

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	const maxChunk = 32 << 10
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk})
	if res.Optimized != len(before) || res.Failed != 0 {
		t.Fatalf("run result %+v, want %d optimized", res, len(before))
	}
	var after []topicContent
	for _, s := range before {
		after = append(after, e.checkOptimized(t, s, maxChunk))
	}
	e.queueEmpty(t)

	out, code := e.starter(t, "cleanup", "--retention-duration", "0")
	if code != 0 || !strings.Contains(out, "1 found, 1 aborted (4096 bytes), 0 failed") {
		t.Fatalf("starter cleanup exited %d, want 0 and the aborted upload reported:\n%s", code, out)
	}
	t.Logf("starter cleanup:\n%s", out)
	var clean workflows.CleanupResult
	if err := e.srv.Client.GetWorkflow(ctx, cleanupID(t, out), "").Get(ctx, &clean); err != nil {
		t.Fatal(err)
	}
	saveHistory(t, e.srv.Client, cleanupID(t, out), "cleanup-pass-s3-uploads")
	if clean.Deleted != len(before) || clean.DeleteFailed != 0 {
		t.Errorf("cleanup deleted %d prefixes (%d failed), want the %d old ones", clean.Deleted, clean.DeleteFailed, len(before))
	}
	if clean.Uploads != 1 || clean.UploadsAborted != 1 || clean.UploadBytesAborted != 4096 {
		t.Errorf("cleanup %+v, want the abandoned upload of %s (4096 bytes) aborted", clean, abandoned)
	}
	if left := e.multipartUploads(t); len(left) != 0 {
		t.Errorf("unfinished uploads left after cleanup: %+v", left)
	}
	for i, s := range before {
		if n := e.objectsUnder(t, s.topic.DataPrefix); n != 0 {
			t.Errorf("topic %s: %d objects left under the old prefix %s", s.locator, n, s.topic.DataPrefix)
		}
		tp, err := e.cat.Topic(ctx, s.id)
		if err != nil {
			t.Fatal(err)
		}
		equalRows(t, s.locator, after[i], readTopic(t, e.b, chunkKeys(t, e.cat, s.id)))
		checkPrefixChunks(t, e, tp)
	}
}

// TestS3WorkerKilledDuringMultipartUpload kills the worker process twice while it uploads a
// large output chunk (about 26 MB: a multipart upload of 8 MiB parts) to a real S3 server, each
// time once the gateway holds a part of the upload. The partial object never
// becomes visible and nothing references it; the supervisor's next worker retries the write and
// the run completes with verified output. The two abandoned uploads stay in the bucket (S3
// keeps them) until cleanup: inside the retention they are kept, with retention 0 they are
// aborted and reported with the bytes of their parts.
func TestS3WorkerKilledDuringMultipartUpload(t *testing.T) {
	e := newS3Env(t)
	ctx := context.Background()
	ingested, err := ingest.Ingest(ctx, e.cat, e.b, ingest.Options{Sequence: "s3_kill", Seed: 3, Topics: []ingest.TopicSpec{
		{Path: "camera/front", Kind: ingest.Camera, Chunks: 60, RowsPerChunk: 10, PayloadBytes: 50_000,
			Overlap: 0.05, UnsortedFraction: 0.05, Compression: "none"}}})
	if err != nil {
		t.Fatal(err)
	}
	before := e.snapshot(t, ingested[0].TopicID)

	// Each MiB handed to the store waits 60 ms: the upload takes about 1.5 s, long enough to see
	// its first part arrive and kill the worker in its middle.
	const slow = faults.WriteChunksUploading + "=sleep:60ms"
	sup := superviseWorker(t, e, slow)
	sup.setRestartFaults(slow)
	run, err := e.srv.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "storeopt-run-s3-kill", TaskQueue: e.cfg.TaskQueue},
		workflows.StoreOptimizerWorkflow, workflows.StoreOptimizerInput{HeartbeatTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	killed := map[string]partsOf{}
	for kill := 1; kill <= 2; kill++ {
		if kill == 2 {
			sup.setRestartFaults("") // the third worker writes at full speed
		}
		var id string
		var up partsOf
		// Polled every 20 ms: the upload holds its first part for about a second.
		for deadline := time.Now().Add(2 * time.Minute); id == ""; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: no upload of the output chunk with a part in 2 minutes", kill)
			}
			for uid, p := range e.multipartUploads(t) {
				if _, seen := killed[uid]; !seen && p.parts >= 1 && !strings.HasPrefix(p.key, before.topic.DataPrefix+"/") {
					id, up = uid, p
				}
			}
		}
		sup.killCurrent()
		killed[id] = up
		t.Logf("kill %d after %s: worker killed while upload %s of %s held %d parts (%d bytes)", kill,
			time.Since(started).Round(time.Millisecond), id, up.key, up.parts, up.bytes)
		if ok, err := e.b.Exists(ctx, up.key); err != nil || ok {
			t.Fatalf("kill %d: the partial object %s is visible (exists %v, err %v)", kill, up.key, ok, err)
		}
		lease, ok := e.leaseOf(t, before.id)
		if !ok || !strings.HasPrefix(up.key, lease.FreshPrefix+"/") {
			t.Fatalf("kill %d: upload of %s is not under the lease's fresh prefix (lease %+v)", kill, up.key, lease)
		}
		if staged, err := e.cat.StagedChunks(ctx, before.id, lease.FencingToken); err != nil || len(staged) > 0 {
			t.Fatalf("kill %d: chunks staged before the upload completed: %+v (err %v)", kill, staged, err)
		}
	}

	var res workflows.StoreOptimizerResult
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := run.Get(wctx, &res); err != nil {
		t.Fatal(err)
	}
	if res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("run result %+v, want 1 optimized", res)
	}
	t.Logf("run completed after %s", time.Since(started).Round(time.Millisecond))
	if deaths := sup.restarts(); len(deaths) != 2 {
		t.Errorf("worker deaths %v, want the 2 kills", deaths)
	}
	after := e.checkOptimized(t, before, workflows.DefaultMaxChunkSizeBytes)
	tp, err := e.cat.Topic(ctx, before.id)
	if err != nil {
		t.Fatal(err)
	}
	checkPrefixChunks(t, e, tp)
	e.queueEmpty(t)
	left := e.multipartUploads(t)
	var abandonedBytes int64
	for id, up := range killed {
		got, ok := left[id]
		if !ok {
			t.Fatalf("the killed worker's upload %s of %s is gone before cleanup", id, up.key)
		}
		abandonedBytes += got.bytes
	}
	if len(left) != len(killed) {
		t.Fatalf("unfinished uploads after the run %+v, want only the %d killed ones", left, len(killed))
	}

	clean := e.runCleanup(t, time.Hour)
	if clean.Uploads != 2 || clean.UploadsAborted != 0 {
		t.Errorf("cleanup with retention 1h: %+v, want both abandoned uploads found and kept", clean)
	}
	clean = e.runCleanup(t, 0)
	if clean.Uploads != 2 || clean.UploadsAborted != 2 || clean.UploadBytesAborted != abandonedBytes || clean.UploadsFailed != 0 {
		t.Errorf("cleanup with retention 0: %+v, want both uploads aborted (%d bytes)", clean, abandonedBytes)
	}
	if left := e.multipartUploads(t); len(left) != 0 {
		t.Errorf("unfinished uploads left after cleanup: %+v", left)
	}
	equalRows(t, before.locator, after, readTopic(t, e.b, chunkKeys(t, e.cat, before.id)))
}

// TestS3WorkerExitsWhenStoreUnreachable: a worker whose s3:// store URL names an endpoint where
// nothing listens exits 2 at start with a message naming the (redacted) store URL, instead of
// starting and failing every activity later.
func TestS3WorkerExitsWhenStoreUnreachable(t *testing.T) {
	e := newS3Env(t)
	closed, err := testenv.FreeAddress()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(e.cfg.StoreURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("endpoint", "http://"+closed)
	u.RawQuery = q.Encode()
	e.cfg.StoreURL = u.String()
	log := &procLog{}
	p := startWorkerProc(t, e, "", log)
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("worker with store %s still running (want exit 2):\n%s", app.RedactURL(e.cfg.StoreURL), log.String())
	}
	var exit *exec.ExitError
	if !errors.As(p.err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("worker exited with %v, want exit status 2:\n%s", p.err, log.String())
	}
	if want := "store URL " + app.RedactURL(e.cfg.StoreURL) + ": not reachable"; !strings.Contains(log.String(), want) {
		t.Errorf("worker output does not say %q:\n%s", want, log.String())
	}
}

// TestS3PassThrough optimizes, on a real S3 server, a topic recorded in order with a page index in
// chunks of about the output size: every output is its input chunk kept, copied by the server
// (CopyObject) under the fresh prefix, byte for byte; cleanup with retention 0 then deletes the
// old prefix and the kept copies still hold every row.
func TestS3PassThrough(t *testing.T) {
	e := newS3Env(t)
	ingested := e.ingest(t, ingest.Options{Sequence: "s3_kept", Seed: 9, Topics: []ingest.TopicSpec{
		{Path: "sensors/imu", Kind: ingest.IMU, Chunks: 6, RowsPerChunk: 200, PageIndex: true, RowGroupRows: 50}}})
	before := e.snapshot(t, ingested[0].TopicID)
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	const maxChunk = 32 << 10
	if res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: maxChunk}); res.Optimized != 1 || res.Failed != 0 {
		t.Fatalf("run result %+v, want 1 optimized", res)
	}
	after := e.checkOptimized(t, before, maxChunk)
	if !chunksKept(t, e, before) {
		t.Fatal("the outputs are not their input chunks' bytes")
	}
	if out, code := e.starter(t, "cleanup", "--retention-duration", "0"); code != 0 {
		t.Fatalf("starter cleanup exited %d:\n%s", code, out)
	}
	if n := e.objectsUnder(t, before.topic.DataPrefix); n != 0 {
		t.Errorf("%d objects left under the old prefix %s", n, before.topic.DataPrefix)
	}
	equalRows(t, before.locator, after, readTopic(t, e.b, chunkKeys(t, e.cat, before.id)))
}
