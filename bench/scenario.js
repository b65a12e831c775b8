// One benchmark scenario in a fresh process, so its peak RSS is its own. Prints one JSON line.
import { subscribe } from 'node:diagnostics_channel';
import { createWriteStream, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { parse as csvParse } from 'csv-parse/sync';
import { request } from 'undici';
import { DatasetClient, toArrowIpc } from '../dist/index.js';
import { DEFAULT_CONCURRENCY, DEFAULT_PAGE_SIZE } from '../dist/query/stream-options.js';
import { naiveRowMaker } from './shared.js';

const [name, url, dataset, pageSizeArg, concurrencyArg, windowArg] = process.argv.slice(2);
// 'default': the library's defaults (the floor scenarios fetch the same pages the same way).
const pageSize = pageSizeArg === 'default' ? DEFAULT_PAGE_SIZE : Number(pageSizeArg);
const concurrency = concurrencyArg === 'default' ? DEFAULT_CONCURRENCY : Number(concurrencyArg);
/** Stream options of the library scenarios: only what the command line set, else the defaults. */
const lib = {
  ...(pageSizeArg === 'default' ? {} : { pageSize }),
  ...(concurrencyArg === 'default' ? {} : { concurrency }),
  ...(windowArg === undefined || windowArg === 'default' ? {} : { window: Number(windowArg) }),
  // DQS_DECODER=json: the library's reference decoders (the library itself reads no environment).
  ...(process.env.DQS_DECODER ? { decoder: process.env.DQS_DECODER } : {}),
};
const key = 'bench';
const headers = { authorization: `token ${key}`, 'x-api-version': '20151130' };
const TABLE = 'application/vnd.service.table+json';

async function queryId() {
  const res = await request(`${url}/datasets/${dataset}/query/`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body: '{}',
  });
  const h = await res.body.json();
  const head = await request(`${url}/datasets/${dataset}/query/${h.id}`, { method: 'HEAD', headers });
  await head.body.dump();
  return { id: h.id, total: Number(head.headers['x-total']) };
}

/** Reads pages [start, limit] with `concurrency` requests at once, in order, through `each(buffer)`. */
async function pages(id, total, size, conc, accept, each) {
  let next = 1;
  let bytes = 0;
  const worker = async () => {
    while (next <= total) {
      const start = next;
      next += size;
      const res = await request(`${url}/datasets/${dataset}/query/${id}?start=${start}&limit=${size}`, {
        headers: { ...headers, accept },
      });
      const buf = Buffer.from(await res.body.arrayBuffer());
      bytes += buf.length;
      each(buf);
    }
  };
  await Promise.all(Array.from({ length: conc }, worker));
  return bytes;
}

/**
 * Bytes of the memory a table's buffers pin (each ArrayBuffer once, whole: a buffer that is a view of a
 * bigger one pins all of it): what `toTable()`'s peak RSS is compared to.
 */
function tableBytes(table) {
  const seen = new Set();
  let bytes = 0;
  const visit = (data) => {
    for (const b of [data.values, data.valueOffsets, data.nullBitmap, data.typeIds]) {
      if (b && !seen.has(b.buffer)) {
        seen.add(b.buffer);
        bytes += b.buffer.byteLength;
      }
    }
    for (const child of data.children) visit(child);
    if (data.dictionary) for (const d of data.dictionary.data) visit(d);
  };
  for (const batch of table.batches) visit(batch.data);
  return bytes;
}

const extra = {};

// DQS_BENCH_TIMELINE=file: every page's timing (the `dqs-client:page` channel) and every delivery
// (`progress`) written there as JSON, in ms since the scenario started: where a scenario's time goes.
const timelinePath = process.env.DQS_BENCH_TIMELINE;
const timeline = { pages: [], delivered: [], concurrency: [] };
let t0 = 0;
if (timelinePath) {
  subscribe('dqs-client:page', (p) => {
    const end = performance.now() - t0;
    timeline.pages.push({ ...p, sent: end - p.decodeMs - p.bodyMs - p.waitMs, end });
  });
}
/** Notes a stream's deliveries and concurrency changes when a timeline is asked for. */
function watch(stream) {
  if (!timelinePath) return;
  stream.on('progress', (p) => timeline.delivered.push({ at: performance.now() - t0, rows: p.rows }));
  stream.on('concurrency', (c) => timeline.concurrency.push({ at: performance.now() - t0, ...c }));
}

