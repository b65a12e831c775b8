/**
 * Soak: 8 concurrent clients run queries, stream their results and call the small endpoints against one
 * emulator in a child process (built `dist/`, so its memory is the emulator's alone), bounded in time and
 * count, with 2% of requests failing (503, resets, cut bodies) so the fault paths are soaked too.
 * Checks: no client-visible error, every result complete and exact, the emulator's heap and RSS flat once
 * warm, and its sockets and timers back to the baseline when the clients leave. The figures are printed
 * for the issue note.
 */
import { type ChildProcessByStdio, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { RecordBatch } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMPANIES, queryTotal } from '../../src/emulator/index.js';
import { DatasetClient, type RetryEvent } from '../../src/index.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EMULATOR = new URL('../../dist/emulator/index.js', import.meta.url).href;
const CLIENTS = 8;
const MAX_MS = 10_000;
const WARM_MS = 3_000;
const MAX_QUERIES = 2_000;
const SEED = 1;
const DATASETS = ['job_listings', 'store_locations', 'web_traffic', 'app_reviews'] as const;

/** The child: an emulator answering `mem` and `close` on stdin with one JSON line each on stdout. */
const CHILD = `
import { startEmulator, faultPlan } from ${JSON.stringify(EMULATOR)};
const plan = faultPlan({ seed: 5, rate: 0.02, kinds: ['503', 'reset', 'cut'], retryAfter: '0' });
const emu = await startEmulator({ seed: ${SEED}, fault: plan });
const resources = () => process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap' && r !== 'TTYWrap');
const snapshot = () => {
  for (let i = 0; i < 3; i++) globalThis.gc();
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers,
    resources: resources().length, requests: emu.requests.at(-1)?.n ?? 0, log: emu.requests.length,
    injected: plan.failures };
};
console.log(JSON.stringify({ url: emu.url, apiKey: emu.apiKey, ...snapshot() }));
for await (const line of (await import('node:readline')).createInterface({ input: process.stdin })) {
  if (line === 'mem') console.log(JSON.stringify(snapshot()));
  if (line === 'rss') console.log(JSON.stringify({ rss: process.memoryUsage.rss() }));
  if (line === 'close') { await emu.close(); console.log('{}'); process.exit(0); }
}
`;

interface Snapshot {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  resources: number;
  requests: number;
  log: number;
  injected: number;
}

let child: ChildProcessByStdio<Writable, Readable, null>;
let lines: Interface;
let first: Snapshot & { url: string; apiKey: string };

function nextLine(): Promise<string> {
  return new Promise((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`emulator child exited with ${code}`)));
  });
}

async function ask(command: 'mem' | 'rss' | 'close'): Promise<Snapshot> {
  const reply = nextLine();
  child.stdin.write(`${command}\n`);
  return JSON.parse(await reply) as Snapshot;
}

