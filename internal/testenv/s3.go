package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/app"
)

// EnvVersityGW names the Versity S3 gateway binary; scripts/test.sh sets it.
const EnvVersityGW = "STOREOPT_VERSITYGW"

// The root credentials of every S3 gateway the tests start. StartS3 puts them into the test
// process's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which the s3:// store (and every worker
// or starter process the test starts with os.Environ()) reads.
const (
	S3AccessKey = "storeopt-test"
	S3SecretKey = "storeopt-test-secret"
)

// VersityGW returns the path of the Versity S3 gateway binary: $STOREOPT_VERSITYGW, else
// ${STOREOPT_CACHE:-$HOME/.cache/storeopt}/bin/versitygw (where scripts/versitygw.sh builds
// it). When neither is an executable file the test is skipped (failed when $CI is set) with a
// message saying how to build it.
func VersityGW(t testing.TB) string {
	t.Helper()
	return cachedBinary(t, EnvVersityGW, "versitygw", "scripts/versitygw.sh")
}

// S3Server is a Versity S3 gateway started for one test: an S3 API over a temporary directory
// whose folders are the buckets (posix backend).
type S3Server struct {
	// Endpoint is the gateway's URL, http://127.0.0.1:PORT.
	Endpoint string
	// Dir is the gateway's root directory: each folder is a bucket.
	Dir string
}

var setS3Credentials sync.Once

// StartS3 starts a Versity S3 gateway on a free port over a fresh temporary directory, with the
// root credentials S3AccessKey / S3SecretKey (also set as the process's AWS variables), waits
// until it accepts connections and stops it when the test ends. Its output goes to the test log
// when the test fails.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	bin := VersityGW(t)
	setS3Credentials.Do(func() {
		for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": S3AccessKey, "AWS_SECRET_ACCESS_KEY": S3SecretKey,
			"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true"} {
			if err := os.Setenv(k, v); err != nil {
				t.Fatalf("testenv: set %s: %v", k, err)
			}
		}
	})
	dir := t.TempDir()
	out := &lockedBuffer{}
	var lastErr error
	for range 3 { // another process may take the free port before the gateway binds it
		addr, err := FreeAddress()
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
		cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+S3AccessKey, "ROOT_SECRET_KEY="+S3SecretKey)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatalf("testenv: start S3 gateway %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if lastErr = waitListening(addr, exited, 20*time.Second); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
				if t.Failed() {
					t.Logf("testenv: S3 gateway output:\n%s", out.String())
				}
			})
			return &S3Server{Endpoint: "http://" + addr, Dir: dir}
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	t.Fatalf("testenv: S3 gateway did not start: %v\n%s", lastErr, out.String())
	return nil
}

// URL returns the store URL of bucket on this gateway:
// s3://BUCKET?endpoint=…&use_path_style=true&region=us-east-1.
func (s *S3Server) URL(bucket string) string {
	return "s3://" + bucket + "?endpoint=" + s.Endpoint + "&use_path_style=true&region=us-east-1"
}

// NewBucket creates a bucket with a fresh random name (a folder of Dir) and opens it as a store
// (closed when the test ends); it returns the bucket and its store URL.
func (s *S3Server) NewBucket(t testing.TB) (*blob.Bucket, string) {
	t.Helper()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "storeopt-" + hex.EncodeToString(rnd[:])
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil {
		t.Fatalf("testenv: create bucket %s: %v", name, err)
	}
	storeURL := s.URL(name)
	b, err := app.OpenStore(context.Background(), storeURL)
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, storeURL
}

// FreeAddress returns 127.0.0.1:PORT with a port that was free a moment ago.
func FreeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitListening waits until addr accepts TCP connections, the process signals exited, or the
// timeout passes.
func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-exited:
			return fmt.Errorf("the process exited before listening on %s", addr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on %s after %s: %w", addr, timeout, err)
		}
	}
}

// S3Client returns the *s3.Client of an s3:// store and the name of its bucket (the host of
// storeURL).
func S3Client(t testing.TB, b *blob.Bucket, storeURL string) (*s3.Client, string) {
	t.Helper()
	var c *s3.Client
	if !b.As(&c) {
		t.Fatalf("testenv: store %s is not an S3 bucket", storeURL)
	}
	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatalf("testenv: store URL %s: %v", storeURL, err)
	}
	return c, u.Host
}

// StartMultipartUpload begins a multipart upload of key in the s3:// store and uploads one part
// of partBytes zero bytes, as a writer killed after its first part leaves it. It returns the
// upload ID.
func StartMultipartUpload(t testing.TB, b *blob.Bucket, storeURL, key string, partBytes int) string {
	t.Helper()
	c, bucket := S3Client(t, b, storeURL)
	ctx := context.Background()
	mu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("testenv: start multipart upload of %s: %v", key, err)
	}
	_, err = c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key), UploadId: mu.UploadId,
		PartNumber: aws.Int32(1), Body: bytes.NewReader(make([]byte, partBytes))})
	if err != nil {
		t.Fatalf("testenv: upload a part of %s: %v", key, err)
	}
	return aws.ToString(mu.UploadId)
}

// MultipartUploads returns the unfinished multipart uploads of the s3:// store (at most 1000: a
// truncated listing fails the test, so that "none left" never passes on a partial one).
func MultipartUploads(t testing.TB, b *blob.Bucket, storeURL string) []types.MultipartUpload {
	t.Helper()
	c, bucket := S3Client(t, b, storeURL)
	out, err := c.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("testenv: list multipart uploads of %s: %v", bucket, err)
	}
	if aws.ToBool(out.IsTruncated) {
		t.Fatalf("testenv: list multipart uploads of %s: truncated after %d uploads", bucket, len(out.Uploads))
	}
	return out.Uploads
}
