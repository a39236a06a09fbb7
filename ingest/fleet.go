package ingest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/storeopt/storeopt/catalog"
)

// Fleet describes a sustained ingestion: Robots recordings at once, each one sequence
// "<Sequence>_rNNN" with the topics of Topics, every topic receiving one chunk every
// Intervals[path] (Interval when absent) for Duration. A topic's chunks are spread over its
// interval by a phase of its own, so a fleet writes at an even rate instead of in bursts.
type Fleet struct {
	// Sequence is the prefix of the robots' sequence locators.
	Sequence string
	Robots   int
	// Topics are each robot's topics (their Chunks are replaced by Duration / interval).
	Topics   []TopicSpec
	Interval time.Duration
	// Intervals overrides Interval per topic path.
	Intervals map[string]time.Duration
	Duration  time.Duration
	// Seed of robot r is Seed + r.
	Seed int64
	// Workers is how many chunks are encoded, uploaded and recorded at once (0 = 4).
	Workers int
	// WriteSignal makes every writer poll storeopt_write_signal before each chunk and wait as it
	// says (docs/operations.md#the-write-signal): the delay, or until a stopped topic may go on.
	WriteSignal bool
	// NoFinalize leaves the topics live at the end.
	NoFinalize bool
	// Progress, when set, is called about every second with the totals so far (from one
	// goroutine).
	Progress func(FleetStats)
}

// FleetStats are the totals of a fleet's ingestion.
type FleetStats struct {
	Topics int
	Chunks int
	Bytes  int64
	Rows   int64
	// Elapsed is the time since the first chunk was due.
	Elapsed time.Duration
	// MaxLag is the longest a chunk started after it was due; Late counts the chunks that
	// started more than their topic's interval late (the fleet ran behind schedule).
	MaxLag time.Duration
	Late   int
	// Delayed counts the chunks the write signal delayed, Stopped those it held back until the
	// topic's state was no longer "stop"; SignalWait is the time writers waited for it in all.
	Delayed, Stopped int
	SignalWait       time.Duration
}

// ChunksPerSecond is the rate of chunks written.
func (s FleetStats) ChunksPerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Chunks) / s.Elapsed.Seconds()
}

// interval returns the chunk interval of the topic path.
func (f Fleet) interval(path string) time.Duration {
	if d, ok := f.Intervals[path]; ok {
		return d
	}
	return f.Interval
}

// Options returns the ingestion options of robot r: its sequence and topics with their chunk
// counts (what Append and Finalize need to go on with it).
func (f Fleet) Options(r int) Options {
	o := Options{Sequence: fmt.Sprintf("%s_r%03d", f.Sequence, r), Seed: f.Seed + int64(r), NoFinalize: true}
	for _, t := range f.Topics {
		t.Chunks = max(1, int(f.Duration/f.interval(t.Path)))
		t.NullTimestamps = min(t.NullTimestamps, t.Chunks*t.RowsPerChunk)
		o.Topics = append(o.Topics, t)
	}
	return o
}

func (f Fleet) validate() error {
	switch {
	case f.Robots < 1:
		return fmt.Errorf("fleet %s: %d robots, want at least 1", f.Sequence, f.Robots)
	case f.Duration <= 0:
		return fmt.Errorf("fleet %s: duration %s must be positive", f.Sequence, f.Duration)
	case f.Workers < 0:
		return fmt.Errorf("fleet %s: workers %d < 0", f.Sequence, f.Workers)
	case len(f.Topics) == 0:
		return fmt.Errorf("fleet %s: no topics", f.Sequence)
	}
	for _, t := range f.Topics {
		if f.interval(t.Path) <= 0 {
			return fmt.Errorf("fleet %s: topic %s: chunk interval %s must be positive", f.Sequence, t.Path, f.interval(t.Path))
		}
	}
	for path := range f.Intervals {
		found := false
		for _, t := range f.Topics {
			found = found || t.Path == path
		}
		if !found {
			return fmt.Errorf("fleet %s: an interval for topic %q, which the robots do not have", f.Sequence, path)
		}
	}
	return f.Options(0).validate()
}

// fleetTopic is one topic of the fleet being written.
type fleetTopic struct {
	w        *topicWriter
	result   IngestedTopic
	interval time.Duration
	phase    time.Duration
}