beforeAll(async () => {
  if (!existsSync(fileURLToPath(EMULATOR))) {
    execFileSync(process.execPath, [`${ROOT}node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
  }
  child = spawn(process.execPath, ['--expose-gc', '--input-type=module', '-e', CHILD], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  lines = createInterface({ input: child.stdout });
  first = JSON.parse(await nextLine());
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    await ask('close').catch(() => {});
    child.kill();
  }
});

/** A small deterministic generator, so the load is the same every run. */
function* bodies(clientIndex: number): Generator<{ dataset: string; tickers: string[] }> {
  let x = clientIndex * 7919 + 1;
  const next = () => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x;
  };
  for (;;) {
    const dataset = DATASETS[next() % DATASETS.length]!;
    const tickers = Array.from({ length: 1 + (next() % 3) }, () => COMPANIES[next() % COMPANIES.length]!.id);
    yield { dataset, tickers };
  }
}

describe('soak: concurrent clients against one emulator process', () => {
  it(`${CLIENTS} clients for up to ${MAX_MS / 1000} s: no error, exact results, flat memory, no leaked sockets`, async () => {
    const t0 = performance.now();
    const stats = { queries: 0, pages: 0, rows: 0, small: 0, retries: 0 };
    const errors: unknown[] = [];
    let warm: Snapshot | undefined;
    const rssSeries: number[] = [];
    const sampler = setInterval(() => {
      ask('rss').then((s) => rssSeries.push(Math.round(s.rss / 2 ** 20)), errors.push.bind(errors));
    }, 1000);
    const warmTimer = setTimeout(() => {
      ask('mem').then((s) => {
        warm = s;
      }, errors.push.bind(errors));
    }, WARM_MS);

    const worker = async (index: number) => {
      const client = new DatasetClient({
        baseUrl: first.url,
        apiKey: first.apiKey,
        retry: { minDelayMs: 1, maxDelayMs: 20 },
      });
      client.on('retry', (_e: RetryEvent) => stats.retries++);
      try {
        for (const { dataset, tickers } of bodies(index)) {
          if (performance.now() - t0 > MAX_MS || stats.queries >= MAX_QUERIES) break;
          stats.queries++;
          const body = { tickers };
          const stream = client.stream(dataset, body, { pageSize: 500, concurrency: 2 });
          let rows = 0;
          stream.on('progress', () => stats.pages++);
          for await (const batch of stream) rows += (batch as RecordBatch).numRows;
          expect(rows).toBe(queryTotal(dataset, body, { seed: SEED }));
          stats.rows += rows;
          if (stats.queries % 4 === index % 4) {
            await client.listDatasets();
            await client.searchTickers(dataset, tickers[0]!.split(':')[1]!.slice(0, 3));
            await client.getDataset(dataset);
            stats.small += 3;
          }
        }
      } catch (err) {
        errors.push(err);
      } finally {
        await client.close();
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, i) => worker(i)));
    clearTimeout(warmTimer);
    clearInterval(sampler);
    const seconds = (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 300)); // let the last sockets close
    const end = await ask('mem');
    const base = warm ?? first;
    const mb = (n: number) => Math.round((n / 2 ** 20) * 10) / 10;
    const figures = {
      clients: CLIENTS,
      seconds: Math.round(seconds * 10) / 10,
      queries: stats.queries,
      requests: end.requests,
      'requests/s': Math.round(end.requests / seconds),
      pages: stats.pages,
      'pages/s': Math.round(stats.pages / seconds),
      rows: stats.rows,
      'small calls': stats.small,
      'injected faults': end.injected,
      retries: stats.retries,
      'RSS MB start/warm/end': `${mb(first.rss)} / ${mb(base.rss)} / ${mb(end.rss)}`,
      'heap MB start/warm/end': `${mb(first.heapUsed)} / ${mb(base.heapUsed)} / ${mb(end.heapUsed)}`,
      'buffers MB start/warm/end': `${mb(first.arrayBuffers)} / ${mb(base.arrayBuffers)} / ${mb(end.arrayBuffers)}`,
      'RSS MB each second': rssSeries.join(' '),
      'handles start/end': `${first.resources} / ${end.resources}`,
      'request log': end.log,
    };
    console.log('soak figures:');
    console.table(figures);

    expect(errors).toEqual([]);
    expect(stats.queries).toBeGreaterThan(50);
    expect(stats.retries).toBe(end.injected);
    // Once warm (page cache and JIT filled), the heap stays flat: growth would be a leak per request.
    expect(end.heapUsed - base.heapUsed).toBeLessThan(16 * 2 ** 20);
    expect(end.rss - base.rss).toBeLessThan(96 * 2 ** 20);
    // Every client is gone: the emulator holds no more sockets or timers than before the first one came.
    expect(end.resources).toBeLessThanOrEqual(first.resources);
    expect(end.log).toBeLessThanOrEqual(10_000);
  }, 60_000);
});
