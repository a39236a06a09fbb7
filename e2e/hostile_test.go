package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/catalog"
	"github.com/storeopt/storeopt/internal/testenv"
	"github.com/storeopt/storeopt/store"
	"github.com/storeopt/storeopt/workflows"
)

// hostileLocators are valid (UTF-8, no NUL) but hostile topic locators: each must be optimized
// like any other topic, stored and reported verbatim.
func hostileLocators() []string {
	return []string{
		"hostile/..",
		"hostile/../../etc/passwd",
		"/hostile/leading-slash",
		"hostile/trailing-slash/",
		"hostile/100%_percent%25",
		`hostile/it's "quoted"`,
		"hostile/ with  spaces ",
		"hostile/'; DROP TABLE topics; --",
		`hostile/"); DELETE FROM chunks WHERE ('1'='1`,
		"hostile/$1 $2 %s %v {{.}}",
		`hostile/back\slash\`,
		"hostile/tab\tnew\nline",
		"hostile/ünïcødé 😀",
		"hostile/long-" + strings.Repeat("abcdefghij", 105),      // 1063 bytes
		"hostile/long-unicode-" + strings.Repeat("ü😀", 170),      // 1041 bytes of multi-byte characters
		"hostile/storeopt-topic:hostile/..",                      // looks like a workflow ID
		"hostile/~" + strings.Repeat("0", 32),                    // looks like a hashed workflow ID
		"hostile/*?[]|<>&;`",                                     // shell and glob characters
		"hostile/" + strings.Repeat("/", 5) + "many//slashes///", // empty segments
	}
}

