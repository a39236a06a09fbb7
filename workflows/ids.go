// Package workflows holds storeopt's Temporal workflows: StoreOptimizerWorkflow (one run over every
// queued topic) and OptimizeTopicWorkflow (one topic: lease, read-sort, write-chunks, commit). The
// workflows do no I/O; every step is an activity of package activities, called through a typed nil
// pointer so that a renamed activity is a compile error.
//
// Determinism: no clocks, random numbers, goroutines or map iteration in this package's workflow
// code; scripts/workflowcheck.sh checks it statically and replay_test.go replays saved histories.
package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
)

// TaskQueue is the task queue of storeopt's workflows and activities.
const TaskQueue = "storeopt"

// ProgressQuery is the query name both workflows answer: StoreOptimizerWorkflow with a Progress,
// OptimizeTopicWorkflow with its current step as a string ("lease", "read-sort",
// "write-chunks 3/10", "commit").
const ProgressQuery = "progress"

// TopicLocatorSearchAttribute is the name of the Keyword search attribute that every
// OptimizeTopicWorkflow carries, set to its topic locator. The Temporal server must have it
// registered before a run starts, or the child starts fail:
//
//	temporal server start-dev --search-attribute StoreoptTopicLocator=Keyword
//	temporal operator search-attribute create --name StoreoptTopicLocator --type Keyword
//
// Then `temporal workflow list --query 'StoreoptTopicLocator="run_7/imu"'` finds a topic's runs.
const TopicLocatorSearchAttribute = "StoreoptTopicLocator"

// TopicLocatorKey is the typed key of TopicLocatorSearchAttribute. It is always set on
// OptimizeTopicWorkflow executions (see TopicLocatorSearchAttribute for the registration).
var TopicLocatorKey = temporal.NewSearchAttributeKeyKeyword(TopicLocatorSearchAttribute)

const (
	topicWorkflowIDPrefix = "storeopt-topic:"
	// maxPlainLocatorBytes is the longest locator used verbatim in a workflow ID.
	maxPlainLocatorBytes = 200
	// hashedLocatorKeepBytes is how many bytes of a long or invalid locator stay readable.
	hashedLocatorKeepBytes = 100
	// hashedLocatorHexDigits is the length of the SHA-256 prefix (128 bits) that keeps IDs unique.
	hashedLocatorHexDigits = 32
)

// TopicWorkflowID returns the workflow ID of the OptimizeTopicWorkflow of one topic:
// "storeopt-topic:" + locator. Temporal refuses a second running execution with the same ID, so at
// most one optimization per topic runs at a time.
//
// A locator longer than 200 bytes or not valid UTF-8 gives "storeopt-topic:" + at most its first
// 100 bytes (invalid bytes dropped, control and non-printable characters replaced by '_', cut at a
// character boundary) + "~" + the first 32 hex digits of the SHA-256 of the whole locator. The
// result is deterministic, at most 164 bytes long for such locators, and distinct for distinct
// locators (up to SHA-256 collisions).
func TopicWorkflowID(locator string) string {
	if len(locator) <= maxPlainLocatorBytes && utf8.ValidString(locator) {
		return topicWorkflowIDPrefix + locator
	}
	sum := sha256.Sum256([]byte(locator))
	return topicWorkflowIDPrefix + readablePrefix(locator, hashedLocatorKeepBytes) + "~" +
		hex.EncodeToString(sum[:])[:hashedLocatorHexDigits]
}

// readablePrefix returns at most maxBytes bytes of s's valid, printable characters; invalid bytes
// are dropped and non-printable characters become '_'.
func readablePrefix(s string, maxBytes int) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "") {
		if !unicode.IsPrint(r) {
			r = '_'
		}
		if b.Len()+utf8.RuneLen(r) > maxBytes {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
