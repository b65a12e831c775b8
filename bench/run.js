// `npm run bench`: one server process, each scenario in a fresh process, rounds alternating scenarios, and
// medians reported as ratios to the bytes+JSON.parse floor and to the naive client, plus peak RSS.
// Usage: node bench/run.js [--rounds 3] [--each-round] [--dataset job_listings] [--page-size N] [--concurrency N]
//        [--window N] [--only a,b] [--formats]   (CSV/XLSX scenarios are slow; --formats adds them)
//        [--base ../other-checkout --only base:lib-ipc-file,lib-ipc-file]   (before and after in one run)
// Page size, concurrency and window default to the library's defaults, for the floor scenarios too.
import { execFile, fork } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { parseArgs, promisify } from 'node:util';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    dataset: { type: 'string', default: 'job_listings' },
    'page-size': { type: 'string', default: 'default' },
    concurrency: { type: 'string', default: 'default' },
    window: { type: 'string', default: 'default' },
    only: { type: 'string' },
    formats: { type: 'boolean', default: false },
    // Each round's figures too, not only the medians (to see a trend or an outlier behind a median).
    'each-round': { type: 'boolean', default: false },
    // Another checkout (built): scenarios named `base:<name>` run its bench/scenario.js and dist, against
    // the same server and alternating with this one's, so a change's before and after come from one run.
    base: { type: 'string' },
    // `npm run bench -- --wan [--quick]`: the WAN benchmark (bench/wan.js) instead.
    wan: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
  },
});
if (values.wan) {
  const args = [new URL('./wan.js', import.meta.url).pathname, ...(values.quick ? ['--quick'] : [])];
  if (values.only) args.push('--only', values.only);
  fork(args[0], args.slice(1), { stdio: 'inherit' }).on('exit', (code) => process.exit(code ?? 1));
  await new Promise(() => {});
}

const base = [
  'bytes',
  'json-parse',
  'naive',
  'naive-all',
  'lib-table',
  'lib-table-c2',
  'lib-table-jsonparse',
  'lib-rows',
  'lib-toarray',
  'rows-naive',
  'lib-ipc-file',
  'lib-ipc-file-plain',
];
const formats = ['csv-parse', 'lib-table-csv', 'lib-table-xlsx'];
const names = values.only ? values.only.split(',') : values.formats ? [...base, ...formats] : base;

