// `npm run bench:wan` (or `npm run bench -- --wan`): the library against a service that is far away, through
// the emulator's WAN shaping (bench/wan-server.js, its own process, its page cache warmed by one untimed
// run of each contender; `--cold` times cold pages, built on the client's cores), beside
// the naive clients a user would write. Contenders alternate within each round; every run is a fresh
// process (bench/wan-client.js). Time is printed as a fraction of the physical limit: the result's bytes
// over the total bandwidth, plus one round trip (1.0 would be a client that costs nothing).
//
// Usage: node bench/wan.js [--quick] [--rounds N] [--only wan$,fan-out] [--cold] [--base ../other-checkout]
// (`--base`: each library contender also runs from another checkout's built dist, as `base: <name>`, in
// the same rounds: before and after in one run)
// (`--only`: scenarios whose name starts with one of the words; a word ending in $ is a whole name)
// (`--contenders library,naive`: only the contenders whose name starts with one of the words)
//
// Scenarios are a table: add one by adding a row (a name, emulator options, the job, the contenders).
import { execFile, fork } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { parseArgs, promisify } from 'node:util';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    only: { type: 'string' },
    wan: { type: 'boolean', default: true },
    cold: { type: 'boolean', default: false },
    base: { type: 'string' },
    contenders: { type: 'string' },
  },
});
const quick = values.quick;

/** The issue's WAN: 40 ms RTT (+1 per new connection), 30 ms + 0.02 ms/row per page, 25 MB/s per connection, 100 MB/s in all. */
const WAN = {
  latencyMs: 40,
  pageTimeMs: 30,
  rowTimeMs: 0.02,
  connectionBytesPerSecond: 25e6,
  totalBytesPerSecond: 100e6,
  compression: false,
};
// No load shedding on loopback: the naive client (no retries) sends its 50 pages at once, which the
// emulator's default bound answers 503; the loopback rows compare clients, not the emulator's shedding.
const LOOPBACK = { compression: false, maxPageRowsInFlight: 0 };

const lib = (name, options = {}) => ({ name, client: 'lib', options });
const DEFAULTS = lib('library defaults');
const NAIVE = { name: 'naive Promise.all of 10k pages + res.json()', client: 'naive-all' };
const SERVICE = { name: 'service-style 100k pages one after another', client: 'service' };
const fixed = (n, rows = 10_000) =>
  lib(`fixed: pageSize ${rows}, concurrency ${n}`, { pageSize: rows, concurrency: n });
/**
 * The grid a default is judged against (issue #44): every fixed pageSize x concurrency a user could pick
 * from a reasonable range. The defaults should reach 0.9 of the best of them on every shape.
 */
const GRID = [5_000, 10_000, 25_000].flatMap((rows) => [16, 32, 64].map((n) => fixed(n, rows)));
/** The library with client options (`lib()` takes stream options). */
const libClient = (name, clientOptions) => ({ name, client: 'lib', clientOptions });

/**
 * Issue 17's link: 100 Mbit/s in all, 40 ms RTT, the same page execution time, a server that gzips at
 * level 1 (nginx's default) for clients that ask. `limit ÷ time` is then against the uncompressed limit
 * (the result's JSON bytes over the bandwidth): what no client that does not negotiate can beat.
 */
const WAN_GZIP = {
  latencyMs: 40,
  pageTimeMs: 30,
  rowTimeMs: 0.02,
  totalBytesPerSecond: 12.5e6,
  compression: { level: 1 },
};
const PLAIN = libClient('library, compression: false', { compression: false });

const ROWS = quick ? 200_000 : 500_000;

/**
 * One row per scenario. `emulator`: shaping options; `rows`: the result's size (the emulator's rowCap);
 * `contenders`: who runs; `rounds`: overrides --rounds; `report`: extra figures from the server's log.
 * Fan-out rows have `fanout: { dataset, queries, at }` instead of `rows`.
 */
/**
 * Link shapes the defaults were not tuned on, each against the grid in the same rounds: the bench's WAN,
 * rows half as wide, a far service slow per row, a near fast link, a link ten times slower.
 */
/** Issue #46: every job_listings ticker (815,333 rows, past the cap), split against one query each. */
const SPLIT_CONTENDERS = [
  { name: 'library, split: true', client: 'lib-split' },
  { name: 'library, queryEach', client: 'lib-each' },
];
const SPLIT_SHAPES = [
  { name: 'split: loopback', emulator: LOOPBACK },
  { name: 'split: wan', emulator: WAN },
].map((shape) => ({
  ...shape,
  split: true,
  dataset: 'job_listings',
  report: 'requests',
  contenders: SPLIT_CONTENDERS,
}));