// TestHostileValues runs one pass over topics with hostile-but-valid locators (all optimized
// correctly, under their workflow IDs) and topics whose catalog rows hold object keys or a data
// prefix that try to leave the topic's prefix (each refused as an input error naming the key,
// nothing read or written outside the prefix). A locator that is not valid UTF-8 never gets into
// the catalog: CreateTopic refuses it with a clear error.
func TestHostileValues(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()

	// Not valid UTF-8: PostgreSQL text refuses it, the catalog says so before trying.
	seqID, err := e.cat.CreateSequence(ctx, "hostile")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"hostile/\xff\xfe", "hostile/\xc3(", "hostile/nul\x00byte"} {
		_, err := e.cat.CreateTopic(ctx, seqID, bad, store.NewPrefix(), "parquet")
		if !errors.Is(err, catalog.ErrInvalid) || !strings.Contains(err.Error(), "topic locator") {
			t.Errorf("CreateTopic(%q): %v, want ErrInvalid naming the topic locator", bad, err)
		} else {
			t.Logf("CreateTopic(%q): %v", bad, err)
		}
	}

	chunks := func() []rawChunk {
		return []rawChunk{handChunk(t, 0, rowsAt(5, 1, 3)), handChunk(t, 1, rowsAt(2, 4)), handChunk(t, 2, rowsAt(3, 3))}
	}
	var optimized []int64
	var before []snapshot
	for _, loc := range hostileLocators() {
		seq, _, _ := strings.Cut(strings.TrimPrefix(loc, "/"), "/")
		id, _ := e.putTopic(t, rawTopic{sequence: seq, locator: loc, chunks: chunks()})
		optimized = append(optimized, id)
		before = append(before, e.snapshot(t, id))
	}
	victimID, _ := e.putTopic(t, rawTopic{sequence: "victim", locator: "victim/imu", chunks: chunks()})
	optimized = append(optimized, victimID)
	before = append(before, e.snapshot(t, victimID))
	victimKey := chunkKeys(t, e.cat, victimID)[1]

	// Decoy objects where an escaping key would land if it were resolved like a path: reading one
	// would make its topic succeed.
	good := handChunk(t, 1, rowsAt(2, 4))
	for _, k := range []string{"other/x.parquet", "etc/passwd", "x.parquet"} {
		if err := e.b.WriteAll(ctx, k, good.data, nil); err != nil {
			t.Fatal(err)
		}
	}
	type escaping struct {
		locator string
		key     func(prefix string) string
		says    string
	}
	escapes := []escaping{
		{"escape/dotdot", func(p string) string { return p + "/data/../../other/x.parquet" }, `has an empty, "." or ".." segment`},
		{"escape/dotdot-only", func(p string) string { return p + "/.." }, `has an empty, "." or ".." segment`},
		{"escape/dot", func(p string) string { return p + "/data/./00001.parquet" }, `has an empty, "." or ".." segment`},
		{"escape/empty-segment", func(p string) string { return p + "/data//00001.parquet" }, `has an empty, "." or ".." segment`},
		{"escape/trailing-slash", func(p string) string { return p + "/data/00001.parquet/" }, `has an empty, "." or ".." segment`},
		{"escape/absolute", func(string) string { return "/etc/passwd" }, "is outside data prefix"},
		{"escape/relative", func(string) string { return "x.parquet" }, "is outside data prefix"},
		{"escape/other-topic", func(string) string { return victimKey }, "is outside data prefix"},
		{"escape/prefix-lookalike", func(p string) string { return p + "X/data/00001.parquet" }, "is outside data prefix"},
		{"escape/backslash", func(p string) string { return p + `/data\..\..\x.parquet` }, "contains a control character or backslash"},
		{"escape/newline", func(p string) string { return p + "/data/00001.parquet\nx" }, "contains a control character or backslash"},
		{"escape/long-locator-" + strings.Repeat("z", 1000), func(string) string { return "/etc/passwd" }, "is outside data prefix"},
	}
	type refused struct {
		locator, key, says string
		before             topicRecord
	}
	var refusals []refused
	for _, x := range escapes {
		seq, _, _ := strings.Cut(x.locator, "/")
		// The hostile key is chunk 1; chunk 0 is good. No object is written at the hostile key
		// (absent): only a decoy could be read.
		prefix := store.NewPrefix()
		key := x.key(prefix)
		id, _ := e.putTopic(t, rawTopic{sequence: seq, locator: x.locator, prefix: prefix, chunks: []rawChunk{
			handChunk(t, 0, rowsAt(1)), {data: good.data, rows: good.rows, stats: good.stats, absent: true, key: key}}})
		refusals = append(refusals, refused{locator: x.locator, key: key, says: x.says, before: e.recordTopic(t, id)})
	}
	// Topics whose data prefix itself is hostile (no metadata.json, no objects): refused for the
	// prefix before anything is read.
	for _, p := range []string{"../outside", "tp_01M8NW00GE3PF2P23ZEAPWFYXX/../..", "/etc", "" + victimKey} {
		loc := "escape/prefix " + p
		id, _ := e.putTopic(t, rawTopic{sequence: "escape", locator: loc, prefix: p, noMetadata: true,
			chunks: []rawChunk{{data: good.data, rows: good.rows, absent: true, key: p + "/data/00000.parquet"}}})
		refusals = append(refusals, refused{locator: loc, key: p, says: "is not of the form tp_<ULID>", before: e.recordTopic(t, id)})
	}
	storeBefore := e.storeContent(t)

	testenv.StartWorker(t, e.srv.Client, e.cfg)
	// A topic workflow for every topic (no batches of tiny topics): their workflow IDs are checked.
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 32 << 10, MaxConcurrentTopics: 6, BatchTopics: 1})
	if res.Optimized != len(optimized) || res.Failed != len(refusals) || res.Skipped != 0 {
		t.Errorf("run result: %d optimized, %d failed, %d skipped; want %d optimized, %d failed",
			res.Optimized, res.Failed, res.Skipped, len(optimized), len(refusals))
	}
	failures := failuresByLocator(t, res)
	for _, s := range before {
		if msg, failed := failures[s.locator]; failed {
			t.Errorf("topic %q failed: %s", s.locator, msg)
			continue
		}
		e.checkOptimized(t, s, 32<<10)
		id := workflows.TopicWorkflowID(e.cfg.TaskQueue, s.locator)
		if len(id) > 250 {
			t.Errorf("topic %q: workflow ID of %d bytes", s.locator, len(id))
		}
		if _, err := e.srv.Client.DescribeWorkflowExecution(ctx, id, ""); err != nil {
			t.Errorf("topic %q: no workflow %q: %v", s.locator, id, err)
		}
	}
	for _, r := range refusals {
		msg, ok := failures[r.locator]
		if !ok {
			t.Errorf("topic %q with key %q: not refused", r.locator, r.key)
			continue
		}
		t.Logf("%.300s", msg)
		if !strings.HasPrefix(msg, "topic "+r.locator+": read-sort: ") || !strings.Contains(msg, r.says) ||
			!strings.Contains(msg, quoteGo(r.key)) {
			t.Errorf("topic %q: failure %q does not name the key %q and say %q", r.locator, msg, r.key, r.says)
		}
		e.checkUntouched(t, r.before)
	}
	e.checkStoreAfterRun(t, storeBefore, optimized)
	e.queueEmpty(t)
}

// quoteGo is how errors quote a key (%q).
func quoteGo(s string) string {
	q := strings.Builder{}
	q.WriteString(`"`)
	for _, r := range s {
		switch r {
		case '\n':
			q.WriteString(`\n`)
		case '\\':
			q.WriteString(`\\`)
		case '"':
			q.WriteString(`\"`)
		default:
			q.WriteRune(r)
		}
	}
	q.WriteString(`"`)
	return q.String()
}

