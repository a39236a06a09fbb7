package activities

import (
	"context"
	"slices"
	"time"

	"github.com/storeopt/storeopt/policy"
)

// Quarantine: a topic whose optimization keeps failing the same way is quarantined in the
// catalog (catalog.RecordFailure) and left out of runs until an operator clears it or a manual
// optimization succeeds.

// QuarantineErrorTypes are the error types whose failures count toward quarantine: the topic's
// own data makes the optimization fail, so running it again fails again. Infrastructure faults,
// lost leases, changed chunk sets and cancellations never count.
var QuarantineErrorTypes = []string{ErrTypeInput, ErrTypeVerification}

// MaxReportedQuarantined is how many quarantined topics EnqueueTopicsResult lists; Quarantined
// counts them all.
const MaxReportedQuarantined = 100

// QuarantinedTopic is one quarantined topic as a run reports it.
type QuarantinedTopic struct {
	TopicID  int64
	Locator  string
	Reason   string    // "<error type>: <message of the latest failure>"
	Failures int       // consecutive failures of the same kind
	Since    time.Time // when it was quarantined (database clock)
}

// recordFailure counts the failure Release was told about toward the topic's quarantine, when
// its error type is one of QuarantineErrorTypes. It returns the topic's streak length and
// whether the topic is quarantined now (0, false when the failure does not count).
func (a *Activities) recordFailure(ctx context.Context, in ReleaseInput, token string) (failures int, quarantined bool, err error) {
	if !slices.Contains(QuarantineErrorTypes, in.ErrorType) || token == "" {
		return 0, false, nil
	}
	msg := in.Error
	if msg == "" {
		msg = in.Reason
	}
	rec, err := a.Catalog.RecordFailure(ctx, in.TopicID, token, in.ErrorType, msg, a.QuarantineAfter)
	if err != nil {
		return 0, false, err
	}
	if rec.QuarantinedAt != nil {
		logger(ctx).Warn("Topic quarantined: it is left out of runs until `starter quarantine clear`",
			"topic", rec.Locator, "failures", rec.Failures, "reason", rec.Reason())
	}
	return rec.Failures, rec.QuarantinedAt != nil, nil
}

// quarantineReport returns how many topics inside the run's scope are quarantined and the first
// MaxReportedQuarantined of them (the zero Scope = all topics).
func (a *Activities) quarantineReport(ctx context.Context, scope policy.Scope) (int, []QuarantinedTopic, error) {
	n, err := a.Catalog.QuarantinedCountIn(ctx, scope)
	if err != nil || n == 0 {
		return n, nil, err
	}
	recs, err := a.Catalog.QuarantinedIn(ctx, scope, 0, MaxReportedQuarantined)
	if err != nil {
		return 0, nil, err
	}
	out := make([]QuarantinedTopic, len(recs))
	for i, r := range recs {
		out[i] = QuarantinedTopic{TopicID: r.TopicID, Locator: r.Locator, Reason: r.Reason(),
			Failures: r.Failures, Since: *r.QuarantinedAt}
	}
	return n, out, nil
}
