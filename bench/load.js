// The emulator under load (issue 19): a probe sends `GET /datasets/` and a 10-row page every 250 ms, each
// on a fresh connection with a 1 s deadline, while another process loads the emulator. Printed per load:
// probe requests failed or over 1 s, probe p50/p99, attacking requests by answer, and the emulator's RSS
// before -> peak -> 10 s after. Three processes: emulator (defaults), attacker, and this one (probe).
// Usage: npm run bench:load [-- --loads 1,2,3] [--requests 20000] [--in-flight 1000] [--rounds 2]
// `--library`: a fourth process reads 500,000 rows with the library (defaults) during each load and
// checks them against a read from an idle emulator of the same seed (SHA-256 of the Arrow IPC stream).
import { fork } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { parseArgs } from 'node:util';

/** How the probes of the current load ended: a status, `slow` (over 1 s), `timeout` or `error`. */
const outcomes = new Map();
function outcome(what) {
  outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
}

const { values } = parseArgs({
  options: {
    loads: { type: 'string', default: '0,1,2,3' },
    requests: { type: 'string', default: '20000' },
    'in-flight': { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '2' },
    settle: { type: 'string', default: '10' },
    library: { type: 'boolean', default: false },
    role: { type: 'string' },
    url: { type: 'string' },
    load: { type: 'string' },
  },
});
const KEY = 'load';
const TABLE = 'application/vnd.service.table+json';
const self = new URL(import.meta.url).pathname;

if (values.role === 'emulator') {
  // Defaults, as `dqs serve` runs (with its allocator setting, given by the parent): what users point
  // their jobs at.
  const { startEmulator } = await import('../dist/emulator/index.js');
  const emu = await startEmulator({ apiKey: KEY });
  process.send({ url: emu.url });
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  setInterval(() => process.send({ rss: process.memoryUsage.rss() }), 100).unref();
  process.on('message', (m) => {
    if (m === 'lag') {
      process.send({
        lag: { p50: lag.percentile(50) / 1e6, p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 },
      });
      lag.reset();
    }
  });
  process.on('disconnect', () => emu.close().then(() => process.exit(0)));
} else if (values.role === 'attacker') {
  await attack(values.url, values.load);
} else if (values.role === 'reader') {
  await reader();
} else {
  await main();
}

