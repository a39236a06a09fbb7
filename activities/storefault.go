package activities

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/storeopt/storeopt/internal/redact"
	"github.com/storeopt/storeopt/store"
)

// Store faults: errors of the object store that no retry can fix fail the activity at once, as
// ErrTypeStore, instead of being retried for a quarter of an hour per topic (20 attempts of the
// data activities). A run whose topics all fail with the same one stops early (see
// workflows.StoreOptimizerResult.StoreFault).

// errTopicNotInStore is returned when neither the metadata nor the first chunk of a topic is in
// the store: far more likely a worker pointed at another store than the ingestion's (or an empty
// mount point) than a broken topic, so it is a store fault, never an input fault.
var errTopicNotInStore = errors.New("neither metadata.json nor the first chunk is in the store")

// topicNotInStore is the store fault of errTopicNotInStore.
var topicNotInStore = store.Fault{
	Cause: "none of the topic's objects is in the store",
	Remedy: "give every worker the --store-url (STOREOPT_STORE_URL) the topics were ingested into; " +
		"the default store is relative to the working directory, and a volume that is not mounted looks empty",
}

// storeFaultOf returns the store fault behind err: a store.Fault, or errTopicNotInStore.
func storeFaultOf(err error) (store.Fault, bool) {
	if errors.Is(err, errTopicNotInStore) {
		return topicNotInStore, true
	}
	return store.FaultOf(err)
}

// storeName is the store URL as messages show it: redacted.
func (a *Activities) storeName() string {
	if a.StoreURL == "" {
		return "(unnamed)"
	}
	return redact.URL(a.StoreURL)
}

// storeError is the non-retryable ErrTypeStore error of store fault f behind err, for the topic
// at locator: "topic <locator>: store <URL>: <cause> (<err>); <remedy>", details StoreFault.
// Secrets of the store URL are masked, also where err repeats them.
func (a *Activities) storeError(locator string, f store.Fault, err error) error {
	msg := fmt.Sprintf("topic %s: store %s: %s (%s); %s", locator, a.storeName(), f.Cause,
		redact.Message(err.Error(), a.StoreURL), f.Remedy)
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeStore, nil,
		StoreFault{Store: a.storeName(), Cause: f.Cause})
}
