// Micro-benchmark of the conversion layer, in process, on dist/ (run `npm run build` first):
//   node --expose-gc bench/convert.js [--rows 500000] [--page 10000] [--rounds 5]
// 14 mixed columns like PERF-NOTES (ticker, dates, timestamps, nullable numbers, text, URLs, booleans).
// Medians after a warm-up: JSON.parse alone, + RecordBatchBuilder, + row factory, tableToIPC; then
// csv-parse alone vs decodeCsv on the same rows as CSV. Machine noise is large: compare ratios.
import { parseArgs } from 'node:util';
import { Table, tableToIPC } from 'apache-arrow';
import { Parser } from 'csv-parse';
import { makeRowFactory, planColumns, RecordBatchBuilder } from '../dist/convert/index.js';
import { decodeCsv } from '../dist/decode/index.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '500000' },
    page: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
  },
});
const ROWS = Number(values.rows);
const PAGE = Number(values.page);
const ROUNDS = Number(values.rounds);

const fd = (id, type, format = null) => ({
  id,
  display_name: id,
  summary: '',
  type,
  format,
  metric: false,
  length: 0,
  options: [],
});
const fields = [
  fd('ticker', 'string', 'ticker'),
  fd('posted', 'date'),
  fd('seen', 'datetime'),
  fd('salary', 'number'),
  fd('company', 'string'),
  fd('url', 'string'),
  fd('title', 'string'),
  fd('score', 'number'),
  fd('removed', 'date'),
  fd('location', 'string'),
  fd('kind', 'string'),
  fd('openings', 'number'),
  fd('description', 'string'),
  fd('remote', 'boolean'),
];
const pad = (n, w) => String(n).padStart(w, '0');
function row(i) {
  const day = 1 + (i % 28);
  return [
    `nasdaq:t${i % 300}`,
    `202401${pad(day, 2)}`,
    `202401${pad(day, 2)}T${pad(i % 24, 2)}${pad(i % 60, 2)}15Z`,
    i % 7 === 0 ? null : 40000 + (i % 1000) * 10,
    `Company ${i % 1000} Inc`,
    `https://example.com/jobs/${i}`,
    `Senior Software Engineer ${i % 50}`,
    i % 5 === 0 ? null : (i % 1000) / 7,
    i % 3 === 0 ? null : `202402${pad(day, 2)}`,
    i % 11 === 0 ? 'Zürich, CH' : 'New York, NY',
    i % 3 === 0 ? '' : 'full-time',
    i % 11,
    `Build things ${i}, "carefully", with care`,
    i % 4 === 0 ? null : i % 2 === 0,
  ];
}
const csvCell = (v) =>
  v === null
    ? ''
    : typeof v === 'string' && (v === '' || /[",\r\n]/.test(v))
      ? `"${v.replaceAll('"', '""')}"`
      : String(v);
const pageRows = (start) => Array.from({ length: Math.min(PAGE, ROWS - start) }, (_, k) => row(start + k));
const mb = (n) => (n / 1e6).toFixed(1);
const plan = planColumns(fields);

let pages = [];
for (let start = 0; start < ROWS; start += PAGE) {
  const rows = pageRows(start);
  pages.push(
    JSON.stringify({
      id: 'q',
      state: 'complete',
      total: ROWS,
      count: rows.length,
      start: start + 1,
      limit: PAGE,
      rows,
      fields,
    }),
  );
}
console.log(`${ROWS} rows x ${fields.length} columns, pages of ${PAGE}, median of ${ROUNDS} after a warm-up`);
console.log(`table JSON ${mb(pages.reduce((n, p) => n + p.length, 0))} MB`);

function parseOnly() {
  let n = 0;
  for (const text of pages) n += JSON.parse(text).rows.length;
  return n;
}
function parseAndBuild(keep) {
  const builder = new RecordBatchBuilder(plan);
  const batches = [];
  for (const text of pages) {
    const page = JSON.parse(text);
    builder.appendRows(page.rows, page.start, page);
    const batch = builder.flush();
    if (keep) batches.push(batch);
  }
  return batches;
}
function parseAndRows() {
  const toRow = makeRowFactory(plan);
  let n = 0;
  for (const text of pages) {
    const page = JSON.parse(text);
    const out = new Array(page.rows.length);
    for (let i = 0; i < out.length; i++) out[i] = toRow(page.rows[i], page.start + i, page);
    n += out.length;
  }
  return n;
}

/** Median wall time (and the CPU time of that round: less sensitive to a busy machine). */
async function measure(fn) {
  await fn();
  const runs = [];
  let result;
  for (let r = 0; r < ROUNDS; r++) {
    globalThis.gc?.();
    const cpu = process.cpuUsage();
    const t = performance.now();
    result = await fn();
    const used = process.cpuUsage(cpu);
    runs.push({ ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000 });
  }
  runs.sort((a, b) => a.ms - b.ms);
  return { ...runs[Math.floor(runs.length / 2)], result };
}
const rate = (ms) => `${(((ROWS / ms) * 1000) / 1e6).toFixed(2)} M rows/s`;
const line = (label, m, note = '') =>
  console.log(
    `${label.padEnd(30)}${m.ms.toFixed(0).padStart(7)} ms (cpu ${m.cpuMs.toFixed(0).padStart(5)})  ${note}`,
  );

const parse = await measure(parseOnly);
line('JSON.parse only', parse);
const stream = await measure(() => void parseAndBuild(false));
line(
  'JSON.parse + builder',
  stream,
  `(batches dropped as made; builder ~${(stream.ms - parse.ms).toFixed(0)} ms = ${rate(stream.ms - parse.ms)}; x${(stream.ms / parse.ms).toFixed(2)} of parse)`,
);
const build = await measure(() => void parseAndBuild(true));
line(
  'JSON.parse + builder, kept',
  build,
  `(builder ~${(build.ms - parse.ms).toFixed(0)} ms = ${rate(build.ms - parse.ms)}; x${(build.ms / parse.ms).toFixed(2)} of parse)`,
);
const rows = await measure(parseAndRows);
line(
  'JSON.parse + row objects',
  rows,
  `(factory ~${(rows.ms - parse.ms).toFixed(0)} ms; x${(rows.ms / parse.ms).toFixed(2)} of parse)`,
);
const table = new Table(parseAndBuild(true));
const ipc = await measure(() => tableToIPC(table, 'stream').byteLength);
line('tableToIPC (stream)', ipc, `(${mb(ipc.result)} MB)`);

pages = [];
const csvPages = [];
for (let start = 0; start < ROWS; start += PAGE) {
  const buf = Buffer.from(
    `${[fields.map((f) => f.id).join(','), ...pageRows(start).map((r) => r.map(csvCell).join(','))].join('\r\n')}\r\n`,
  );
  csvPages.push(
    Array.from({ length: Math.ceil(buf.length / 65536) }, (_, k) => buf.subarray(k * 65536, (k + 1) * 65536)),
  );
}
console.log(`CSV ${mb(csvPages.flat().reduce((n, b) => n + b.length, 0))} MB`);

function csvParseOnly() {
  let n = 0;
  const push = () => n++;
  const close = () => {};
  for (const chunks of csvPages) {
    const parser = new Parser({});
    for (const c of chunks) parser.api.parse(c, false, push, close);
    parser.api.parse(undefined, true, push, close);
  }
  return n - csvPages.length;
}
async function csvDecode(engine) {
  let n = 0;
  for (let k = 0; k < csvPages.length; k++) {
    const body = (async function* () {
      yield* csvPages[k];
    })();
    for await (const chunk of decodeCsv(body, plan, { start: k * PAGE + 1, limit: PAGE }, { engine }))
      n += chunk.length;
  }
  return n;
}
const csvAlone = await measure(csvParseOnly);
line('csv-parse alone', csvAlone);
const csvOurs = await measure(() => csvDecode('core'));
line(
  'decodeCsv (typed wire rows)',
  csvOurs,
  `(x${(csvOurs.ms / csvAlone.ms).toFixed(2)} of csv-parse alone)`,
);