const GRID_SHAPES = [
  { name: 'grid: wan', emulator: WAN, rows: ROWS },
  { name: 'grid: rows half as wide (app_reviews)', emulator: WAN, dataset: 'app_reviews', rows: ROWS },
  {
    name: 'grid: far, slow service (80 ms RTT, 50 ms + 0.08 ms/row)',
    emulator: { ...WAN, latencyMs: 80, pageTimeMs: 50, rowTimeMs: 0.08 },
    rows: ROWS,
  },
  {
    name: 'grid: near, fast link (5 ms RTT, 0.004 ms/row, 60 MB/s per connection, 400 MB/s)',
    emulator: {
      ...WAN,
      latencyMs: 5,
      rowTimeMs: 0.004,
      connectionBytesPerSecond: 60e6,
      totalBytesPerSecond: 400e6,
    },
    rows: ROWS,
  },
  {
    name: 'grid: a link ten times slower (10 MB/s)',
    emulator: { ...WAN, connectionBytesPerSecond: 2.5e6, totalBytesPerSecond: 10e6 },
    rows: quick ? 20_000 : 100_000,
  },
].map((shape) => ({ ...shape, grid: true, contenders: [DEFAULTS, ...GRID, NAIVE] }));

const SCENARIOS = [
  { name: 'loopback', emulator: LOOPBACK, rows: ROWS, contenders: [DEFAULTS, fixed(2), NAIVE, SERVICE] },
  { name: 'wan', emulator: WAN, rows: ROWS, contenders: [DEFAULTS, fixed(16), fixed(64), NAIVE, SERVICE] },
  // Other shapes than the bench's own (a default must hold for them): narrower rows, a service that
  // spends ten times as long per row, a link ten times slower.
  {
    name: 'wan with narrower rows (app_reviews, 165 bytes a row)',
    emulator: WAN,
    dataset: 'app_reviews',
    rows: ROWS,
    contenders: [DEFAULTS, NAIVE],
  },
  {
    name: 'wan with 10x the service time per row',
    emulator: { ...WAN, rowTimeMs: 0.2 },
    rows: ROWS,
    contenders: [DEFAULTS, NAIVE],
  },
  {
    // A result the byte budget holds whole (21 MB), from that service: its pages wait ~1.4 s each.
    name: 'wan with 10x the service time per row, 100k rows',
    emulator: { ...WAN, rowTimeMs: 0.2 },
    rows: quick ? 20_000 : 100_000,
    contenders: [DEFAULTS, NAIVE],
  },
  {
    name: 'wan with a link 10x slower (10 MB/s)',
    emulator: { ...WAN, connectionBytesPerSecond: 2.5e6, totalBytesPerSecond: 10e6 },
    rows: quick ? 20_000 : 100_000,
    contenders: [DEFAULTS, NAIVE],
  },
  {
    name: 'wan + at most 6 requests in flight',
    emulator: { ...WAN, maxInFlight: 6 },
    rows: ROWS,
    contenders: [DEFAULTS, fixed(6), fixed(4), NAIVE],
    report: 'refusals',
  },
  {
    name: 'wan + 20 requests per minute',
    emulator: { ...WAN, requestsPerMinute: 20 },
    // 30 pages of 10k rows and the query's own requests: the limit is reached once, and waited out (~60 s).
    rows: 300_000,
    contenders: [DEFAULTS, NAIVE, SERVICE],
    rounds: 1,
    slow: true,
    report: 'refusals',
  },
  {
    name: 'wan 100 Mbit/s + gzip',
    emulator: WAN_GZIP,
    rows: ROWS,
    contenders: [DEFAULTS, PLAIN, NAIVE],
    report: 'split',
  },
  {
    name: 'loopback + gzip',
    emulator: { compression: { level: 1 }, maxPageRowsInFlight: 0 },
    rows: ROWS,
    contenders: [DEFAULTS, PLAIN, libClient('library, compression: true', { compression: true }), NAIVE],
    report: 'split',
  },
  {
    name: 'fan-out: small queries, 8 at once',
    emulator: WAN,
    fanout: { datasets: ['web_traffic', 'app_reviews', 'store_locations'], queries: quick ? 64 : 200, at: 8 },
    contenders: [
      { name: 'library, one client', client: 'lib-fanout' },
      { name: 'naive POST + one GET', client: 'naive-fanout' },
    ],
  },
  ...GRID_SHAPES,
  ...SPLIT_SHAPES,
];

