// `node bench/cache.js`: what the result cache saves, measured through the emulator's WAN shaping (40 ms
// before each response, 100 Mbit/s in all), as issue 20 describes:
//
// 1. CLI: `dqs query job_listings` for five tickers (90,616 rows) to CSV against a service whose queries
//    run 1.5 s. Per round, a fresh emulator and a fresh cache: `first` (cold cache, fills it), `again`
//    (the same command: a hit) and `no-cache` (the same command with --no-cache, the query already
//    complete on the service: what a re-run costs without the cache). Requests counted by the emulator;
//    the three CSV files must be byte-identical.
// 2. Library: 500,000 rows (`job_listings`, all tickers), each contender in a fresh process (its own peak
//    RSS): `lib-nocache` (toTable() without a cache), `lib-first` (with a cold cache: the fill's cost) and
//    `lib-hit` (a new process, the same query: the second toTable()).
//
// Rounds alternate the contenders; medians and ratios are printed. The emulator runs in this process
// (startEmulator, what `dqs serve` runs), which is idle while a contender runs.
// Usage: node bench/cache.js [--rounds 3] [--only cli|lib] [--latency-ms 40] [--bandwidth 12500000]
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { startEmulator } from '../dist/emulator/index.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    only: { type: 'string' },
    'latency-ms': { type: 'string', default: '40' },
    // 100 Mbit/s
    bandwidth: { type: 'string', default: '12500000' },
    child: { type: 'string' },
  },
});
const KEY = 'bench';
const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const TICKERS = ['nasdaq:aapl', 'nasdaq:msft', 'nasdaq:googl', 'nasdaq:meta', 'nyse:wmt'];
const shaping = {
  latencyMs: Number(values['latency-ms']),
  totalBytesPerSecond: Number(values.bandwidth),
};

// A library contender, in its own process: prints { ms, rows, rss }.
if (values.child) {
  const [name, url, dir] = values.child.split(' ');
  const { DatasetClient } = await import('../dist/index.js');
  const client = new DatasetClient({
    baseUrl: url,
    apiKey: KEY,
    ...(name === 'lib-nocache' ? {} : { cache: { dir, maxBytes: 4 * 1024 ** 3 } }),
  });
  const started = performance.now();
  const table = await (await client.query('job_listings', {})).toTable();
  const ms = performance.now() - started;
  await client.close();
  process.stdout.write(
    `${JSON.stringify({ ms, rows: table.numRows, rss: process.resourceUsage().maxRSS * 1024 })}\n`,
  );
  process.exit(0);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (n) => `${(n / 1e6).toFixed(0)} MB`;
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const rounds = Number(values.rounds);

async function cliScenario() {
  const results = { first: [], again: [], 'no-cache': [] };
  for (let round = 0; round < rounds; round++) {
    const emu = await startEmulator({ apiKey: KEY, queryDelayMs: 1500, pageCacheSize: 0, ...shaping });
    const home = await mkdtemp(join(tmpdir(), 'dqs-bench-cache-'));
    try {
      const outputs = [];
      for (const name of ['first', 'again', 'no-cache']) {
        const out = join(home, `${name}.csv`);
        const args = [MAIN, 'query', 'job_listings', ...TICKERS.flatMap((t) => ['--ticker', t])];
        args.push('--out', out, '--base-url', emu.url, '--api-key', KEY, '--quiet');
        if (name === 'no-cache') args.push('--no-cache');
        const before = emu.requests.length;
        const started = performance.now();
        await promisify(execFile)(process.execPath, args, { env: { ...process.env, XDG_CACHE_HOME: home } });
        const ms = performance.now() - started;
        results[name].push({ ms, requests: emu.requests.length - before });
        outputs.push(await readFile(out));
      }
      const identical = outputs.every((o) => o.equals(outputs[0]));
      console.log(
        `cli round ${round + 1}: ${Object.entries(results)
          .map(([n, r]) => `${n} ${s(r.at(-1).ms)} (${r.at(-1).requests} requests)`)
          .join(', ')}; CSV ${mb(outputs[0].length)}, byte-identical: ${identical}`,
      );
      if (!identical) throw new Error('the CSV outputs differ');
    } finally {
      await emu.close();
      await rm(home, { recursive: true, force: true });
    }
  }
  const m = Object.fromEntries(Object.entries(results).map(([n, r]) => [n, median(r.map((x) => x.ms))]));
  console.log(
    `cli medians: first ${s(m.first)}, again ${s(m.again)}, no-cache ${s(m['no-cache'])}; ` +
      `again/first ${(m.again / m.first).toFixed(3)}x (target <= 0.35), again/no-cache ` +
      `${(m.again / m['no-cache']).toFixed(3)}x; requests again: ${results.again.map((r) => r.requests).join(', ')} (target <= 2)`,
  );
}

function child(name, url, dir) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', `${name} ${url} ${dir}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`${name} exited ${code}`)),
    );
  });
}

async function libScenario() {
  const emu = await startEmulator({ apiKey: KEY, pageCacheSize: 0, ...shaping });
  const results = { 'lib-nocache': [], 'lib-first': [], 'lib-hit': [] };
  try {
    for (let round = 0; round < rounds; round++) {
      const dir = await mkdtemp(join(tmpdir(), 'dqs-bench-cache-lib-'));
      try {
        // Alternate which of the two full downloads goes first; the hit needs the fill before it.
        const order =
          round % 2 === 0 ? ['lib-nocache', 'lib-first', 'lib-hit'] : ['lib-first', 'lib-nocache', 'lib-hit'];
        for (const name of order) results[name].push(await child(name, emu.url, dir));
        console.log(
          `lib round ${round + 1}: ${Object.entries(results)
            .map(([n, r]) => `${n} ${s(r.at(-1).ms)} (${r.at(-1).rows} rows, peak RSS ${mb(r.at(-1).rss)})`)
            .join(', ')}`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await emu.close();
  }
  const m = (n, k = 'ms') => median(results[n].map((x) => x[k]));
  console.log(
    `lib medians (500,000 rows): no cache ${s(m('lib-nocache'))}, first with cache ${s(m('lib-first'))} ` +
      `(${(m('lib-first') / m('lib-nocache')).toFixed(2)}x of no cache), second toTable() ${s(m('lib-hit'))}: ` +
      `${((100 * m('lib-hit')) / m('lib-first')).toFixed(1)} % of the first (target <= 10 %); peak RSS ` +
      `${mb(m('lib-nocache', 'rss'))} / ${mb(m('lib-first', 'rss'))} / ${mb(m('lib-hit', 'rss'))}`,
  );
}

console.log(
  `shaping: ${shaping.latencyMs} ms per response, ${((shaping.totalBytesPerSecond * 8) / 1e6).toFixed(0)} Mbit/s; ${rounds} rounds`,
);
if (values.only !== 'lib') await cliScenario();
if (values.only !== 'cli') await libScenario();
