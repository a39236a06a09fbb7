#!/usr/bin/env bash
# Regenerates docs/web-ui-run-progress.png: the Temporal Web UI showing a run's live current
# details mid-run. Not run by CI.
#
# It starts a dev server of its own (in memory; gRPC 127.0.0.1:$SCREENSHOT_PORT, default 7633,
# Web UI on $SCREENSHOT_UI_PORT, default 8633), a fresh catalog database storeopt_screenshot on
# the local PostgreSQL, a file:// store in a temporary directory, ingests the test preset into two
# sequences (6 topics), starts a worker built with the fault points and slowed down by a sleep
# after each output chunk (so the run lasts about two minutes), starts a run, waits until two topics
# are finished and photographs the run's "User Metadata" page (its current details) with
# headless Chromium (Debian's chromium: apt-get install chromium) driven by playwright-core
# (installed once with npm into the cache). Everything it started is stopped at the end.
#
# Usage: scripts/screenshot.sh [output.png]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

out="${1:-$STOREOPT_ROOT/docs/web-ui-run-progress.png}"
port="${SCREENSHOT_PORT:-7633}"
ui_port="${SCREENSHOT_UI_PORT:-8633}"
PLAYWRIGHT_CORE_VERSION=1.65.1
address="127.0.0.1:$port"
chromium="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$chromium" ]] || die "chromium is not installed (apt-get install chromium)"
port_open 127.0.0.1 "$port" && die "something already listens on $address (set SCREENSHOT_PORT)"
port_open 127.0.0.1 "$ui_port" && die "something already listens on 127.0.0.1:$ui_port (set SCREENSHOT_UI_PORT)"

command -v node >/dev/null || die "node is not installed: it drives Chromium through playwright-core"
pw="$STOREOPT_CACHE/screenshot/playwright-core-$PLAYWRIGHT_CORE_VERSION"
if [[ ! -d "$pw/node_modules/playwright-core" ]]; then
  log "installing playwright-core $PLAYWRIGHT_CORE_VERSION into $pw (once)"
  mkdir -p "$pw"
  npm install --prefix "$pw" --no-save --no-audit --no-fund --loglevel=error "playwright-core@$PLAYWRIGHT_CORE_VERSION" >&2
fi
temporal="$("$STOREOPT_ROOT/scripts/temporal-cli.sh")"
"$STOREOPT_ROOT/scripts/ensure-postgres.sh" >/dev/null
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

log "building worker (with fault points) and starter into $work"
(cd "$STOREOPT_ROOT" && go build -tags storeopt_faults -o "$work/" ./worker ./starter)

log "starting a Temporal dev server on $address, Web UI http://127.0.0.1:$ui_port"
"$temporal" server start-dev --ip 127.0.0.1 --port "$port" --ui-port "$ui_port" \
  --search-attribute StoreoptTopicLocator=Keyword --log-level error >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do
  "$temporal" operator cluster health --address "$address" 2>/dev/null | grep -q SERVING && break
  sleep 0.5
done

db=storeopt_screenshot
psql -q -h 127.0.0.1 -U postgres -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
export TEMPORAL_ADDRESS="$address"
export STOREOPT_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
export STOREOPT_STORE_URL="file://$work/store?create_dir=true"
export STOREOPT_LOG_LEVEL=warn
mkdir -p "$work/store"
"$work/starter" migrate >/dev/null
"$work/starter" ingest --preset test --sequence run_2026_11_30 >/dev/null
"$work/starter" ingest --preset test --sequence run_2026_12_01 >/dev/null

STOREOPT_FAULTS=write-chunks.after-object=sleep:5s "$work/worker" >"$work/worker.log" 2>&1 &
pids+=($!)
"$work/starter" store-optimizer --max-chunk-size 32768 --max-concurrent-topics 2 --topic-parallelism 1 \
  --progress-interval 0 >"$work/starter.log" 2>&1 &
pids+=($!)

log "waiting for the run to be mid-way"
id="" run_id=""
for _ in $(seq 1 240); do
  sleep 0.5
  id="$("$temporal" workflow list --address "$address" --query 'WorkflowType="StoreOptimizerWorkflow"' -o json 2>/dev/null |
    grep -o '"workflowId": *"[^"]*"' | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')" || true
  [[ -n "$id" ]] || continue
  finished="$("$temporal" workflow query --address "$address" -w "$id" --name progress -o json 2>/dev/null |
    grep -o '"Finished": *[0-9]*' | head -n 1 | grep -o '[0-9]*$')" || true
  if [[ "${finished:-0}" -ge 2 ]]; then
    run_id="$("$temporal" workflow describe --address "$address" -w "$id" -o json |
      grep -o '"runId": *"[^"]*"' | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')"
    break
  fi
done
[[ -n "$run_id" ]] || die "the run did not get two topics done (worker log: $(tail -n 5 "$work/worker.log"))"

url="http://127.0.0.1:$ui_port/namespaces/default/workflows/$id/$run_id/user-metadata"
log "photographing $url"
mkdir -p "$(dirname "$out")"
CHROMIUM="$chromium" URL="$url" OUT="$out" PW="$pw/node_modules/playwright-core" node - <<'JS'
const { chromium } = require(process.env.PW);
(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  await page.goto(process.env.URL, { waitUntil: 'domcontentloaded', timeout: 60000 });
  // The current details come from the run's metadata query, answered by the worker; the UI
  // renders their markdown in a frame of its own.
  await page.getByText('Current Details').first().waitFor({ timeout: 60000 });
  const deadline = Date.now() + 60000;
  for (;;) {
    let found = false;
    for (const frame of page.frames()) {
      if (await frame.getByText('Optimizing topics').count().catch(() => 0)) found = true;
    }
    if (found) break;
    if (Date.now() > deadline) throw new Error('no current details with "Optimizing topics" after 60 s');
    await page.waitForTimeout(250);
  }
  await page.waitForTimeout(500);
  await page.screenshot({ path: process.env.OUT });
  await browser.close();
})().catch((err) => { console.error(err); process.exit(1); });
JS
log "wrote $out ($(stat -c %s "$out") bytes)"
