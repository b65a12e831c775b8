// Micro-benchmark of table-JSON decoding, in process, on dist/ (run `npm run build` first), with real
// emulator pages: JSON.parse alone; JSON.parse + RecordBatchBuilder (the reference path); the byte decoder
// + appendDecoded (the fast path). Checks both paths give byte-identical Arrow IPC before timing.
//   node bench/decode.js [--dataset job_listings] [--rows 100000] [--page 10000] [--rounds 5]
import { parseArgs } from 'node:util';
import { Table, tableToIPC } from 'apache-arrow';
import { planColumns, RecordBatchBuilder } from '../dist/convert/index.js';
import { parseTablePage } from '../dist/decode/index.js';
import { FastTableDecoder } from '../dist/decode/table-json-fast.js';
import { emulatorPages } from './shared.js';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: 'job_listings' },
    rows: { type: 'string', default: '100000' },
    page: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '5' },
  },
});
const pages = await emulatorPages(values.dataset, Number(values.rows), Number(values.page));
const rows = pages.reduce((n, p) => n + p.where.limit, 0);
const bytes = pages.reduce((n, p) => n + p.buf.length, 0);
const fields = parseTablePage(pages[0].buf.toString('utf8'), pages[0].where).fields;
const plan = planColumns(fields);

function reference() {
  const builder = new RecordBatchBuilder(plan);
  const batches = [];
  for (const { buf, where } of pages) {
    const page = parseTablePage(buf.toString('utf8'), where);
    builder.appendRows(page.rows, where.start, where);
    batches.push(builder.flush());
  }
  return batches;
}
function fast() {
  const builder = new RecordBatchBuilder(plan);
  const decoder = new FastTableDecoder(plan);
  const batches = [];
  let fallbacks = 0;
  for (const { buf, where } of pages) {
    const page = decoder.decode(buf, where);
    if (page === undefined) {
      fallbacks++;
      const ref = parseTablePage(buf.toString('utf8'), where);
      builder.appendRows(ref.rows, where.start, where);
    } else builder.appendDecoded(page, 0, page.length);
    batches.push(builder.flush());
  }
  return { batches, fallbacks };
}
function parseOnly() {
  let n = 0;
  for (const { buf } of pages) n += JSON.parse(buf.toString('utf8')).rows.length;
  return n;
}
function decodeOnly() {
  const decoder = new FastTableDecoder(plan);
  let n = 0;
  for (const { buf, where } of pages) n += decoder.decode(buf, where)?.length ?? 0;
  return n;
}

const a = tableToIPC(new Table(reference()));
const { batches, fallbacks } = fast();
const b = tableToIPC(new Table(batches));
console.log(
  `${values.dataset}: ${rows} rows, ${pages.length} pages, ${(bytes / 2 ** 20).toFixed(1)} MiB; fast path fell back on ${fallbacks} pages; identical IPC: ${Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0}`,
);
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const cases = {
  'JSON.parse': parseOnly,
  'fast decode': decodeOnly,
  'JSON.parse + builder': reference,
  'fast decode + builder': fast,
};
const times = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let r = 0; r < Number(values.rounds); r++) {
  for (const [name, fn] of Object.entries(cases)) {
    const t0 = performance.now();
    fn();
    times[name].push(performance.now() - t0);
  }
}
const floor = median(times['JSON.parse']);
for (const [name, ts] of Object.entries(times)) {
  const ms = median(ts);
  console.log(
    `${name.padEnd(24)} ${ms.toFixed(0).padStart(6)} ms  ${((bytes / 2 ** 20 / ms) * 1000).toFixed(0).padStart(5)} MiB/s  ${(ms / floor).toFixed(2)}x JSON.parse`,
  );
}