// IngestFleet records the fleet: it creates every robot's topics, then writes each topic's
// chunks on its own schedule (one goroutine per topic, f.Workers chunks written at once), and
// finalizes every topic at the end unless f.NoFinalize. A topic's chunks are recorded in order; a
// chunk due while the previous one of its topic is still being written waits for it (and counts
// as late once it is a whole interval behind). It returns the topics (robot by robot, in
// f.Topics order) and the totals. Errors name the topic and chunk; on error or cancellation the
// topics stay live with the chunks recorded so far.
func IngestFleet(ctx context.Context, cat *catalog.Catalog, bucket *blob.Bucket, f Fleet) ([]IngestedTopic, FleetStats, error) {
	if err := f.validate(); err != nil {
		return nil, FleetStats{}, err
	}
	workers := f.Workers
	if workers == 0 {
		workers = 4
	}
	var topics []*fleetTopic
	for r := range f.Robots {
		opts := f.Options(r)
		for i, spec := range opts.Topics {
			w, res, err := createTopic(ctx, cat, bucket, opts, i, spec)
			if err != nil {
				return nil, FleetStats{}, err
			}
			topics = append(topics, &fleetTopic{w: w, result: res, interval: f.interval(spec.Path)})
		}
	}
	for i, t := range topics { // spread each topic's chunks over its interval
		t.phase = time.Duration(int64(t.interval) * int64(i) / int64(len(topics)))
	}

	var (
		mu    sync.Mutex
		stats = FleetStats{Topics: len(topics)}
		errs  []error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan struct{}, workers)
	start := time.Now()
	var wg sync.WaitGroup
	for _, t := range topics {
		wg.Go(func() {
			if err := t.write(ctx, cat, f, start, slots, &mu, &stats); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				cancel()
			}
		})
	}
	done := make(chan struct{})
	if f.Progress != nil {
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					mu.Lock()
					s := stats
					mu.Unlock()
					s.Elapsed = time.Since(start)
					f.Progress(s)
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	stats.Elapsed = time.Since(start)
	out := make([]IngestedTopic, len(topics))
	for i, t := range topics {
		out[i] = t.result
	}
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return out, stats, errs[0]
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return out, stats, err
	}
	if f.NoFinalize {
		return out, stats, nil
	}
	for _, t := range out {
		if err := cat.FinalizeTopic(ctx, t.TopicID); err != nil {
			return out, stats, fmt.Errorf("topic %s: %w", t.Locator, err)
		}
	}
	return out, stats, nil
}

// write writes the topic's chunks, each at its due time (or as soon as the previous one is
// recorded and a slot is free).
func (t *fleetTopic) write(ctx context.Context, cat *catalog.Catalog, f Fleet, start time.Time, slots chan struct{},
	mu *sync.Mutex, stats *FleetStats) error {
	var scratch chunkScratch
	opts := Options{} // record needs no progress callback
	for ordinal := range t.w.timeline.spec.Chunks {
		due := start.Add(t.phase + time.Duration(ordinal)*t.interval)
		if wait := time.Until(due); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil
			}
		}
		delayed, stopped, waited, err := t.obeySignal(ctx, cat, f)
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		lag := time.Since(due) - waited
		r := t.w.writeChunk(ctx, ordinal, &scratch)
		if r.err == nil {
			r.err = t.w.record(ctx, cat, opts, &t.result, ordinal, r)
		}
		<-slots
		if r.err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("topic %s: %w", t.w.locator, r.err)
		}
		mu.Lock()
		stats.Chunks++
		stats.Bytes += r.size
		stats.Rows += r.stats.RowCount
		stats.MaxLag = max(stats.MaxLag, lag)
		if lag > t.interval {
			stats.Late++
		}
		if delayed {
			stats.Delayed++
		}
		if stopped {
			stats.Stopped++
		}
		stats.SignalWait += waited
		mu.Unlock()
	}
	return nil
}

// signalPoll is how often a writer held back by the write signal's "stop" asks again.
const signalPoll = 200 * time.Millisecond

// obeySignal asks the catalog's write signal about the topic (with f.WriteSignal) and waits as it
// says: its delay, or while the topic is stopped.
func (t *fleetTopic) obeySignal(ctx context.Context, cat *catalog.Catalog, f Fleet) (delayed, stopped bool, waited time.Duration, err error) {
	if !f.WriteSignal {
		return false, false, 0, nil
	}
	began := time.Now()
	for {
		s, err := cat.WriteSignalOf(ctx, t.w.locator)
		if err != nil {
			if ctx.Err() != nil {
				return delayed, stopped, time.Since(began), nil
			}
			return false, false, 0, fmt.Errorf("topic %s: %w", t.w.locator, err)
		}
		wait := s.Delay
		switch s.State {
		case catalog.WriteOK:
			return delayed, stopped, time.Since(began), nil
		case catalog.WriteStop:
			stopped, wait = true, signalPoll
		default:
			delayed = true
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return delayed, stopped, time.Since(began), nil
		}
		if s.State == catalog.WriteDelay {
			return delayed, stopped, time.Since(began), nil
		}
	}
}