/** The whole result through the library's `toTable()`, with `options` over the scenario's stream options. */
/** An OpenTelemetry SDK registered globally, spans kept in memory (devDependencies); its exporter. */
async function otelSdk() {
  const { context, metrics, propagation, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = await import(
    '@opentelemetry/sdk-trace-base'
  );
  const { MeterProvider, MetricReader } = await import('@opentelemetry/sdk-metrics');
  class Reader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const exporter = new InMemorySpanExporter();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [new Reader()] }));
  return exporter;
}

async function otelContext() {
  const { context } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

async function libTable(options = {}, clientOptions = {}) {
  const client = new DatasetClient({ baseUrl: url, apiKey: key, ...clientOptions });
  const result = await client.query(dataset, {});
  // The event-loop delay while the table streams (issue #45's measure: after `query()`, whose first page
  // and module loading are the process's start, not the stream's).
  loopDelay.reset();
  const table = await result.toTable({ ...lib, ...options });
  await client.close();
  return table;
}

const scenarios = {
  // The floor: bytes only, then bytes + JSON.parse, with the same pages as the library.
  async bytes() {
    const { id, total } = await queryId();
    await pages(id, total, pageSize, concurrency, TABLE, () => {});
    return total;
  },
  async 'json-parse'() {
    const { id, total } = await queryId();
    let rows = 0;
    await pages(id, total, pageSize, concurrency, TABLE, (b) => {
      rows += JSON.parse(b.toString('utf8')).rows.length;
    });
    return rows;
  },
  // The service's own thin client: 100k-row pages one by one, res.json(), untyped arrays kept in memory.
  async naive() {
    const { id, total } = await queryId();
    const all = [];
    for (let start = 1; start <= total; start += 100_000) {
      const res = await fetch(`${url}/datasets/${dataset}/query/${id}?start=${start}&limit=100000`, {
        headers: { ...headers, accept: TABLE },
      });
      const page = await res.json();
      for (const r of page.rows) all.push(r);
    }
    return all.length;
  },
  // The naive client of issue #45: every 10k-row page at once with Promise.all and res.json(), untyped rows
  // kept (what `toArray()` is compared with: ≤ 1.1x its time and ≤ its peak RSS).
  async 'naive-all'() {
    const { id, total } = await queryId();
    const starts = [];
    for (let start = 1; start <= total; start += 10_000) starts.push(start);
    const all = await Promise.all(
      starts.map(async (start) => {
        const res = await fetch(`${url}/datasets/${dataset}/query/${id}?start=${start}&limit=10000`, {
          headers: { ...headers, accept: TABLE },
        });
        return (await res.json()).rows;
      }),
    );
    return all.reduce((n, rows) => n + rows.length, 0);
  },
  async 'csv-parse'() {
    const { id, total } = await queryId();
    let rows = 0;
    await pages(id, total, pageSize, concurrency, 'text/csv', (b) => {
      rows += csvParse(b, { from_line: 2 }).length;
    });
    return rows;
  },
  // The defaults before adaptive concurrency (a fixed 2, a window of 4 pages): the loopback baseline.
  // Telemetry's cost (docs/telemetry.md): `lib-table` itself runs with @opentelemetry/api installed (a
  // devDependency) and no SDK, so its spans are the API's no-ops. `-otel-off`: `telemetry: false`.
  // `-otel-sdk`: an SDK registered as an application would (in-memory exporter, a metric reader, context
  // manager, W3C). Without the package: `--base` a copy of this dist/ and bench/ beside a node_modules
  // that lacks it (docs/telemetry.md).
  async 'lib-table-otel-off'() {
    return (await libTable({}, { telemetry: false })).numRows;
  },
  // Only what every SDK setup registers besides the providers: the context manager (AsyncLocalStorage).
  async 'lib-table-otel-context'() {
    return (await libTable()).numRows;
  },
  async 'lib-table-otel-sdk'() {
    const rows = (await libTable()).numRows;
    extra.spans = prepared.getFinishedSpans().length;
    return rows;
  },
  async 'lib-table-c2'() {
    return (await libTable({ concurrency: 2 })).numRows;
  },
  async 'lib-ipc-file-c2'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const path = join(tmpdir(), `dqs-bench-${process.pid}.arrow`);
    let rows = 0;
    const stream = client.stream(dataset, {}, { ...lib, concurrency: 2 });
    stream.on('progress', (p) => {
      rows = p.rows;
    });
    await pipeline(stream, toArrowIpc({ format: 'file' }), createWriteStream(path));
    await rm(path, { force: true });
    await client.close();
    return rows;
  },
  async 'lib-table'() {
    const table = await libTable();
    extra.tableMB = tableBytes(table) / 2 ** 20;
    return table.numRows;
  },
  // The library on its reference path (JSON.parse + the row converters): what the byte decoder replaces.
  async 'lib-table-jsonparse'() {
    return (await libTable({ decoder: 'json' })).numRows;
  },
  // Row objects built naively: the same pages, JSON.parse, then a generic per-value loop (Dates for date
  // and datetime columns, a fresh object filled key by key). What the library's row output competes with.
  async 'rows-naive'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const result = await client.query(dataset, {});
    await client.close();
    const columns = result.fields.map((f) => ({ id: f.id, type: f.type }));
    const makeRow = naiveRowMaker(columns);
    let rows = 0;
    // Each object escapes (as one handed to a consumer does), so V8 cannot optimize its making away.
    let last;
    await pages(result.id, result.total, pageSize, concurrency, TABLE, (b) => {
      for (const r of JSON.parse(b.toString('utf8')).rows) {
        last = makeRow(r);
        rows++;
      }
    });
    extra.lastRowKeys = Object.keys(last ?? {}).length;
    return rows;
  },
  async 'lib-table-csv'() {
    return (await libTable({ format: 'csv' })).numRows;
  },
  async 'lib-table-xlsx'() {
    return (await libTable({ format: 'xlsx' })).numRows;
  },
  async 'lib-rows'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const result = await client.query(dataset, {});
    let rows = 0;
    for await (const _ of result.stream({ ...lib, output: 'rows' })) rows++;
    await client.close();
    return rows;
  },
  // `toArray()`: every row object of the result in one array, as the naive client's `res.json()` gives
  // its rows (issue #33 compares the two).
  async 'lib-toarray'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const rows = await (await client.query(dataset, {})).toArray(lib);
    await client.close();
    return rows.length;
  },
  'lib-ipc-file': () => ipcFile({}),
  // The same with compression off: the server (bench/server.js) compresses for clients that ask, and
  // the library's default ('auto') measures which is faster on the link; this is the baseline.
  'lib-ipc-file-plain': () => ipcFile({ compression: false }),
  // Every page asked compressed: what compression costs per page where bytes are cheap.
  'lib-ipc-file-gzip': () => ipcFile({ compression: true }),
  'lib-table-plain': async () => (await libTable({}, { compression: false })).numRows,
};

