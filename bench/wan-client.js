// One contender of the WAN benchmark in a fresh process (its own connections, its own peak RSS). Prints one
// JSON line: { ms, rows, error?, requests?, concurrency? }.
// Usage: node bench/wan-client.js <contender> <url> <job-json>
//   job: { dataset, body?, queries? (fan-out: [dataset, ticker] pairs), at? (fan-out: queries at once), options? }
import { createHash } from 'node:crypto';
import { subscribe } from 'node:diagnostics_channel';
import { DatasetClient, queryEach } from '../dist/index.js';

const [contender, url, jobJson] = process.argv.slice(2);
const job = JSON.parse(jobJson);
const key = 'bench';
const headers = { authorization: `token ${key}`, 'x-api-version': '20151130' };
const TABLE = 'application/vnd.service.table+json';

async function create(dataset, body) {
  const res = await fetch(`${url}/datasets/${dataset}/query/`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  if (!res.ok) throw new Error(`POST ${res.status}`);
  const handle = await res.json();
  // The emulator answers `complete` at once in these scenarios (no query delay): the naive clients rely on it.
  if (handle.state !== 'complete') throw new Error(`query ${handle.state}`);
  return handle;
}

async function getJson(dataset, id, start, limit) {
  const res = await fetch(`${url}/datasets/${dataset}/query/${id}?start=${start}&limit=${limit}`, {
    headers: { ...headers, accept: TABLE },
  });
  if (!res.ok) throw new Error(`GET ${res.status}`);
  return res.json();
}

/** Runs `fn` over `items`, `at` at once. */
async function pool(items, at, fn) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(at, items.length) }, worker));
}

const contenders = {
  // The library as a user calls it: query, then the whole result as an Arrow table.
  async lib() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key, ...job.clientOptions });
    const changes = [];
    client.on('concurrency', (c) => {
      if (changes.length === 0) changes.push(c.previous);
      changes.push(c.limit);
      trace?.push(`${(performance.now() - t0).toFixed(0).padStart(6)} ms  concurrency ${c.limit}`);
    });
    // Where the time goes, page by page (docs/compression.md): summed here, reported as `split`.
    const split = {
      pages: 0,
      compressedPages: 0,
      bytes: 0,
      compressedBytes: 0,
      wireBytes: 0,
      waitMs: 0,
      bodyMs: 0,
      decodeMs: 0,
    };
    subscribe('dqs-client:page', (p) => {
      split.pages++;
      split.bytes += p.bytes;
      split.wireBytes += p.wireBytes;
      if (p.codings.length) {
        split.compressedPages++;
        split.compressedBytes += p.bytes;
      }
      split.waitMs += p.waitMs;
      split.bodyMs += p.bodyMs;
      split.decodeMs += p.decodeMs;
      const end = performance.now() - t0;
      trace?.push(
        `${end.toFixed(0).padStart(6)} ms  page ${p.start}+${p.limit}: sent ${(end - p.decodeMs - p.bodyMs - p.waitMs).toFixed(0)}, ` +
          `wait ${p.waitMs.toFixed(0)}, body ${p.bodyMs.toFixed(0)}, decode ${p.decodeMs.toFixed(0)}, ${(p.bytes / 1e6).toFixed(1)} MB`,
      );
    });
    // When the first data byte came (the headers of the first GET that asks for more than a row),
    // from when the POST was sent: the bound is 2 RTT + the server's time for that page.
    // Also from when the POST was answered: what the client itself adds is the time after that.
    let postAt;
    let postAnsweredAt;
    let firstData;
    subscribe('undici:request:create', ({ request }) => {
      if (request.method === 'POST' && postAt === undefined) postAt = performance.now();
    });
    subscribe('undici:request:headers', ({ request }) => {
      if (request.method === 'POST' && postAnsweredAt === undefined) postAnsweredAt = performance.now();
      const limit = Number(/[?&]limit=(\d+)/.exec(request.path)?.[1] ?? 0);
      if (firstData === undefined && request.method === 'GET' && limit > 1 && postAt !== undefined) {
        const now = performance.now();
        firstData = { afterPostMs: now - postAt, afterAnswerMs: now - postAnsweredAt, rows: limit };
      }
    });
    try {
      const result = await client.query(job.dataset, job.body ?? {});
      const table = await result.toTable(job.options ?? {});
      return { rows: table.numRows, concurrency: changes, split, firstData };
    } finally {
      await client.close();
    }
  },
  // A naive user: one POST, then every 10k-row page at once with Promise.all and res.json().
  async 'naive-all'() {
    const handle = await create(job.dataset, job.body);
    const starts = [];
    for (let s = 1; s <= handle.total; s += 10_000) starts.push(s);
    const pages = await Promise.all(starts.map((s) => getJson(job.dataset, handle.id, s, 10_000)));
    return { rows: pages.reduce((n, p) => n + p.rows.length, 0) };
  },
  // No client at all: the bytes of 5,000-row pages, 128 in flight, drained and dropped (the issue's
  // "only draining the bytes"): what the link and the server allow on this machine, decoding aside.
  async drain() {
    const handle = await create(job.dataset, job.body);
    const starts = [];
    for (let s = 1; s <= handle.total; s += 5_000) starts.push(s);
    let bytes = 0;
    await pool(starts, 128, async (s) => {
      const res = await fetch(`${url}/datasets/${job.dataset}/query/${handle.id}?start=${s}&limit=5000`, {
        headers: { ...headers, accept: TABLE },
      });
      if (!res.ok) throw new Error(`GET ${res.status}`);
      for await (const chunk of res.body) bytes += chunk.length;
    });
    return { rows: handle.total, bytes };
  },
  // The service's own client style: 100k-row pages one after another, res.json(), rows kept.
  async service() {
    const handle = await create(job.dataset, job.body);
    const all = [];
    for (let s = 1; s <= handle.total; s += 100_000) {
      const page = await getJson(job.dataset, handle.id, s, 100_000);
      for (const r of page.rows) all.push(r);
    }
    return { rows: all.length };
  },
  // Fan-out, the library: one client, `at` queries at once, each read whole as an Arrow table.
  async 'lib-fanout'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    let rows = 0;
    try {
      await pool(job.queries, job.at, async ([dataset, ticker]) => {
        const result = await client.query(dataset, { tickers: [ticker] });
        // Not `rows += await ...`: that reads `rows` before the await and loses the other queries' counts.
        const { numRows } = await result.toTable(job.options ?? {});
        rows += numRows;
      });
      return { rows };
    } finally {
      await client.close();
    }
  },
  // Past the row cap (issue #46): the whole ticker list with `split: true`, read to one Arrow table.
  async 'lib-split'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    try {
      const result = await client.query(job.dataset, { tickers: job.tickers }, { split: true });
      const table = await result.toTable(job.options ?? {});
      return { rows: table.numRows, parts: result.parts?.length ?? 1, tables: [table] };
    } finally {
      await client.close();
    }
  },
  // The same tickers as one query each (`queryEach`, its defaults), every table kept.
  async 'lib-each'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const tables = [];
    try {
      for await (const { table } of queryEach(client, { datasets: [job.dataset], tickers: job.tickers })) {
        tables.push(table);
      }
      return { rows: tables.reduce((n, t) => n + t.numRows, 0), tables };
    } finally {
      await client.close();
    }
  },
  // Fan-out, naive: POST, then one GET of up to 10k rows, res.json(), `at` queries at once.
  async 'naive-fanout'() {
    let rows = 0;
    await pool(job.queries, job.at, async ([dataset, ticker]) => {
      const handle = await create(dataset, { tickers: [ticker] });
      if (handle.total === 0) return;
      const page = await getJson(dataset, handle.id, 1, 10_000);
      rows += page.rows.length;
    });
    return { rows };
  },
};