// The grid shapes are long (11 contenders each): run with `--only grid`.
const selected = SCENARIOS.filter(
  (s) =>
    (s.grid ? values.only?.split(',').some((o) => s.name.startsWith(o)) : true) &&
    (values.only
      ? values.only
          .split(',')
          .some((o) => (o.endsWith('$') ? s.name === o.slice(0, -1) : s.name.startsWith(o)))
      : true) &&
    !(quick && s.slow),
);
const rounds = (s) => s.rounds ?? Number(values.rounds ?? (quick ? 1 : 3));

// ---- the figures the limit is computed from: bytes of the result, read once from an unshaped emulator ----
const { startEmulator, queryTotal } = await import('../dist/emulator/index.js');
const { COMPANIES } = await import('../dist/emulator/index.js');

async function resultBytes(dataset, body, rowCap, page = 10_000) {
  const emu = await startEmulator({ port: 0, apiKey: 'k', rowCap, compression: false, pageCacheSize: 0 });
  const headers = { authorization: 'token k', 'x-api-version': '20151130' };
  try {
    const res = await fetch(`${emu.url}/datasets/${dataset}/query/`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const { id, total } = await res.json();
    let bytes = 0;
    for (let start = 1; start <= total; start += page) {
      const r = await fetch(`${emu.url}/datasets/${dataset}/query/${id}?start=${start}&limit=${page}`, {
        headers: { ...headers, accept: 'application/vnd.service.table+json' },
      });
      bytes += (await r.arrayBuffer()).byteLength;
    }
    return { bytes, total };
  } finally {
    await emu.close();
  }
}

/**
 * Inflating's cost, measured apart (in the client it overlaps the transfer on the thread pool): the
 * result's pages gzipped at level 1 by an unshaped emulator, inflated one after another on this thread.
 * @returns ms per decoded byte
 */
async function inflateCost(rowCap, page = 10_000) {
  const { gunzipSync } = await import('node:zlib');
  const { request } = await import('undici');
  const emu = await startEmulator({
    port: 0,
    apiKey: 'k',
    rowCap,
    compression: { level: 1 },
    pageCacheSize: 0,
  });
  const headers = { authorization: 'token k', 'x-api-version': '20151130' };
  try {
    const res = await fetch(`${emu.url}/datasets/job_listings/query/`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{}',
    });
    const { id, total } = await res.json();
    let ms = 0;
    let bytes = 0;
    for (let start = 1; start <= total; start += page) {
      const r = await request(`${emu.url}/datasets/job_listings/query/${id}?start=${start}&limit=${page}`, {
        headers: { ...headers, accept: 'application/vnd.service.table+json', 'accept-encoding': 'gzip' },
      });
      const gz = Buffer.from(await r.body.arrayBuffer());
      const t0 = performance.now();
      bytes += gunzipSync(gz).length;
      ms += performance.now() - t0;
    }
    return ms / bytes;
  } finally {
    await emu.close();
  }
}

/** `n` small queries ("these tickers, these datasets"): every ticker with rows in each dataset, up to 10k rows. */
function fanoutQueries(datasets, n) {
  const queries = [];
  for (const dataset of datasets) {
    for (const c of COMPANIES) {
      const total = queryTotal(dataset, { tickers: [c.id] });
      if (total > 0 && total <= 10_000 && queries.length < n) queries.push({ dataset, ticker: c.id, total });
    }
  }
  return queries;
}

