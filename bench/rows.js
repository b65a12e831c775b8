// Micro-benchmark of row objects, in process, on dist/ (run `npm run build` first), with real emulator
// pages. It isolates what `output: 'rows'` adds over parsing: making the objects.
//   node bench/rows.js [--dataset job_listings] [--rows 100000] [--page 10000] [--rounds 7]
// Objects are made a page at a time and dropped, as a streaming consumer does. Cases:
//   naive loop          JSON.parse, then per value: a switch on the column type (Dates for date and
//                       datetime), the object filled key by key. What a hand-written client does.
//   factory             JSON.parse, then the library's per-schema row constructor (makeRowFactory).
//   decoder + factory   the byte decoder (exact strings), then row objects straight from its columns
//                       (makeColumnRowFactory): what `stream({ output: 'rows' })` runs per page.
//   row decoder         row objects straight from the bytes (FastTableDecoder with `rows`): what `toArray()` runs.
// And the construction step alone, on pages parsed beforehand: naive loop vs factory.
import { parseArgs } from 'node:util';
import { makeColumnRowFactory, makeRowFactory, planColumns } from '../dist/convert/index.js';
import { parseTablePage } from '../dist/decode/index.js';
import { FastTableDecoder } from '../dist/decode/table-json-fast.js';
import { emulatorPages, naiveRowMaker } from './shared.js';

const { values } = parseArgs({
  options: {
    dataset: { type: 'string', default: 'job_listings' },
    rows: { type: 'string', default: '100000' },
    page: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '7' },
  },
});
const pages = await emulatorPages(values.dataset, Number(values.rows), Number(values.page));
const rows = pages.reduce((n, p) => n + p.where.limit, 0);
const fields = parseTablePage(pages[0].buf.toString('utf8'), pages[0].where).fields;
const plan = planColumns(fields);
const columns = fields.map((f) => ({ id: f.id, type: f.type }));

const naiveRow = naiveRowMaker(columns);
function naiveObjects(wireRows) {
  const out = new Array(wireRows.length);
  for (let i = 0; i < wireRows.length; i++) out[i] = naiveRow(wireRows[i]);
  return out;
}
const toRow = makeRowFactory(plan);
function factoryObjects(wireRows, start, where) {
  const out = new Array(wireRows.length);
  for (let i = 0; i < wireRows.length; i++) out[i] = toRow(wireRows[i], start + i, where);
  return out;
}

let sink = 0;
const cases = {
  'naive loop': () => {
    for (const { buf } of pages) sink += naiveObjects(JSON.parse(buf.toString('utf8')).rows).length;
  },
  factory: () => {
    for (const { buf, where } of pages) {
      sink += factoryObjects(JSON.parse(buf.toString('utf8')).rows, where.start, where).length;
    }
  },
  'decoder + factory': () => {
    const decoder = new FastTableDecoder(plan, { strings: 'exact' });
    const fromColumns = makeColumnRowFactory(plan);
    for (const { buf, where } of pages) {
      const page = decoder.decode(buf, where);
      const out = [];
      fromColumns(page, 0, page.length, out);
      sink += out.length;
      decoder.recycle(page);
    }
  },
  'row decoder': () => {
    const decoder = new FastTableDecoder(plan, { rows: { dates: 'date' } });
    for (const { buf, where } of pages) sink += decoder.decode(buf, where).objects.length;
  },
};
// The construction step alone, on rows parsed beforehand.
const parsed = pages.map(({ buf, where }) => ({ rows: JSON.parse(buf.toString('utf8')).rows, where }));
const build = {
  'naive loop (objects only)': () => {
    for (const p of parsed) sink += naiveObjects(p.rows).length;
  },
  'factory (objects only)': () => {
    for (const p of parsed) sink += factoryObjects(p.rows, p.where.start, p.where).length;
  },
};

// Both constructions must make equal objects before anything is timed.
const a = naiveObjects(parsed[0].rows);
const b = factoryObjects(parsed[0].rows, 1, parsed[0].where);
const same = JSON.stringify(a) === JSON.stringify(b);
console.log(
  `${values.dataset}: ${rows} rows in ${pages.length} pages; naive and factory objects equal: ${same}`,
);
if (!same) process.exitCode = 1;

const all = { ...cases, ...build };
const times = Object.fromEntries(Object.keys(all).map((k) => [k, []]));
for (let r = 0; r < Number(values.rounds) + 1; r++) {
  for (const [name, fn] of Object.entries(all)) {
    const t0 = performance.now();
    fn();
    if (r > 0) times[name].push(performance.now() - t0); // round 0 warms up
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const ms = Object.fromEntries(Object.entries(times).map(([k, ts]) => [k, median(ts)]));
for (const [name, t] of Object.entries(ms)) console.log(`${name.padEnd(28)} ${t.toFixed(0).padStart(6)} ms`);
const x = (a, b) => (ms[a] / ms[b]).toFixed(2);
console.log(`naive loop / factory (parse included):            ${x('naive loop', 'factory')}x`);
console.log(`naive loop / decoder + factory (parse included):  ${x('naive loop', 'decoder + factory')}x`);
console.log(
  `naive loop / factory (objects only):              ${x('naive loop (objects only)', 'factory (objects only)')}x`,
);
if (sink < 0) console.log(sink);
