// Where the event loop stalls (issue #33's p99 target) during the 500k-row `toTable()` of `lib-table`, or
// the IPC file export (`--ipc`): every gap of a 1 ms timer longer than `--over` ms, with the GCs that ran
// inside it (PerformanceObserver 'gc': MC = mark-compact, sc = scavenge, inc = incremental marking step),
// then a summary: stalls with and without a GC. A fresh process per run, after one warm-up run, against
// the bench's page server. Add node's `--trace-gc --trace-incremental-marking` to see what started each
// GC. Seen on loopback (node 20): scavenges start on "external memory pressure" (the young generation's
// ArrayBuffers: socket reads, page bodies, decoded columns); mark-compacts start as V8's marking "task"
// or "allocation limit" with the heap far below its limit (15 of 39 MB): the ArrayBuffers promoted since
// the last one count against a limit that stays at the live JS heap + ~24 MB, since the ArrayBuffers
// kept (a table's) do not raise it. So ~24 MB of promoted page buffers make a mark-compact, kept or
// garbage: 13-18 for 500k rows whose batches are dropped, 15-24 for a toTable().
// Usage: node bench/loop-stalls.js [--ipc] [--over 15] [--list] [--options '{"concurrency":1}']
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { DatasetClient, toArrowIpc } from '../dist/index.js';
import { runWarmThenMeasured } from './shared.js';

const { values } = parseArgs({
  options: {
    ipc: { type: 'boolean', default: false },
    over: { type: 'string', default: '15' },
    list: { type: 'boolean', default: false },
    options: { type: 'string', default: '{}' },
  },
});

const url = process.env.DQS_STALLS_URL;
if (!url) await runWarmThenMeasured('DQS_STALLS_URL');

const over = Number(values.over);
const kinds = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'MC',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'sc',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'inc',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak',
};
const gcs = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcs.push({ at: e.startTime, ms: e.duration, kind: kinds[e.detail?.kind] ?? String(e.detail?.kind) });
  }
}).observe({ entryTypes: ['gc'] });
const stalls = [];
let last = performance.now();
const timer = setInterval(() => {
  const now = performance.now();
  if (now - last > over) stalls.push({ from: last, to: now });
  last = now;
}, 1);
const delay = monitorEventLoopDelay({ resolution: 1 });
delay.enable();
const t0 = performance.now();
const client = new DatasetClient({ baseUrl: url, apiKey: 'bench' });
const options = JSON.parse(values.options);
let rows;
if (values.ipc) {
  const path = join(tmpdir(), `dqs-loop-stalls-${process.pid}.arrow`);
  const stream = client.stream('job_listings', {}, options);
  stream.on('progress', (progress) => (rows = progress.rows));
  await pipeline(stream, toArrowIpc({ format: 'file' }), createWriteStream(path));
  await rm(path, { force: true });
} else {
  const result = await client.query('job_listings', {});
  rows = (await result.toTable(options)).numRows;
}
const ms = performance.now() - t0;
delay.disable();
clearInterval(timer);
await client.close();
await new Promise((resolve) => setTimeout(resolve, 20)); // the last GC entries

const inRun = gcs.filter((g) => g.at >= t0 && g.at <= t0 + ms);
const sum = (list) => list.reduce((a, g) => a + g.ms, 0).toFixed(0);
const of = (kind) => inRun.filter((g) => g.kind === kind);
const p = (q) => (delay.percentile(q) / 1e6).toFixed(1);
console.log(
  `${values.ipc ? 'IPC export' : 'toTable'}: ${rows} rows, ${ms.toFixed(0)} ms; event-loop delay p99 ${p(99)} ms, ` +
    `max ${(delay.max / 1e6).toFixed(1)} ms`,
);
console.log(
  `GCs: ${of('MC').length} mark-compacts (${sum(of('MC'))} ms), ${of('sc').length} scavenges (${sum(of('sc'))} ms), ` +
    `${of('inc').length} incremental steps (${sum(of('inc'))} ms)`,
);
const withGc = (s) => inRun.filter((g) => g.at >= s.from - 1 && g.at < s.to);
const gcStalls = stalls.filter((s) => withGc(s).length > 0);
console.log(
  `stalls over ${over} ms: ${stalls.length}, ${gcStalls.length} with a GC inside ` +
    `(${gcStalls.filter((s) => withGc(s).some((g) => g.kind === 'MC')).length} with a mark-compact)`,
);
if (values.list) {
  for (const s of stalls) {
    const inside = withGc(s).map((g) => `${g.kind} ${g.ms.toFixed(1)}`);
    console.log(`  at ${(s.from - t0).toFixed(0)} ms: ${(s.to - s.from).toFixed(1)} ms ${inside.join(', ')}`);
  }
}