// ---- running ----
const server = fork(new URL('./wan-server.js', import.meta.url), {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const next = (key) => new Promise((resolve) => server.once('message', (m) => resolve(m[key] ?? m)));
await next('ready');

async function once(scenario, contender, job, emulatorOptions) {
  // A rate limit's window must start empty for every contender; other scenarios keep a warm page cache.
  server.send({ start: emulatorOptions, fresh: Boolean(scenario.emulator.requestsPerMinute) });
  const url = await next('url');
  const { stdout, stderr } = await run(
    process.execPath,
    [
      contender.base
        ? new URL('bench/wan-client.js', `file://${values.base.replace(/\/?$/, '/')}`).pathname
        : new URL('./wan-client.js', import.meta.url).pathname,
      contender.client,
      url,
      JSON.stringify({ ...job, options: contender.options, clientOptions: contender.clientOptions }),
    ],
    { maxBuffer: 1 << 20 },
  );
  const result = JSON.parse(stdout.trim().split('\n').pop());
  // DQS_WAN_TRACE=1: the library's pages and concurrency changes (bench/wan-client.js), on stderr.
  if (process.env.DQS_WAN_TRACE && stderr)
    console.error(`--- ${scenario.name}: ${contender.name}\n${stderr}`);
  if (scenario.report === 'refusals' || scenario.report === 'requests') {
    server.send({ requests: true });
    const requests = await next('requests');
    const first = requests[0]?.at ?? 0;
    const refused = requests.filter((r) => r.status === 429);
    const firstRefusal = refused[0]?.at;
    result.requests = requests.length;
    result.refused = refused.length;
    const late = requests.filter((r) => r.at - first > 1000);
    result.refusedAfter1s = late.length ? late.filter((r) => r.status === 429).length / late.length : 0;
    // Refusals more than a second after the first one: the client went over the limit again.
    result.refusedAgain =
      firstRefusal === undefined ? 0 : refused.filter((r) => r.at - firstRefusal > 1000).length;
  }
  return result;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** One line per grid shape: the defaults against the best fixed contender of the same rounds. */
const gridLines = [];
function gridLine(scenario, results, defaultsName) {
  const ok = (name) => results.get(name).filter((x) => !x.error);
  const defaults = results.get(defaultsName);
  const fixedOnes = GRID.map((c) => c.name).filter((n) => ok(n).length);
  if (!ok(defaultsName).length || !fixedOnes.length) return;
  const best = fixedOnes.reduce((a, b) =>
    median(ok(a).map((x) => x.ms)) <= median(ok(b).map((x) => x.ms)) ? a : b,
  );
  const bestMs = median(ok(best).map((x) => x.ms));
  const defMs = median(ok(defaultsName).map((x) => x.ms));
  // Per round: the best fixed contender of that round (any of the grid) against the defaults of that round.
  const perRound = defaults
    .map((d, i) => {
      if (d.error) return undefined;
      const fixedMs = GRID.map((c) => results.get(c.name)[i])
        .filter((x) => x && !x.error)
        .map((x) => x.ms);
      return fixedMs.length ? Math.min(...fixedMs) / d.ms : undefined;
    })
    .filter((x) => x !== undefined);
  const naive = ok(NAIVE.name);
  gridLines.push(
    `| ${scenario.name}${defaultsName === DEFAULTS.name ? '' : ` (${defaultsName})`} | ${(defMs / 1000).toFixed(2)} | ${best.replace('fixed: ', '')} | ${(bestMs / 1000).toFixed(2)} | ${(bestMs / defMs).toFixed(2)} (${Math.min(...perRound).toFixed(2)}-${Math.max(...perRound).toFixed(2)}) | ${naive.length ? (median(naive.map((x) => x.ms)) / defMs).toFixed(2) : '-'} |`,
  );
}
if (values.contenders) {
  const words = values.contenders.split(',');
  for (const scenario of SCENARIOS) {
    scenario.contenders = scenario.contenders.filter((c) => words.some((w) => c.name.startsWith(w)));
  }
}
// With --base, every library contender gets its twin from the other checkout, run right before it.
if (values.base) {
  for (const scenario of SCENARIOS) {
    // In a grid, only the defaults get a twin: the grid is what both are judged against.
    scenario.contenders = scenario.contenders.flatMap((c) =>
      c.client.startsWith('lib') && (!scenario.grid || c === DEFAULTS)
        ? [{ ...c, name: `base: ${c.name}`, base: true }, c]
        : [c],
    );
  }
}
console.log(
  `machine: ${cpus().length} x ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}${quick ? ' (--quick)' : ''}`,
);
for (const scenario of selected) {
  let job;
  let limitMs;
  let emulatorOptions;
  if (scenario.split) {
    // Every ticker with rows in the dataset, in the emulator's order: past the row cap together.
    const tickers = COMPANIES.map((c) => c.id).filter(
      (t) => queryTotal(scenario.dataset, { tickers: [t] }) > 0,
    );
    const rows = tickers.reduce((n, t) => n + queryTotal(scenario.dataset, { tickers: [t] }), 0);
    job = { dataset: scenario.dataset, tickers };
    emulatorOptions = scenario.emulator;
    console.log(`\n## ${scenario.name}: ${tickers.length} tickers of ${scenario.dataset}, ${rows} rows`);
  } else if (scenario.fanout) {
    const { datasets, queries: n, at } = scenario.fanout;
    const queries = fanoutQueries(datasets, n);
    let bytes = 0;
    for (const q of queries) bytes += (await resultBytes(q.dataset, { tickers: [q.ticker] }, 500_000)).bytes;
    const rows = queries.reduce((sum, q) => sum + q.total, 0);
    job = { queries: queries.map((q) => [q.dataset, q.ticker]), at };
    emulatorOptions = scenario.emulator;
    const rtt = scenario.emulator.latencyMs ?? 0;
    limitMs = scenario.emulator.totalBytesPerSecond
      ? (bytes / scenario.emulator.totalBytesPerSecond) * 1000 + rtt
      : undefined;
    console.log(
      `\n## ${scenario.name}: ${queries.length} queries (${datasets.join(', ')}), ${rows} rows, ${(bytes / 1e6).toFixed(1)} MB in all, ${at} at once`,
    );
  } else {
    const dataset = scenario.dataset ?? 'job_listings';
    const { bytes, total } = await resultBytes(dataset, {}, scenario.rows);
    if (scenario.report === 'split') scenario.inflateMsPerByte = await inflateCost(scenario.rows);
    job = { dataset, body: {} };
    emulatorOptions = { ...scenario.emulator, rowCap: scenario.rows };
    const rtt = scenario.emulator.latencyMs ?? 0;
    limitMs = scenario.emulator.totalBytesPerSecond
      ? (bytes / scenario.emulator.totalBytesPerSecond) * 1000 + rtt
      : undefined;
    console.log(
      `\n## ${scenario.name}: ${total} rows of ${dataset}, ${(bytes / 1e6).toFixed(1)} MB of table JSON` +
        (limitMs ? `, physical limit ${(limitMs / 1000).toFixed(2)} s` : ''),
    );
  }
  const results = new Map(scenario.contenders.map((c) => [c.name, []]));
  // One untimed run of each contender first, so every timed run reads pages the emulator has built and
  // cached (their pages differ in size): what is timed is the client and the shaped link, not the
  // emulator's page building on the same two cores. Not for a rate limit (a fresh emulator each run).
  if (!values.cold && !scenario.emulator.requestsPerMinute) {
    for (const contender of scenario.contenders) {
      // A page size the library chooses follows what it measures, so runs differ in the pages they ask
      // for: three untimed runs cover them, where one covers a fixed page size's.
      const adaptive = contender.client === 'lib' && contender.options?.pageSize === undefined;
      for (let i = 0; i < (adaptive ? 3 : 1); i++) await once(scenario, contender, job, emulatorOptions);
    }
  }
  for (let r = 0; r < rounds(scenario); r++) {
    for (const contender of scenario.contenders)
      results.get(contender.name).push(await once(scenario, contender, job, emulatorOptions));
  }
  if (scenario.grid) {
    gridLine(scenario, results, DEFAULTS.name);
    if (values.base) gridLine(scenario, results, `base: ${DEFAULTS.name}`);
  }
  // The baseline of the ratio column: the naive client, or for the split rows queryEach.
  const naiveName = scenario.contenders.find(
    (c) => c.client.startsWith('naive') || c.client === 'lib-each',
  )?.name;
  const naiveOk = results.get(naiveName)?.filter((x) => !x.error) ?? [];
  const naiveMs = naiveOk.length ? median(naiveOk.map((x) => x.ms)) : undefined;
  const naiveRuns = results.get(naiveName) ?? [];
  const perQuery = scenario.fanout ? job.queries.length : 1;
  console.log(
    `| contender | median s${perQuery > 1 ? ' (per query ms)' : ''} | limit ÷ time (median, min-max) | naive ÷ this (min-max) | peak RSS MB | notes |`,
  );
  console.log('|---|---|---|---|---|---|');
  for (const contender of scenario.contenders) {
    const runs = results.get(contender.name);
    const ok = runs.filter((x) => !x.error);
    const notes = [];
    const errors = runs.filter((x) => x.error);
    if (errors.length) notes.push(`${errors.length}/${runs.length} failed: ${errors[0].error.trim()}`);
    if (scenario.report === 'refusals') {
      notes.push(
        `429s: ${median(runs.map((x) => x.refused))} of ${median(runs.map((x) => x.requests))} requests`,
      );
      notes.push(`after 1 s: ${(100 * median(runs.map((x) => x.refusedAfter1s))).toFixed(1)} %`);
      notes.push(`> 1 s after the first 429: ${median(runs.map((x) => x.refusedAgain))}`);
    }
    if (scenario.report === 'requests') {
      const sums = [...new Set(ok.map((x) => x.checksum))];
      notes.push(
        `${median(runs.map((x) => x.requests))} requests (${Math.min(...runs.map((x) => x.requests))}-${Math.max(...runs.map((x) => x.requests))})`,
      );
      notes.push(`${ok[0]?.rows} rows, checksum ${sums.join(' / ')}`);
      if (ok[0]?.parts) notes.push(`${ok[0].parts} parts`);
    }
    const conc = ok.find((x) => x.concurrency?.length)?.concurrency;
    if (scenario.report === 'split' && ok[0]?.split) {
      // Medians over runs: where the time went (see bench/wan-client.js `split`).
      const m = (k) => median(ok.map((x) => x.split[k]));
      const compressedPages = m('compressedPages');
      const inflateMs = m('compressedBytes') * scenario.inflateMsPerByte;
      notes.push(
        `${(m('wireBytes') / 1e6).toFixed(1)} MB on the wire (${(m('bytes') / m('wireBytes')).toFixed(1)}x), ${compressedPages}/${m('pages')} pages compressed; ` +
          `transfer ≥ ${limitMs ? (m('wireBytes') / scenario.emulator.totalBytesPerSecond).toFixed(2) + ' s' : '-'}, ` +
          `inflate ${(inflateMs / 1000).toFixed(2)} s (thread pool), decode ${(m('decodeMs') / 1000).toFixed(2)} s (main thread), ` +
          `page wait ${(m('waitMs') / 1000).toFixed(2)} s + body ${(m('bodyMs') / 1000).toFixed(2)} s (summed over pages)`,
      );
    }
    if (conc) notes.push(`concurrency ${conc.slice(0, 12).join('→')}${conc.length > 12 ? '…' : ''}`);
    if (!ok.length) {
      console.log(`| ${contender.name} | - | - | - | - | ${notes.join('; ')} |`);
      continue;
    }
    const ms = median(ok.map((x) => x.ms));
    // Every round, not only the median: a default that is slow one run in five is not a default.
    const fastest = Math.min(...ok.map((x) => x.ms));
    const slowest = Math.max(...ok.map((x) => x.ms));
    // Per round, against the naive client of the same round (both ran back to back).
    const perRound = runs
      .map((x, i) => (x.error || naiveRuns[i]?.error ? undefined : naiveRuns[i]?.ms / x.ms))
      .filter((x) => x !== undefined);
    const first = ok.filter((x) => x.firstData).map((x) => x.firstData);
    if (first.length) {
      const after = median(first.map((f) => f.afterPostMs));
      const afterAnswer = median(first.map((f) => f.afterAnswerMs));
      const rtt = scenario.emulator.latencyMs ?? 0;
      const pageMs = (scenario.emulator.pageTimeMs ?? 0) + first[0].rows * (scenario.emulator.rowTimeMs ?? 0);
      notes.push(
        `first data byte ${after.toFixed(0)} ms after the POST was sent (bound: 2 RTT + the first page's server time = ${(2 * rtt + pageMs).toFixed(0)} ms, + ${rtt} per new connection, + the emulator's work on the POST), ${afterAnswer.toFixed(0)} ms after it was answered (1 RTT + that page: ${(rtt + pageMs).toFixed(0)} ms)`,
      );
    }
    const time =
      perQuery > 1
        ? `${(ms / 1000).toFixed(2)} (${((ms / perQuery) * (scenario.fanout?.at ?? 1)).toFixed(0)})`
        : (ms / 1000).toFixed(2);
    console.log(
      `| ${contender.name} | ${time} | ${limitMs ? `${(limitMs / ms).toFixed(2)} (${(limitMs / slowest).toFixed(2)}-${(limitMs / fastest).toFixed(2)})` : '-'} | ${naiveMs ? `${(naiveMs / ms).toFixed(2)}${perRound.length > 1 ? ` (${Math.min(...perRound).toFixed(2)}-${Math.max(...perRound).toFixed(2)})` : ''}` : '-'} | ${median(ok.map((x) => x.maxRssMB)).toFixed(0)} | ${notes.join('; ')} |`,
    );
  }
}
server.disconnect();
if (gridLines.length) {
  console.log('\n## the defaults against the best fixed setting of the grid, per shape');
  console.log(
    '| shape | defaults s | best fixed | its s | best ÷ defaults (median; min-max per round) | naive ÷ defaults |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const line of gridLines) console.log(line);
}
