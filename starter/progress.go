package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/mattn/go-isatty"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"go.temporal.io/sdk/client"
	"golang.org/x/term"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/workflows"
)

// What a waiting `starter store-optimizer` shows of its run: the run's progress query
// (workflows.Progress, the numbers of its current details in the Web UI), as two bars (topics
// and bytes finished of the run's queue, with the rate and the ETA) when stderr is a terminal
// with a width, as a log line every --progress-interval otherwise.

// DefaultProgressInterval is how often a starter whose stderr is not a terminal logs the run's
// progress; barRefresh how often the bar asks for it.
const (
	DefaultProgressInterval = 10 * time.Second
	barRefresh              = 500 * time.Millisecond
)

// progressView shows a run's progress.
type progressView interface {
	// show shows the progress of the run as the query answered it.
	show(p workflows.Progress)
	// end shows the final progress (nil when unknown) and stops showing; ok is false when the
	// run failed or the starter stopped waiting.
	end(final *workflows.Progress, ok bool)
	// output is where other log lines go while the view is shown.
	output() io.Writer
}

// newProgressView returns a bar on stderr when it is a terminal, else log lines every interval;
// nil when interval is 0 (no progress shown) or negative.
func newProgressView(e *env, interval time.Duration) (progressView, time.Duration) {
	switch {
	case interval <= 0:
		return nil, 0
	case drawsBars(os.Stderr.Fd()):
		return newBarView(os.Stderr), barRefresh
	}
	return logView{logger: e.logger}, interval
}

// drawsBars is true when fd is a terminal that bars fit on: a terminal whose size is unknown
// or 0 columns wide (a pseudo-terminal of 0×0, as `script -qc` often makes) would get
// nothing from mpb, so it gets log lines.
func drawsBars(fd uintptr) bool {
	if !isatty.IsTerminal(fd) && !isatty.IsCygwinTerminal(fd) {
		return false
	}
	width, _, err := term.GetSize(int(fd))
	return err == nil && width > 0
}

// watchRun shows the progress of run workflowID in view, asking every interval, until the
// returned stop is called (with ok false when the run failed or the wait was stopped): stop asks
// once more, so the view ends on the run's final numbers.
func watchRun(ctx context.Context, c client.Client, workflowID string, view progressView, interval time.Duration) (stop func(ok bool)) {
	watchCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		app.WatchProgress(watchCtx, c, workflowID, interval, view.show)
	}()
	return func(ok bool) {
		cancel()
		<-done
		var final *workflows.Progress
		if ok {
			if p, err := app.QueryProgress(ctx, c, workflowID); err == nil {
				final = &p
			}
		}
		view.end(final, ok)
	}
}

// barView draws two bars: topics finished of the queue (with the counts by outcome) and their
// estimated input bytes finished of the queue's (with the rate and the ETA).
type barView struct {
	p             *mpb.Progress
	topics, bytes *mpb.Bar
	mu            sync.Mutex
	last          workflows.Progress
}

func newBarView(w io.Writer) *barView {
	v := &barView{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(100), mpb.WithRefreshRate(200*time.Millisecond))}
	name := func(s string) decor.Decorator { return decor.Name(s, decor.WC{W: 7, C: decor.DindentRight}) }
	v.topics = v.p.AddBar(0,
		mpb.PrependDecorators(name("topics"), decor.CountersNoUnit("%d / %d", decor.WC{C: decor.DSyncWidthR})),
		mpb.AppendDecorators(decor.Any(v.topicCounts, decor.WC{C: decor.DSyncWidthR})))
	v.bytes = v.p.AddBar(0,
		mpb.PrependDecorators(name("bytes"), decor.Counters(decor.SizeB1000(0), "% .1f / % .1f", decor.WC{C: decor.DSyncWidthR})),
		mpb.AppendDecorators(decor.Any(v.rateAndETA, decor.WC{C: decor.DSyncWidthR})))
	return v
}

func (v *barView) show(p workflows.Progress) {
	v.mu.Lock()
	v.last = p
	v.mu.Unlock()
	v.topics.SetTotal(int64(p.Queued), false)
	v.topics.SetCurrent(int64(p.Finished))
	v.bytes.SetTotal(p.QueuedBytes, false)
	v.bytes.SetCurrent(p.FinishedBytes)
}

func (v *barView) end(final *workflows.Progress, ok bool) {
	if final != nil {
		v.show(*final)
	}
	for _, b := range []*mpb.Bar{v.topics, v.bytes} {
		if ok {
			b.SetTotal(-1, true) // complete at the current count
		} else {
			b.Abort(false) // keep the bar as it was
		}
	}
	v.p.Wait()
}

func (v *barView) output() io.Writer { return v.p }

// topicCounts renders the outcomes so far ("optimized 3 · failed 0 · in flight 2").
func (v *barView) topicCounts(decor.Statistics) string {
	v.mu.Lock()
	p := v.last
	v.mu.Unlock()
	s := fmt.Sprintf("optimized %d · failed %d · skipped %d · in flight %d", p.Done, p.Failed, p.Skipped, p.InFlight)
	if p.NothingToDo > 0 {
		s += fmt.Sprintf(" · nothing to do %d", p.NothingToDo)
	}
	return s
}

// rateAndETA renders the rate and the ETA ("12 MB/s · ETA 1m3s", "0 B/s · ETA —" while the run
// has none).
func (v *barView) rateAndETA(decor.Statistics) string {
	v.mu.Lock()
	p := v.last
	v.mu.Unlock()
	eta := "—" // no ETA yet: too little of the queue finished (workflows.Progress.ETASeconds)
	if left, ok := etaLeft(p, time.Now()); ok {
		eta = left.String()
	}
	return fmt.Sprintf("%s/s · ETA %s", humanize.Bytes(uint64(max(p.BytesPerSecond, 0))), eta)
}

// etaLeft is the time left until the end the run's ETA points at (its ETA from when its
// progress was computed, as the Web UI shows it), rounded to the second; ok is false while the
// run has no ETA.
func etaLeft(p workflows.Progress, now time.Time) (time.Duration, bool) {
	if p.ETASeconds == nil {
		return 0, false
	}
	end := p.UpdatedAt.Add(time.Duration(*p.ETASeconds * float64(time.Second)))
	return max(end.Sub(now), 0).Round(time.Second), true
}

// logView logs the run's progress, one line each time it is asked.
type logView struct{ logger *slog.Logger }

func (v logView) show(p workflows.Progress) {
	attrs := []any{"finished", p.Finished, "queued", p.Queued, "optimized", p.Done, "failed", p.Failed,
		"skipped", p.Skipped, "nothing_to_do", p.NothingToDo, "in_flight", p.InFlight,
		"bytes_finished", p.FinishedBytes, "bytes_queued", p.QueuedBytes, "bytes_per_second", int64(p.BytesPerSecond)}
	if left, ok := etaLeft(p, time.Now()); ok {
		attrs = append(attrs, "eta", left)
	}
	v.logger.Info("run progress", attrs...)
}

func (logView) end(*workflows.Progress, bool) {}

func (logView) output() io.Writer { return os.Stderr }