// TestHostileCredentials runs a worker process whose database URL carries a password and whose
// store URL carries secret query parameters, over a good and a bad topic: the secrets appear
// nowhere in the worker's logs (debug level, SDK logs included), the workflow histories (event
// JSON and every decoded payload) or the run's result. Errors of a worker that cannot reach its
// catalog or open its store do not show them either, nor does app.RedactURL for s3 URLs.
func TestHostileCredentials(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	id := randomHex(t, 6)
	role, password := "storeopt_secret_"+id, "S3cr3t-pw-"+id
	pathSecret, keySecret := "S3cr3t-keypath-"+id, "S3cr3t-signing-key-"+id
	secrets := []string{password, url.QueryEscape(password), pathSecret, keySecret}

	createLoginRole(t, role, password)
	databaseURL := withUserInfo(t, e.cfg.DatabaseURL, role, password)
	storeURL := e.cfg.StoreURL + "?base_url=" + url.QueryEscape("https://signed.invalid/store") +
		"&secret_key_path=" + url.QueryEscape(secretKeyFile(t, pathSecret, keySecret))
	if b, err := app.OpenStore(ctx, storeURL); err != nil {
		t.Fatalf("the file driver does not take the signing parameters: %v", err)
	} else {
		_ = b.Close()
	}

	goodID := makeTopic(t, e.cat, e.b, "cred/good", [][]handRow{rowsAt(3, 1), rowsAt(2)})
	good := e.snapshot(t, goodID)
	e.putTopic(t, rawTopic{sequence: "cred", locator: "cred/bad", chunks: []rawChunk{{data: []byte("not parquet"), rows: 1}}})

	w := e.startCapturedWorker(t, databaseURL, storeURL)
	// A topic workflow for every topic (no batch of tiny topics), whose histories are captured
	// too; a batch reports the same activity messages in the run's history.
	res := e.runPass(t, app.PassOptions{MaxChunkSizeBytes: 32 << 10, BatchTopics: 1})
	logs := w.stop(t)
	if res.Optimized != 1 || res.Failed != 1 {
		t.Errorf("run result %+v, want 1 optimized and 1 failed", res)
	}
	e.checkOptimized(t, good, 32<<10)
	histories, workflows := e.allHistories(t)

	// The captures hold what a leak would be in: the worker's configuration and both topics.
	for what, text := range map[string]string{"worker logs": logs, "histories": histories} {
		for _, must := range []string{"cred/bad", "not a readable Parquet file"} {
			if !strings.Contains(text, must) {
				t.Errorf("%s do not contain %q: the capture is incomplete", what, must)
			}
		}
	}
	if !strings.Contains(logs, "worker started") || !strings.Contains(logs, role+":xxxxx@") ||
		!strings.Contains(logs, "secret_key_path=xxxxx") {
		t.Errorf("worker logs lack the redacted start line:\n%s", logs)
	}
	if workflows < 3 {
		t.Errorf("%d workflow histories, want the run and both topics", workflows)
	}

	checkNoSecret := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if i := strings.Index(text, s); i >= 0 {
				t.Errorf("%s contain the secret %q: …%s…", what, s, text[max(0, i-200):min(len(text), i+100)])
			}
		}
	}
	checkNoSecret("worker logs", logs)
	checkNoSecret("workflow histories", histories)
	checkNoSecret("run result", fmt.Sprintf("%+v", res))
	t.Logf("checked %d bytes of worker logs and %d bytes of %d workflow histories", len(logs), len(histories), workflows)

	// A worker that cannot reach its catalog, or cannot open its store, says so without them.
	cfg := e.cfg
	cfg.DatabaseURL = withUserInfo(t, "postgres://127.0.0.1:1/storeopt?sslmode=disable", role, password)
	cfg.StoreURL = storeURL
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := app.RunWorker(rctx, cfg, e.srv.Client, nil)
	cancel()
	if err == nil {
		t.Fatal("worker ran against an unreachable catalog")
	}
	t.Logf("unreachable catalog: %v", err)
	checkNoSecret("unreachable catalog error", err.Error())
	_, err = app.OpenStore(ctx, storeURL+"&password="+url.QueryEscape(password)+"&bogus=1")
	if err == nil {
		t.Fatal("store opened with an unknown parameter")
	}
	t.Logf("bad store URL: %v", err)
	checkNoSecret("store error", err.Error())

	// s3 URLs (not openable here): every credential-like parameter is redacted.
	for _, u := range []string{
		"s3://bucket?endpoint=http%3A%2F%2Fminio%3A9000&region=us-east-1&aws_secret_access_key=" + keySecret + "&session_token=" + pathSecret,
		"s3://" + role + ":" + password + "@bucket?X-Amz-Signature=" + keySecret + "&X-Amz-Credential=" + pathSecret,
	} {
		r := app.RedactURL(u)
		checkNoSecret("RedactURL("+u+")", r)
		if !strings.Contains(r, "bucket") {
			t.Errorf("RedactURL(%q) = %q lost the bucket", u, r)
		}
	}
}