const server = fork(new URL('./server.js', import.meta.url), {
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const { url } = await new Promise((resolve) => server.once('message', resolve));

async function scenario(name) {
  const other = name.startsWith('base:');
  if (other && !values.base) throw new Error(`${name} needs --base <another checkout>`);
  const { stdout } = await run(
    process.execPath,
    [
      other ? `${values.base}/bench/scenario.js` : new URL('./scenario.js', import.meta.url).pathname,
      other ? name.slice('base:'.length) : name,
      url,
      values.dataset,
      values['page-size'],
      values.concurrency,
      values.window,
    ],
    { maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout.trim().split('\n').pop());
}

console.log(
  `machine: ${cpus().length} x ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
);
console.log(
  `dataset ${values.dataset}, page size ${values['page-size']}, concurrency ${values.concurrency}, window ${values.window}, rounds ${values.rounds}`,
);
// Warm-up: every format's pages serialized once into the server's cache.
for (const name of new Set([
  'bytes',
  ...(names.some((n) => n.includes('csv')) ? ['csv-parse'] : []),
  ...(names.includes('lib-table-xlsx') ? ['lib-table-xlsx'] : []),
  ...(names.includes('naive') ? ['naive'] : []),
  ...(names.includes('naive-all') ? ['naive-all'] : []),
  // The server caches compressed pages too: without this the first round's compressed pages wait for gzip.
  ...(names.some((n) => n.includes('ipc-file')) ? ['lib-ipc-file-gzip'] : []),
])) {
  await scenario(name);
}
const results = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < Number(values.rounds); r++) {
  for (const name of names) {
    const r = await scenario(name);
    results[name].push(r);
    if (values['each-round'])
      console.log(
        `round ${results[name].length} ${name}: ${(r.ms / 1000).toFixed(3)} s, ${r.maxRssMB.toFixed(0)} MB`,
      );
  }
}
server.disconnect();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const summary = Object.fromEntries(
  names.map((n) => [
    n,
    {
      ms: median(results[n].map((x) => x.ms)),
      rss: median(results[n].map((x) => x.maxRssMB)),
      cpu: median(results[n].map((x) => x.cpuMs ?? Number.NaN)),
      p99: median(results[n].map((x) => x.loopP99Ms ?? Number.NaN)),
      base: median(results[n].map((x) => x.baseRssMB)),
      rows: results[n][0].rows,
      tableMB: results[n][0].tableMB,
    },
  ]),
);
const floor = summary['json-parse']?.ms;
const naive = summary.naive?.ms;
console.log('');
console.log(
  '| scenario | rows | median s | x floor (bytes+JSON.parse) | naive / this | peak RSS MB | CPU s | event-loop delay p99 ms |',
);
console.log('|---|---|---|---|---|---|---|---|');
for (const n of names) {
  const s = summary[n];
  const xFloor = floor ? (s.ms / floor).toFixed(2) : '-';
  const vsNaive = naive ? (naive / s.ms).toFixed(2) : '-';
  console.log(
    `| ${n} | ${s.rows} | ${(s.ms / 1000).toFixed(2)} | ${xFloor} | ${vsNaive} | ${s.rss.toFixed(0)} | ${(s.cpu / 1000).toFixed(2)} | ${s.p99.toFixed(1)} |`,
  );
}
console.log('');
if (values.only && names.length > 1) {
  // Rounds on a shared VM move together (one round 1.5 s, the next 2.0 s for every scenario): the
  // median of each round's ratio is steadier than the ratio of medians.
  const last = names.at(-1);
  for (const n of names.slice(0, -1)) {
    const paired = median(results[n].map((x, i) => x.ms / results[last][i].ms));
    const cpu = results[n].every((x) => x.cpuMs !== undefined)
      ? `, CPU ${(median(results[n].map((x) => x.cpuMs)) / 1000).toFixed(2)} s against ${(median(results[last].map((x) => x.cpuMs ?? Number.NaN)) / 1000).toFixed(2)} s`
      : '';
    console.log(`${n} / ${last}, per round: median ${paired.toFixed(3)}${cpu}`);
  }
  console.log('');
}
const ratio = (a, b) => (summary[a] && summary[b] ? (summary[a].ms / summary[b].ms).toFixed(2) : '-');
if (summary['lib-table']?.tableMB) {
  const t = summary['lib-table'];
  console.log(
    `toTable: peak RSS ${t.rss.toFixed(0)} MB for ${t.tableMB.toFixed(0)} MB of table buffers (${(t.rss / t.tableMB).toFixed(2)}x); ` +
      `above the ${t.base.toFixed(0)} MB the process had before the query: ${(t.rss - t.base).toFixed(0)} MB (${((t.rss - t.base) / t.tableMB).toFixed(2)}x)`,
  );
}
console.log(
  `lib-table-jsonparse / lib-table (byte decoder speed-up): ${ratio('lib-table-jsonparse', 'lib-table')}`,
);
console.log(
  `rows-naive / lib-rows (row objects vs a naive per-value loop): ${ratio('rows-naive', 'lib-rows')}`,
);
if (summary['csv-parse']) console.log(`lib-table-csv / csv-parse: ${ratio('lib-table-csv', 'csv-parse')}`);
if (summary['lib-table-csv'])
  console.log(`lib-table-csv / lib-table (CSV vs JSON): ${ratio('lib-table-csv', 'lib-table')}`);
