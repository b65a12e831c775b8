// Hostile table-JSON pages on loopback, each read by a fresh client process (its peak RSS its own):
//   - `whitespace-<api>`: a page that sends `"rows":[` and then white space forever, as fast as the client
//     reads: the time until DQS_RESPONSE_TOO_LARGE at the default limit (256 MiB), through stream(),
//     toTable() and toArray() (issue #45's goal: within 2 s each).
//   - `big-string`: a page whose one row holds a 200 MB string, read by toTable(): peak RSS against the
//     string's size (goal: at most 4x).
// Usage: node bench/hostile.js [--rounds 3] [--only whitespace-toTable,big-string] [--base ../other-checkout]
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { parseArgs, promisify } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
    base: { type: 'string' },
  },
});

const QID = 'a'.repeat(64);
const STRING_MB = 200;
const fields = [
  { id: 'n', type: 'number' },
  { id: 's', type: 'string' },
];

/** The page server: a 2-row result whose first row is an honest page and whose second is hostile. */
function serve(kind) {
  const honest = (start, rows) =>
    JSON.stringify({
      id: QID,
      state: 'complete',
      total: 2,
      count: rows.length,
      start,
      limit: 1,
      rows,
      fields,
    });
  const big = `{"id":"${QID}","total":2,"count":1,"start":2,"limit":1,"rows":[[2,"${'y'.repeat(STRING_MB * 2 ** 20)}"]],"fields":${JSON.stringify(fields)}}`;
  const empty = honest(2, []);
  const head = Buffer.from(empty.slice(0, empty.indexOf('"rows":[') + 8)); // up to and with `"rows":[`
  const spaces = Buffer.alloc(1 << 20, 0x20);
  const server = createServer((req, res) => {
    req.resume();
    const url = new URL(req.url, 'http://x');
    const status = {
      'x-state': 'complete',
      'x-total': '2',
      'x-formats': 'application/vnd.service.table+json',
    };
    if (req.method === 'POST') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(
        JSON.stringify({ id: QID, state: 'complete', total: 2, formats: [status['x-formats']] }),
      );
    }
    if (req.method === 'HEAD') return res.writeHead(200, status).end();
    const start = Number(url.searchParams.get('start'));
    res.writeHead(200, { ...status, 'content-type': 'application/vnd.service.table+json' });
    if (start === 1) return res.end(honest(1, [[1, 'a']]));
    if (kind === 'big-string') return res.end(big);
    res.write(head);
    const pump = () => {
      while (!res.destroyed && res.write(spaces));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  });
  server.listen(0, '127.0.0.1', () => process.send({ url: `http://127.0.0.1:${server.address().port}` }));
  process.on('disconnect', () => process.exit(0));
}

/** One client run: prints `{ ms, maxRssMB, code }`. */
async function client(checkout, name, url) {
  const { DatasetClient } = await import(`${checkout}/dist/index.js`);
  const c = new DatasetClient({ baseUrl: url, apiKey: 'k', retry: false });
  const result = await c.query('d', {}, { firstPageRows: 1 });
  const t0 = performance.now();
  let code = 'ok';
  try {
    if (name.endsWith('stream')) for await (const _ of result.stream()) void _;
    else if (name.endsWith('toArray')) await result.toArray();
    else await result.toTable();
  } catch (error) {
    code = error.code ?? String(error);
  }
  const ms = performance.now() - t0;
  await c.close();
  console.log(JSON.stringify({ ms, maxRssMB: process.resourceUsage().maxRSS / 1024, code }));
  process.exit(0);
}

if (positionals[0] === 'serve') serve(positionals[1]);
else if (positionals[0] === 'client') await client(positionals[1], positionals[2], positionals[3]);
else {
  const { fork } = await import('node:child_process');
  const run = promisify(execFile);
  const here = new URL('.', import.meta.url).pathname.replace(/\/bench\/$/, '');
  const names = values.only
    ? values.only.split(',')
    : ['whitespace-stream', 'whitespace-toTable', 'whitespace-toArray', 'big-string'];
  const checkouts = values.base
    ? [
        ['base', values.base],
        ['this', here],
      ]
    : [['this', here]];
  for (const name of names) {
    const kind = name.startsWith('whitespace') ? 'whitespace' : 'big-string';
    const server = fork(new URL(import.meta.url).pathname, ['serve', kind], { stdio: 'inherit' });
    const { url } = await new Promise((resolve) => server.once('message', resolve));
    for (let r = 0; r < Number(values.rounds); r++) {
      for (const [label, checkout] of checkouts) {
        const { stdout } = await run(
          process.execPath,
          [new URL(import.meta.url).pathname, 'client', checkout, name, url],
          { maxBuffer: 1 << 20, timeout: 120_000 },
        ).catch((error) => ({
          stdout: JSON.stringify({ ms: Number.NaN, maxRssMB: Number.NaN, code: error.message.slice(0, 60) }),
        }));
        const got = JSON.parse(stdout.trim().split('\n').pop());
        console.log(
          `${name} ${label} round ${r + 1}: ${(got.ms / 1000).toFixed(2)} s, peak RSS ${got.maxRssMB.toFixed(0)} MB${kind === 'big-string' ? ` (${(got.maxRssMB / STRING_MB).toFixed(2)}x the string)` : ''}, ${got.code}`,
        );
      }
    }
    server.disconnect();
  }
}
