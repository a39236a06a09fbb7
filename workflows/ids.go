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
// A locator that is not valid UTF-8 or whose JSON encoding exceeds 2000 bytes (the server limits a
// value to 2 KiB) is stored in the shortened form TopicWorkflowID uses, without the prefix.
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

// TopicWorkflowID returns the workflow ID of the OptimizeTopicWorkflow of one topic of the
// installation whose workers poll taskQueue: "storeopt-topic:" + taskQueue + ":" + locator.
// Temporal refuses a second running execution with the same ID, so at most one optimization per
// topic of an installation runs at a time; two installations on one namespace (own catalogs,
// stores and task queues: staging beside production) have distinct IDs for the same locator, so
// neither skips the other's topics (docs/design.md#one-optimization-per-topic).
//
// The task queue is used verbatim when it is at most 100 bytes of printable ASCII without ':';
// any other gives its short form (as below, ':' also replaced by '_'), so the first ':' after
// the prefix always ends it. A locator longer than 200 bytes or with any byte outside printable
// ASCII (0x20-0x7e: non-ASCII characters, control characters, invalid UTF-8) gives at most its
// first 100 characters made printable ASCII (invalid bytes dropped, every other character
// outside printable ASCII replaced by '_') + "~" + the first 32 hex digits of the SHA-256 of
// the whole locator. The SDK sends the workflow ID in a gRPC header ("temporal-resource-id"),
// and gRPC refuses header values outside printable ASCII: a child with such an ID never
// completes a workflow task. The result is deterministic, at most 164 bytes plus the task
// queue's part (at most 133) long, and distinct for distinct (task queue, locator) pairs (up to
// SHA-256 collisions).
//
// Executions recorded before the task queue was part of the ID (topicIDTaskQueueChange) start
// their children with LegacyTopicWorkflowID.
func TopicWorkflowID(taskQueue, locator string) string {
	return topicWorkflowIDPrefix + taskQueuePart(taskQueue) + ":" + locatorPart(locator)
}

// LegacyTopicWorkflowID is the topic workflow ID of runs recorded before the task queue was part
// of it: "storeopt-topic:" + the locator's part of TopicWorkflowID.
func LegacyTopicWorkflowID(locator string) string {
	return topicWorkflowIDPrefix + locatorPart(locator)
}

// locatorPart is the locator verbatim, or its short form when it is long or not printable ASCII.
func locatorPart(locator string) string {
	if len(locator) <= maxPlainLocatorBytes && isPrintableASCII(locator) {
		return locator
	}
	return shortLocator(locator)
}

// TaskQueueIDPart is how a task queue is written in an ID (TopicWorkflowID, the schedules'
// IDs): verbatim when it is at most 100 bytes of printable ASCII without ':', else its short
// form with ':' replaced by '_' (so it never holds a ':').
func TaskQueueIDPart(taskQueue string) string {
	return taskQueuePart(taskQueue)
}

func taskQueuePart(taskQueue string) string {
	if len(taskQueue) <= hashedLocatorKeepBytes && isPrintableASCII(taskQueue) && !strings.Contains(taskQueue, ":") {
		return taskQueue
	}
	return strings.ReplaceAll(shortLocator(taskQueue), ":", "_")
}

// isPrintableASCII reports whether every byte of s is in 0x20-0x7e.
func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// shortLocator returns at most the first 100 bytes of locator made printable ASCII, "~" and the
// first 32 hex digits of the SHA-256 of the whole locator.
func shortLocator(locator string) string {
	sum := sha256.Sum256([]byte(locator))
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(locator, "") {
		if b.Len() == hashedLocatorKeepBytes {
			break
		}
		if r < 0x20 || r > 0x7e {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String() + "~" + hex.EncodeToString(sum[:])[:hashedLocatorHexDigits]
}

const (
	// maxSearchValueJSONBytes keeps TopicLocatorSearchAttribute under the server's 2 KiB limit on
	// one search attribute value (frontend.searchAttributesSizeOfValueLimit).
	maxSearchValueJSONBytes = 2000
	// maxSummaryJSONBytes keeps a child's static summary under the server's 400-byte limit
	// (limit.userMetadataSummarySize).
	maxSummaryJSONBytes = 380
)

// topicSearchValue returns the value of TopicLocatorSearchAttribute for a topic: the locator, or
// its short form when it is too long or not valid UTF-8.
func topicSearchValue(locator string) string {
	if utf8.ValidString(locator) && jsonSize(locator) <= maxSearchValueJSONBytes {
		return locator
	}
	return shortLocator(locator)
}

// topicSummary returns the static summary of a topic's child workflow, "optimize <locator>",
// with the locator cut short ("…") when the summary would exceed the server's limit.
func topicSummary(locator string) string {
	return fitSummary("optimize ", locator, "")
}

// fitSummary returns before + subject + after as a summary (of a child workflow or an
// activity) within the server's limit: when it is too long or not valid UTF-8, subject is cut
// to a readable prefix and "…" (halving from 200 bytes), and as a last resort the whole
// summary is cut.
func fitSummary(before, subject, after string) string {
	fits := func(s string) bool { return utf8.ValidString(s) && jsonSize(s) <= maxSummaryJSONBytes }
	summary := before + subject + after
	for keep := maxPlainLocatorBytes; !fits(summary) && keep > 0; keep /= 2 {
		summary = before + readablePrefix(subject, keep) + "…" + after
	}
	for keep := maxSummaryJSONBytes / 2; !fits(summary); keep /= 2 {
		summary = readablePrefix(before+subject+after, keep) + "…"
	}
	return summary
}

// jsonSize returns the size of s as a JSON payload (the SDK's default encoding of strings) as
// encoding/json writes it, bytes, or slightly more for control characters. It is computed by hand:
// encoding/json reflects and caches, which workflowcheck rejects in workflow code.
func jsonSize(s string) int {
	n := 2 // quotes
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
			n += 6 // \u00XX (a few control characters take 2)
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		default:
			n += size
		}
	}
	return n
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