/** The whole result written to an Arrow IPC file through the library's stream. */
async function ipcFile(clientOptions) {
  const client = new DatasetClient({ baseUrl: url, apiKey: key, ...clientOptions });
  const path = join(tmpdir(), `dqs-bench-${process.pid}.arrow`);
  let rows = 0;
  const stream = client.stream(dataset, {}, lib);
  watch(stream);
  stream.on('progress', (p) => {
    rows = p.rows;
  });
  await pipeline(stream, toArrowIpc({ format: 'file' }), createWriteStream(path));
  await rm(path, { force: true });
  await client.close();
  return rows;
}

// The process before any work (modules loaded): what a scenario's own memory is measured above.
const baseRssMB = process.memoryUsage().rss / 2 ** 20;
const run = scenarios[name];
if (!run) throw new Error(`unknown scenario ${name}`);
// What an application sets up once at its start, before the timed work: the OpenTelemetry SDK
// (loading its modules alone takes ~0.2 s).
const prepared =
  name === 'lib-table-otel-sdk'
    ? await otelSdk()
    : name === 'lib-table-otel-context'
      ? await otelContext()
      : undefined;
// How long the event loop waited to run something, sampled every 5 ms: what another task of the
// application (a timer, a request handler) would wait while the result is read.
const loopDelay = monitorEventLoopDelay({ resolution: 5 });
loopDelay.enable();
const cpu0 = process.cpuUsage();
t0 = performance.now();
const rows = await run();
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
loopDelay.disable();
if (timelinePath) writeFileSync(timelinePath, JSON.stringify(timeline));
console.log(
  JSON.stringify({
    name,
    rows,
    ms,
    // This process's CPU (main thread and thread pool, inflating included): steadier than wall time on a
    // shared VM, and what an extra compressed page costs on loopback.
    cpuMs: (cpu.user + cpu.system) / 1000,
    // Event-loop delay p99 and max, in ms (the histogram is in ns).
    loopP99Ms: loopDelay.percentile(99) / 1e6,
    loopMaxMs: loopDelay.max / 1e6,
    maxRssMB: process.resourceUsage().maxRSS / 1024,
    baseRssMB,
    ...extra,
  }),
);
