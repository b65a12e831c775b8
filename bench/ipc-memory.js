// Where the IPC file export's memory is (issue #33, `lib-ipc-file`): the export of bench/scenario.js in a
// fresh process, with process.memoryUsage() sampled every 2 ms and a timeline every 50 ms of the pages
// started against those read, the scheduler's limit and the bytes waiting in the IPC transform and the
// file stream. `--live`: a full GC before each timeline sample too (run node with --expose-gc): the
// ArrayBuffers still referenced, apart from those only waiting for the GC. Peak RSS follows the
// ArrayBuffers (glibc's mmap threshold fixed changed nothing), so both columns are what to watch.
// Usage: node [--expose-gc] bench/ipc-memory.js [--options '{"window":2}'] [--plain] [--live]
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { DatasetClient, toArrowIpc } from '../dist/index.js';
import { runWarmThenMeasured } from './shared.js';

const { values } = parseArgs({
  options: {
    options: { type: 'string', default: '{}' },
    plain: { type: 'boolean', default: false },
    live: { type: 'boolean', default: false },
  },
});
const MB = 2 ** 20;
const mb = (x) => (x / MB).toFixed(0);

const url = process.env.DQS_IPC_MEMORY_URL;
// The parent: a server, one warm-up export (pages serialized into its cache), then the measured one.
if (!url) await runWarmThenMeasured('DQS_IPC_MEMORY_URL', 'DQS_IPC_MEMORY_TAG');

const client = new DatasetClient({
  baseUrl: url,
  apiKey: 'bench',
  ...(values.plain ? { compression: false } : {}),
});
const path = join(tmpdir(), `dqs-ipc-memory-${process.pid}.arrow`);
const baseRss = process.memoryUsage().rss;
const peak = { rss: 0, heapUsed: 0, heapTotal: 0, arrayBuffers: 0 };
let maxLive = 0;
let pagesRead = 0;
const lines = [];
const t0 = performance.now();
const stream = client.stream('job_listings', {}, JSON.parse(values.options));
const ipc = toArrowIpc({ format: 'file' });
const file = createWriteStream(path);
stream.on('progress', (p) => {
  pagesRead = p.pages;
});
const sampler = setInterval(() => {
  const m = process.memoryUsage();
  for (const k of Object.keys(peak)) peak[k] = Math.max(peak[k], m[k]);
}, 2);
const timeline = setInterval(() => {
  const m = process.memoryUsage();
  let live = '';
  if (values.live) {
    globalThis.gc();
    const after = process.memoryUsage().arrayBuffers;
    maxLive = Math.max(maxLive, after);
    live = ` live=${mb(after)}`;
  }
  lines.push(
    `${(performance.now() - t0).toFixed(0)} ms rss=${mb(m.rss)} arrayBuffers=${mb(m.arrayBuffers)}${live} heap=${mb(m.heapUsed)}` +
      ` pages started=${stream.pagesStarted} read=${pagesRead} limit=${stream.concurrency}` +
      ` ipc out=${(ipc.readableLength / MB).toFixed(1)} MB file=${(file.writableLength / MB).toFixed(1)} MB`,
  );
}, 50);
await pipeline(stream, ipc, file);
clearInterval(sampler);
clearInterval(timeline);
const ms = performance.now() - t0;
await rm(path, { force: true });
await client.close();
if (process.env.DQS_IPC_MEMORY_TAG === 'run') {
  console.log(lines.join('\n'));
  console.log(
    `${ms.toFixed(0)} ms; before the export rss ${mb(baseRss)} MB; peaks: rss ${mb(peak.rss)}, heapTotal ${mb(peak.heapTotal)},` +
      ` heapUsed ${mb(peak.heapUsed)}, arrayBuffers ${mb(peak.arrayBuffers)}` +
      (values.live ? `, arrayBuffers live after a GC ${mb(maxLive)}` : '') +
      ` MB; maxRSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`,
  );
}
