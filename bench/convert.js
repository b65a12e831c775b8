// Micro-benchmark of the conversion layer, in process, on dist/ (run `npm run build` first):
//   node bench/convert.js [--rows 500000] [--page 10000] [--rounds 5]
// 14 mixed columns like PERF-NOTES (ticker, dates, timestamps, nullable numbers, text, URLs, booleans).
// Reports medians: JSON.parse alone, + RecordBatchBuilder, + row factory; csv-parse alone vs decodeCsv.

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

const plan = planColumns(fields);
const pages = [];
const csvPages = [];
for (let start = 0; start < ROWS; start += PAGE) {
  const rows = Array.from({ length: Math.min(PAGE, ROWS - start) }, (_, k) => row(start + k));
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
  const csv =
    [fields.map((f) => f.id).join(','), ...rows.map((r) => r.map(csvCell).join(','))].join('\r\n') + '\r\n';
  const buf = Buffer.from(csv);
  csvPages.push(
    Array.from({ length: Math.ceil(buf.length / 65536) }, (_, k) => buf.subarray(k * 65536, (k + 1) * 65536)),
  );
}
const mb = (n) => (n / 1e6).toFixed(1);
console.log(
  `${ROWS} rows x ${fields.length} columns, pages of ${PAGE}: table JSON ${mb(pages.reduce((n, p) => n + p.length, 0))} MB, CSV ${mb(csvPages.flat().reduce((n, b) => n + b.length, 0))} MB; median of ${ROUNDS}`,
);

function parseOnly() {
  let n = 0;
  for (const text of pages) n += JSON.parse(text).rows.length;
  return n;
}
let lastBatches = [];
function parseAndBuild() {
  const builder = new RecordBatchBuilder(plan);
  const batches = [];
  for (const text of pages) {
    const page = JSON.parse(text);
    builder.appendRows(page.rows, page.start, page);
    batches.push(builder.flush());
  }
  lastBatches = batches;
  return batches.reduce((n, b) => n + b.numRows, 0);
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
function csvParseOnly() {
  let n = 0;
  for (const chunks of csvPages) {
    const parser = new Parser({});
    for (const c of chunks)
      parser.api.parse(
        c,
        false,
        () => n++,
        () => {},
      );
    parser.api.parse(
      undefined,
      true,
      () => n++,
      () => {},
    );
  }
  return n - csvPages.length;
}
async function csvDecode() {
  let n = 0;
  for (let k = 0; k < csvPages.length; k++) {
    const body = (async function* () {
      yield* csvPages[k];
    })();
    for await (const chunk of decodeCsv(body, plan, { start: k * PAGE + 1, limit: PAGE })) n += chunk.length;
  }
  return n;
}
function ipc() {
  return tableToIPC(new Table(lastBatches), 'stream').byteLength;
}

async function measure(fn) {
  const times = [];
  let result;
  for (let r = 0; r < ROUNDS; r++) {
    globalThis.gc?.();
    const t = performance.now();
    result = await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)], result };
}

const parse = await measure(parseOnly);
const build = await measure(parseAndBuild);
const rows = await measure(parseAndRows);
const ipcOut = await measure(ipc);
const csvAlone = await measure(csvParseOnly);
const csvOurs = await measure(csvDecode);
const rate = (ms) => `${(((ROWS / ms) * 1000) / 1e6).toFixed(2)} M rows/s`;
console.log(`JSON.parse only              ${parse.ms.toFixed(0).padStart(6)} ms`);
console.log(
  `JSON.parse + builder         ${build.ms.toFixed(0).padStart(6)} ms  (builder ~${(build.ms - parse.ms).toFixed(0)} ms, ${rate(build.ms - parse.ms)}; x${(build.ms / parse.ms).toFixed(2)} of parse)`,
);
console.log(
  `JSON.parse + row objects     ${rows.ms.toFixed(0).padStart(6)} ms  (factory ~${(rows.ms - parse.ms).toFixed(0)} ms; x${(rows.ms / parse.ms).toFixed(2)} of parse)`,
);
console.log(`tableToIPC (stream)          ${ipcOut.ms.toFixed(0).padStart(6)} ms  (${mb(ipcOut.result)} MB)`);
console.log(`csv-parse alone              ${csvAlone.ms.toFixed(0).padStart(6)} ms`);
console.log(
  `decodeCsv (typed wire rows)  ${csvOurs.ms.toFixed(0).padStart(6)} ms  (x${(csvOurs.ms / csvAlone.ms).toFixed(2)} of csv-parse alone)`,
);