async function post(url, body, dispatcher, request) {
  const res = await request(`${url}/datasets/job_listings/query/`, {
    method: 'POST',
    headers: { authorization: `token ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    dispatcher,
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  });
  const text = await res.body.text();
  return { status: res.statusCode, json: res.statusCode === 200 ? JSON.parse(text) : undefined };
}

/** The load, in its own process: counts answers by status; a request not answered in 120 s is hung. */
async function attack(url, load) {
  const { Agent, request } = await import('undici');
  const { COMPANIES } = await import('../dist/emulator/index.js');
  const inFlight = Number(values['in-flight']);
  const dispatcher = new Agent({ connections: inFlight, pipelining: 1 });
  const counts = {};
  const count = (key) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  const base = (await post(url, {}, dispatcher, request)).json;
  let seed = 12345;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const page = async (id, total, rows) => {
    const start = 1 + Math.floor(random() * Math.max(1, total - rows));
    const res = await request(`${url}/datasets/job_listings/query/${id}?start=${start}&limit=${rows}`, {
      headers: { authorization: `token ${KEY}`, accept: TABLE },
      dispatcher,
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
    for await (const _ of res.body);
    const ok =
      res.statusCode === 200 ||
      ((res.statusCode === 503 || res.statusCode === 429) && res.headers['retry-after']);
    count(ok ? String(res.statusCode) : `${res.statusCode} without Retry-After`);
  };
  const one = async (i) => {
    try {
      if (load === '3') return await page(base.id, base.total, 100_000);
      if (random() < 0.3) {
        // A new query: 1-3 random tickers (a new id each time, mostly).
        const tickers = Array.from(
          { length: 1 + Math.floor(random() * 3) },
          () => COMPANIES[Math.floor(random() * COMPANIES.length)].id,
        );
        const { status } = await post(url, { tickers: [...new Set(tickers)], n: i }, dispatcher, request);
        return count(String(status));
      }
      const max = load === '2' ? 1000 : 10_000;
      await page(base.id, base.total, 100 + Math.floor(random() * (max - 100)));
    } catch (err) {
      count(
        err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT'
          ? 'hung'
          : `error ${err.code ?? err.message}`,
      );
    }
  };
  if (load === '0') {
    // No load for 10 s: the probe's baseline on this machine.
    await new Promise((r) => setTimeout(r, 10_000));
    process.send({ counts, seconds: 10 });
    process.exit(0);
  }
  const total = load === '3' ? 32 * Number(values.rounds) : Number(values.requests);
  const width = load === '3' ? 32 : inFlight;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < total) await one(next++);
    }),
  );
  process.send({ counts, seconds: (performance.now() - t0) / 1000 });
  await dispatcher.close();
  process.exit(0);
}

/**
 * The library as a user runs it, in its own process: 500,000 rows of job_listings (all tickers) as an
 * Arrow IPC stream, hashed; first from an idle emulator of its own (the reference), then, each time it
 * is asked, from the loaded one. Reports rows, hash, seconds and the retries by status.
 */
async function reader() {
  const { createHash } = await import('node:crypto');
  const { pipeline } = await import('node:stream/promises');
  const { DatasetClient, toArrowIpc } = await import('../dist/index.js');
  const { startEmulator } = await import('../dist/emulator/index.js');
  const read = async (url) => {
    const client = new DatasetClient({ baseUrl: url, apiKey: KEY, cache: false });
    const retried = {};
    client.on('retry', (e) => {
      const why = e.error.status ?? e.error.code;
      retried[why] = (retried[why] ?? 0) + 1;
    });
    const t0 = performance.now();
    try {
      const result = await client.query('job_listings', {});
      const hash = createHash('sha256');
      await pipeline(result.stream(), toArrowIpc({ format: 'stream' }), async (bytes) => {
        for await (const b of bytes) hash.update(b);
      });
      return {
        rows: result.total,
        hash: hash.digest('hex'),
        seconds: (performance.now() - t0) / 1000,
        retried,
      };
    } catch (err) {
      return { error: `${err.code ?? ''} ${err.message}`, retried };
    } finally {
      await client.close();
    }
  };
  const idle = await startEmulator({ apiKey: KEY, acceptWidth: 1 });
  process.send({ reference: await read(idle.url) });
  await idle.close();
  process.on('message', async (url) => process.send({ read: await read(url) }));
  process.on('disconnect', () => process.exit(0));
}

/** One probe request on a fresh connection: its time, or Infinity when it failed or missed 1 s. */
function probe(url) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = httpRequest(
      url,
      { headers: { authorization: `token ${KEY}`, accept: TABLE }, agent: false, timeout: 1000 },
      (res) => {
        res.resume();
        res.on('end', () => {
          const ms = performance.now() - t0;
          outcome(res.statusCode !== 200 ? res.statusCode : ms > 1000 ? 'slow' : 200);
          resolve(res.statusCode === 200 && ms <= 1000 ? ms : Number.POSITIVE_INFINITY);
        });
        res.on('error', () => resolve(Number.POSITIVE_INFINITY));
      },
    );
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      outcome(req.reusedSocket || req.socket?.connecting === false ? 'timeout' : 'timeout before connect');
      req.destroy();
      resolve(Number.POSITIVE_INFINITY);
    }, 1000);
    req.on('close', () => clearTimeout(timer));
    req.on('error', () => {
      if (!timedOut) outcome('error');
      resolve(Number.POSITIVE_INFINITY);
    });
    req.end();
  });
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const { request } = await import('undici');
  // The allocator setting `dqs serve` starts its emulator process with (src/cli/serve-process.ts).
  const { ALLOCATOR_ENV } = await import('../dist/cli/serve-process.js');
  const emulator = fork(self, ['--role', 'emulator'], {
    env: { ...process.env, ...ALLOCATOR_ENV },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    // DQS_LOAD_PROFILE=dir: a CPU profile of the emulator, to see where its time goes.
    execArgv: process.env.DQS_LOAD_PROFILE
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.DQS_LOAD_PROFILE}`]
      : [],
  });
  let rss = 0;
  let peak = 0;
  let lastLag;
  const { url } = await new Promise((resolve) => {
    emulator.on('message', (m) => {
      if (m.url) resolve(m);
      if (m.lag) lastLag = m.lag;
      if (m.rss) {
        rss = m.rss;
        peak = Math.max(peak, m.rss);
      }
    });
  });
  const { id } = (await post(url, { tickers: ['nasdaq:aapl'] }, undefined, request)).json;
  let library;
  let reference;
  if (values.library) {
    library = fork(self, ['--role', 'reader'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    reference = (await new Promise((resolve) => library.once('message', resolve))).reference;
  }
  const probeUrls = [`${url}/datasets/`, `${url}/datasets/job_listings/query/${id}?start=1&limit=10`];
  const MB = (b) => `${(b / 2 ** 20).toFixed(0)}`;
  const names = {
    0: 'none (the probe alone: its baseline on this machine)',
    1: `${values.requests} requests, ${values['in-flight']} in flight, 30 % new queries, 70 % pages of 100-10,000 rows`,
    2: `the same with pages of 100-1,000 rows`,
    3: `32 concurrent 100,000-row JSON pages, ${values.rounds} rounds`,
  };
  console.log(
    `emulator under load (defaults), Node ${process.version}; probe every 250 ms on fresh connections, 1 s deadline`,
  );
  for (const load of values.loads.split(',')) {
    await new Promise((r) => setTimeout(r, 2000));
    const before = rss;
    peak = rss;
    const attacker = fork(
      self,
      [
        '--role',
        'attacker',
        '--url',
        url,
        '--load',
        load,
        '--in-flight',
        values['in-flight'],
        '--requests',
        values.requests,
        '--rounds',
        values.rounds,
      ],
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      },
    );
    const finished = new Promise((resolve) => attacker.once('message', resolve));
    let done = false;
    finished.then(() => {
      done = true;
    });
    emulator.send('lag');
    const libraryRead = library
      ? new Promise((resolve) => library.once('message', (m) => resolve(m.read)))
      : undefined;
    library?.send(url);
    const times = [];
    /** When each failed probe was sent, seconds into the load: a burst at the start, or all along. */
    const failedAt = [];
    const began = performance.now();
    const probes = [];
    outcomes.clear();
    while (!done) {
      const sent = (performance.now() - began) / 1000;
      for (const u of probeUrls) {
        probes.push(
          probe(u).then((ms) => {
            times.push(ms);
            if (ms === Number.POSITIVE_INFINITY) failedAt.push(sent.toFixed(1));
          }),
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    await Promise.all(probes);
    const { counts, seconds } = await finished;
    const libraryResult = await libraryRead;
    emulator.send('lag');
    await new Promise((r) => setTimeout(r, 200));
    const loopLag = lastLag;
    const peakDuring = peak;
    await new Promise((r) => setTimeout(r, Number(values.settle) * 1000));
    const sorted = times.toSorted((a, b) => a - b);
    const failed = times.filter((t) => t === Number.POSITIVE_INFINITY).length;
    const fmt = (ms) => (ms === Number.POSITIVE_INFINITY ? '>1000' : ms.toFixed(0));
    console.log(`\nload ${load}: ${names[load]}`);
    console.log(`  attack: ${seconds.toFixed(1)} s; answers ${JSON.stringify(counts)}`);
    console.log(
      `  probes: ${failed}/${times.length} failed or > 1 s (${((100 * failed) / Math.max(1, times.length)).toFixed(1)} %), ` +
        `p50 ${fmt(percentile(sorted, 50))} ms, p99 ${fmt(percentile(sorted, 99))} ms; ended ${JSON.stringify(Object.fromEntries(outcomes))}` +
        (failedAt.length ? `; failed ones sent at ${failedAt.toSorted((a, b) => a - b).join(', ')} s` : ''),
    );
    if (libraryResult) {
      const same = libraryResult.hash === reference.hash && libraryResult.rows === reference.rows;
      console.log(
        libraryResult.error
          ? `  library, 500,000 rows meanwhile: FAILED ${libraryResult.error}`
          : `  library, ${libraryResult.rows} rows meanwhile: ${same ? 'identical to the idle read' : 'DIFFERENT from the idle read'}` +
              ` in ${libraryResult.seconds.toFixed(1)} s (idle: ${reference.seconds.toFixed(1)} s); retried ${JSON.stringify(libraryResult.retried)}`,
      );
    }
    console.log(
      `  emulator event-loop delay: p50 ${loopLag.p50.toFixed(0)} ms, p99 ${loopLag.p99.toFixed(0)} ms, max ${loopLag.max.toFixed(0)} ms`,
    );
    console.log(
      `  emulator RSS: ${MB(before)} -> peak ${MB(peakDuring)} -> ${MB(rss)} MB ${values.settle} s after`,
    );
  }
  emulator.disconnect();
  library?.disconnect();
}
