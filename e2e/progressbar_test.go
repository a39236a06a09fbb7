package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/storeopt/storeopt/app"
	"github.com/storeopt/storeopt/faults"
	"github.com/storeopt/storeopt/internal/testenv"
)

// TestStarterShowsProgress runs `starter store-optimizer` as an operator does, twice against a
// worker slowed down by a 250 ms sleep after each output chunk (one topic and one chunk at a
// time): once in a terminal (a pseudo-terminal of 40×160), where it draws a progress bar of the
// run's progress query that advances (topics and bytes finished of the queue, an ETA) and ends
// on every topic; once with stderr on a pipe, where it logs the same numbers as lines every
// --progress-interval and draws nothing; once in a pseudo-terminal of 0×0, where it logs too.
func TestStarterShowsProgress(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	t.Setenv(faults.EnvVar, faults.WriteChunksAfterWrite+"=sleep:250ms")
	testenv.StartWorker(t, e.srv.Client, e.cfg)
	bin, err := buildStarter()
	if err != nil {
		t.Fatalf("build starter: %v", err)
	}
	ingestSequence := func(name string) int {
		opts := testPreset(t)
		opts.Sequence = name
		e.ingest(t, opts)
		return len(opts.Topics)
	}
	args := []string{"store-optimizer", "--max-chunk-size", "32768", "--max-concurrent-topics", "1",
		"--topic-parallelism", "1", "--progress-interval", "300ms"}
	e.procEnv = append(e.procEnv, app.EnvLogLevel+"=info")

	t.Run("terminal", func(t *testing.T) {
		topics := ingestSequence("progress_tty")
		runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		out, err := runInTerminal(e.starterCommand(runCtx, bin, append(args, "--scope", "sequence:progress_tty")...), 40, 160)
		if err != nil {
			t.Fatalf("starter in a terminal: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`optimized\s+` + strconv.Itoa(topics) + `\r?\n`).MatchString(out) {
			t.Fatalf("no summary with %d topics optimized:\n%s", topics, out)
		}
		if strings.Contains(out, `msg="run progress"`) {
			t.Errorf("a terminal got progress log lines:\n%s", out)
		}
		// cupwriter redraws the bars in place: cursor up and erase down.
		if !regexp.MustCompile("\x1b\\[\\d+A\x1b\\[J").MatchString(out) {
			t.Errorf("the bars were never redrawn in place:\n%q", out)
		}
		frames := regexp.MustCompile(`topics\s+(\d+) / (\d+)`).FindAllStringSubmatch(out, -1)
		seen := map[int]bool{}
		last := -1
		for _, f := range frames {
			k, _ := strconv.Atoi(f[1])
			n, _ := strconv.Atoi(f[2])
			if n != topics && n != 0 { // 0 before the run's queue is known
				t.Errorf("topics bar %q: want %d topics queued", f[0], topics)
			}
			if n == topics {
				if k < last {
					t.Errorf("topics bar went back from %d to %d", last, k)
				}
				seen[k], last = true, k
			}
		}
		mid := false
		for k := range seen {
			mid = mid || (k > 0 && k < topics)
		}
		if !mid || last != topics {
			t.Errorf("topics bar: finished counts drawn %v (last %d); want one mid-run and %d at the end", seen, last, topics)
		}
		bytesBar := regexp.MustCompile(`bytes\s+(\d+(?:\.\d)?) ?([kKMGT]?B) / (\d+(?:\.\d)?) ?([kKMGT]?B)`).FindAllStringSubmatch(out, -1)
		if len(bytesBar) == 0 || bytesBar[len(bytesBar)-1][1] != bytesBar[len(bytesBar)-1][3] ||
			bytesBar[len(bytesBar)-1][2] != bytesBar[len(bytesBar)-1][4] {
			t.Errorf("bytes bar: frames %q, want the last one full", bytesBar)
		}
		if !regexp.MustCompile(`B/s · ETA \d+s`).MatchString(out) {
			t.Errorf("no ETA drawn:\n%q", out)
		}
		t.Logf("%d frames of the topics bar, finished counts drawn %v; last frame:\n%s", len(frames), seen, lastFrame(out))
	})

	// A pseudo-terminal of 0×0 (what `script -qc` often makes): mpb would draw nothing there,
	// so the starter logs its progress lines.
	t.Run("terminal of 0x0", func(t *testing.T) {
		topics := ingestSequence("progress_tty0")
		runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		out, err := runInTerminal(e.starterCommand(runCtx, bin, append(args, "--scope", "sequence:progress_tty0")...), 0, 0)
		if err != nil {
			t.Fatalf("starter in a terminal of 0x0: %v\n%s", err, out)
		}
		if !regexp.MustCompile(`optimized\s+` + strconv.Itoa(topics) + `\r?\n`).MatchString(out) {
			t.Fatalf("no summary with %d topics optimized:\n%s", topics, out)
		}
		lines := regexp.MustCompile(`msg="run progress" finished=(\d+) queued=`+strconv.Itoa(topics)).FindAllStringSubmatch(out, -1)
		if len(lines) == 0 {
			t.Errorf("no progress log lines on a terminal of 0x0:\n%q", out)
		}
		t.Logf("%d progress lines on a terminal of 0x0", len(lines))
	})

	t.Run("not a terminal", func(t *testing.T) {
		topics := ingestSequence("progress_log")
		runCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := e.starterCommand(runCtx, bin, append(args, "--scope", "sequence:progress_log")...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("starter: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		if strings.Contains(stderr.String(), "\x1b[") || strings.Contains(stdout.String(), "\x1b[") {
			t.Errorf("escape sequences on a pipe:\n%q\n%q", stdout.String(), stderr.String())
		}
		line := regexp.MustCompile(`msg="run progress" finished=(\d+) queued=(\d+) optimized=\d+ failed=0 .*bytes_finished=(\d+) bytes_queued=(\d+)`)
		lines := line.FindAllStringSubmatch(stderr.String(), -1)
		seen := map[string]bool{}
		for _, l := range lines {
			if l[2] != strconv.Itoa(topics) && (l[2] != "0" || l[1] != "0") { // 0 of 0 before the queue is known
				t.Errorf("progress line %q: want %d queued", l[0], topics)
			}
			seen[l[1]] = true
		}
		if len(seen) < 2 {
			t.Errorf("progress lines did not advance (finished counts logged %v):\n%s", seen, stderr.String())
		}
		if !regexp.MustCompile(`msg="run progress" .* eta=\d+`).MatchString(stderr.String()) {
			t.Errorf("no progress line with an ETA:\n%s", stderr.String())
		}
		t.Logf("%d progress lines, finished counts logged %v", len(lines), seen)
	})
}

// runInTerminal runs cmd with its standard streams on a pseudo-terminal of rows×cols and
// returns what it wrote there.
func runInTerminal(c *exec.Cmd, rows, cols uint16) (string, error) {
	tty, err := pty.StartWithSize(c, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, tty)
		copied <- err
	}()
	waitErr := c.Wait()
	// The reader gets EIO once the process and its children have closed the terminal.
	if err := <-copied; err != nil && !errors.Is(err, syscall.EIO) && !errors.Is(err, os.ErrClosed) {
		return out.String(), err
	}
	tty.Close()
	return out.String(), waitErr
}

// lastFrame is the text after the last redraw of the bars.
func lastFrame(out string) string {
	if i := strings.LastIndex(out, "\x1b[J"); i >= 0 {
		return out[i+3:]
	}
	return out
}