/**
 * The rows of `tables` whatever their order (queryEach yields tables as they complete): each row's values
 * as JSON, sorted, hashed. Taken after the clock stops.
 */
function checksum(tables) {
  const rows = [];
  for (const table of tables) for (const row of table) rows.push(JSON.stringify(Object.values(row.toJSON())));
  rows.sort();
  const hash = createHash('sha256');
  for (const row of rows) hash.update(row).update('\n');
  return hash.digest('hex').slice(0, 16);
}

// DQS_WAN_TRACE=1: the library contenders print their pages and concurrency changes, in time order, on
// stderr (where the time goes in one run; wan.js reads only stdout).
const trace = process.env.DQS_WAN_TRACE ? [] : undefined;
const run = contenders[contender];
if (!run) throw new Error(`unknown contender ${contender}`);
const t0 = performance.now();
if (trace) {
  // Stretches of 30 ms or more without a turn of the event loop: while one lasts, no request is sent and
  // no socket is read (how a burst of decodes held requests unsent was found).
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (now - last > 30)
      trace.push(`${(now - t0).toFixed(0).padStart(6)} ms  event loop blocked ${(now - last).toFixed(0)} ms`);
    last = now;
  }, 5).unref();
}
let out;
try {
  out = await run();
} catch (err) {
  out = { error: String(err?.code ?? '') + ' ' + String(err?.message ?? err).slice(0, 200) };
}
const ms = performance.now() - t0;
const maxRssMB = process.resourceUsage().maxRSS / 1024;
// Tables to compare across contenders: their checksum, once the clock has stopped.
if (out.tables) {
  out.checksum = checksum(out.tables);
  delete out.tables;
}
console.log(JSON.stringify({ contender, ms, maxRssMB, ...out }));
if (trace) process.stderr.write(`${trace.join('\n')}\n`);
