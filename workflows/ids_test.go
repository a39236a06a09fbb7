package workflows

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestTopicWorkflowIDKeepsOrdinaryLocators(t *testing.T) {
	require.Equal(t, "storeopt-topic:storeopt:run_2023_01/sensors/imu", TopicWorkflowID("storeopt", "run_2023_01/sensors/imu"))
	exactly200 := "s/" + strings.Repeat("x", 198)
	require.Equal(t, "storeopt-topic:storeopt:"+exactly200, TopicWorkflowID("storeopt", exactly200))
	require.Equal(t, "storeopt-topic:storeopt:s/ with spaces, 'quotes' & 100%", TopicWorkflowID("storeopt", "s/ with spaces, 'quotes' & 100%"))
	// Runs recorded before the task queue was part of the ID.
	require.Equal(t, "storeopt-topic:run_2023_01/sensors/imu", LegacyTopicWorkflowID("run_2023_01/sensors/imu"))
}

// TestTopicWorkflowIDHoldsTheTaskQueue: two installations (task queues) have distinct IDs for
// one locator; a task queue that could be read as part of the locator (a ':', long, not
// printable ASCII) is shortened to a form without ':', so no two (task queue, locator) pairs
// share an ID.
func TestTopicWorkflowIDHoldsTheTaskQueue(t *testing.T) {
	require.Equal(t, "storeopt-topic:storeopt-staging:run_7/imu", TopicWorkflowID("storeopt-staging", "run_7/imu"))
	require.NotEqual(t, TopicWorkflowID("storeopt", "run_7/imu"), TopicWorkflowID("storeopt-staging", "run_7/imu"))
	// "a:b" + "c" against "a" + "b:c".
	require.NotEqual(t, TopicWorkflowID("a:b", "c"), TopicWorkflowID("a", "b:c"))
	hashed := regexp.MustCompile(`^storeopt-topic:([^:]*)~([0-9a-f]{32}):run_7/imu$`)
	for name, queue := range map[string]string{
		"colon":     "site:eu",
		"long":      strings.Repeat("q", 101),
		"non-ASCII": "höst",
		"control":   "q\n",
	} {
		t.Run(name, func(t *testing.T) {
			id := TopicWorkflowID(queue, "run_7/imu")
			m := hashed.FindStringSubmatch(id)
			require.NotNil(t, m, id)
			require.True(t, isPrintableASCII(id), id)
			require.LessOrEqual(t, len(id), len("storeopt-topic:")+100+1+32+1+len("run_7/imu"))
		})
	}
	require.NotEqual(t, TopicWorkflowID("site:eu", "x"), TopicWorkflowID("site_eu", "x"))
	require.NotEqual(t, TopicWorkflowID(strings.Repeat("q", 101), "x"), TopicWorkflowID(strings.Repeat("q", 102), "x"))
}

func TestTopicWorkflowIDHashesLongAndInvalidLocators(t *testing.T) {
	hashed := regexp.MustCompile(`^storeopt-topic:storeopt:(.*)~([0-9a-f]{32})$`)
	long := "seq/" + strings.Repeat("a", 300)
	cases := map[string]struct {
		locator  string
		readable string
	}{
		"201 bytes":     {"s/" + strings.Repeat("x", 199), "s/" + strings.Repeat("x", 98)},
		"long":          {long, long[:100]},
		"invalid UTF-8": {"seq/\xff\xfetopic", "seq/topic"},
		"cut at 100":    {"s/\x01" + strings.Repeat("é", 150), "s/_" + strings.Repeat("_", 97)},
		// gRPC header values must be printable ASCII (the SDK sends the ID in one).
		"non-ASCII":         {"s/ünïcødé 😀", "s/_n_c_d_ _"},
		"control character": {"s/tab\tnew\nline", "s/tab_new_line"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			id := TopicWorkflowID("storeopt", c.locator)
			m := hashed.FindStringSubmatch(id)
			require.NotNil(t, m, id)
			require.Equal(t, c.readable, m[1])
			require.True(t, utf8.ValidString(id))
			require.True(t, isPrintableASCII(id), id)
			require.LessOrEqual(t, len(id), len("storeopt-topic:storeopt:")+100+1+32)
			require.Equal(t, id, TopicWorkflowID("storeopt", c.locator), "deterministic")
		})
	}
	// Same readable prefix, different locators: different IDs.
	require.NotEqual(t, TopicWorkflowID("storeopt", long+"1"), TopicWorkflowID("storeopt", long+"2"))
	require.NotEqual(t, TopicWorkflowID("storeopt", "seq/\xff"), TopicWorkflowID("storeopt", "seq/\xfe"))
}

func TestTopicSearchValueAndSummaryStayWithinServerLimits(t *testing.T) {
	require.Equal(t, "run_7/imu", topicSearchValue("run_7/imu"))
	require.Equal(t, "optimize run_7/imu", topicSummary("run_7/imu"))
	long := "seq/" + strings.Repeat("x", 1500)
	require.Equal(t, long, topicSearchValue(long), "1504 bytes of JSON fit")

	// '<' is escaped to 6 bytes in JSON: these locators only fit in short form.
	for _, locator := range []string{"seq/" + strings.Repeat("<", 400), "seq/\xff" + strings.Repeat("y", 5000)} {
		v := topicSearchValue(locator)
		require.LessOrEqual(t, jsonSize(v), maxSearchValueJSONBytes)
		require.True(t, utf8.ValidString(v))
		require.Equal(t, strings.TrimPrefix(TopicWorkflowID("storeopt", locator), "storeopt-topic:storeopt:"), v)
	}
	for _, locator := range []string{"seq/" + strings.Repeat("<", 70), long, "seq/\x00\xff"} {
		s := topicSummary(locator)
		require.LessOrEqual(t, jsonSize(s), maxSummaryJSONBytes, s)
		require.True(t, strings.HasPrefix(s, "optimize seq/"), s)
		require.True(t, strings.HasSuffix(s, "…"), s)
	}
}

func TestJSONSizeMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "run_7/imu", `a"b\c`, "<a>&b", "é€😀", "\u2028\u2029", "x\xffy", "\x01\x7f", "\t\n"} {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		if strings.ContainsAny(s, "\t\n") {
			require.GreaterOrEqual(t, jsonSize(s), len(b), "%q: an upper bound", s)
			continue
		}
		require.Equal(t, len(b), jsonSize(s), "%q", s)
	}
}
