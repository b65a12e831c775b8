// `npm run bench:recovery`: how much a 429 storm and one slow connection cost a read (issue 28, item 8).
// One raw page server in this process (not the emulator: the faults are per connection and per time),
// the library from dist/, 20,000 rows in 40 pages of 500, medians of --rounds (default 3) rounds:
//   baseline   no fault
//   storm      every page request answered 429 `Retry-After: 1` for the first --storm-ms (3,000) of the read
//   slow-conn  every third connection the server accepts answers each request 3 s late
// Reported as ratios: storm / (storm length + baseline) (goal <= 1.5) and slow-conn / baseline (goal <= 3).
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { DatasetClient } from '../dist/index.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'storm-ms': { type: 'string', default: '3000' },
    'slow-ms': { type: 'string', default: '3000' },
  },
});
const ROUNDS = Number(values.rounds);
const STORM_MS = Number(values['storm-ms']);
const SLOW_MS = Number(values['slow-ms']);
const TOTAL = 20_000;
const PAGE = 500;
const QID = 'b'.repeat(64);
const FIELDS = [
  { id: 'n', type: 'number', display_name: 'N', summary: '' },
  { id: 's', type: 'string', display_name: 'S', summary: '' },
];
const TABLE = 'application/vnd.service.table+json';
const HEADERS = {
  'x-state': 'complete',
  'x-total': String(TOTAL),
  'x-truncated': 'false',
  'x-formats': TABLE,
};

let mode = 'baseline';
let began = 0;
let connections = 0;
const slow = new WeakSet();
const server = createServer((req, res) => {
  req.resume();
  const url = new URL(req.url ?? '/', 'http://x');
  if (req.method === 'POST') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ id: QID, state: 'complete', total: TOTAL, formats: [TABLE] }));
  }
  if (req.method === 'HEAD') return res.writeHead(200, HEADERS).end();
  const start = Number(url.searchParams.get('start') ?? 1);
  const limit = Number(url.searchParams.get('limit') ?? 10);
  const rows = [];
  for (let n = start; n < Math.min(TOTAL + 1, start + limit); n++)
    rows.push([n, `row ${n} ${'x'.repeat(40)}`]);
  const body = JSON.stringify({
    id: QID,
    state: 'complete',
    total: TOTAL,
    count: rows.length,
    start,
    limit,
    rows,
    fields: FIELDS,
    group_fields: [],
    sort_fields: [],
    last_date_updated: '2024-01-01T00:00:00Z',
  });
  const send = () => {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(200, { ...HEADERS, 'content-type': TABLE }).end(body);
  };
  if (mode === 'storm' && performance.now() - began < STORM_MS) {
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
    return res.end('{"message":"slow down"}');
  }
  if (mode === 'slow-conn' && slow.has(req.socket)) return void setTimeout(send, SLOW_MS);
  send();
});
server.on('connection', (socket) => {
  if (++connections % 3 === 0) slow.add(socket);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const baseUrl = `http://127.0.0.1:${server.address().port}`;

async function read(which) {
  mode = which;
  connections = 0;
  const client = new DatasetClient({ baseUrl, apiKey: 'bench-key' });
  began = performance.now();
  const stream = client.stream('bench', {}, { output: 'rows', pageSize: PAGE });
  let rows = 0;
  for await (const _ of stream) rows++;
  const ms = performance.now() - began;
  await client.close();
  if (rows !== TOTAL) throw new Error(`${which}: ${rows} rows`);
  return { ms, hedges: stream.hedges };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const times = { baseline: [], storm: [], 'slow-conn': [] };
const hedges = [];
await read('baseline'); // warm-up
for (let r = 0; r < ROUNDS; r++) {
  for (const which of Object.keys(times)) {
    const { ms, hedges: h } = await read(which);
    times[which].push(ms);
    if (which === 'slow-conn') hedges.push(`${h.won}/${h.sent}`);
  }
}
server.close();
const base = median(times.baseline);
const storm = median(times.storm);
const slowConn = median(times['slow-conn']);
const fmt = (ms) => `${(ms / 1000).toFixed(2)} s`;
console.log(
  `rounds ${ROUNDS}; ${TOTAL} rows in ${TOTAL / PAGE} pages of ${PAGE}; storm ${STORM_MS} ms; slow connection +${SLOW_MS} ms`,
);
console.log(`baseline   ${fmt(base)}  (rounds: ${times.baseline.map(fmt).join(', ')})`);
console.log(
  `storm      ${fmt(storm)}  = ${(storm / (STORM_MS + base)).toFixed(2)} x (storm + baseline)  (rounds: ${times.storm.map(fmt).join(', ')})`,
);
console.log(
  `slow-conn  ${fmt(slowConn)}  = ${(slowConn / base).toFixed(2)} x baseline  (rounds: ${times['slow-conn'].map(fmt).join(', ')}; hedges won/sent: ${hedges.join(', ')})`,
);
