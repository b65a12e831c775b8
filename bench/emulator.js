// The emulator as a user's test server: how many result pages per second it serves to 8 concurrent
// clients, with its default options (page cache included), first cold (every page serialized) then warm
// (served from the cache). Usage: node bench/emulator.js [--clients 8] [--page 1000] [--seconds 5]
//                                                         [--dataset job_listings]
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '8' },
    page: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '5' },
    dataset: { type: 'string', default: 'job_listings' },
    child: { type: 'boolean', default: false },
  },
});

if (values.child) {
  // The server side: the emulator with its defaults, in its own process so clients do not share its CPU.
  const { startEmulator } = await import('../dist/emulator/index.js');
  const emu = await startEmulator({ port: 0, apiKey: 'bench' });
  process.send?.({ url: emu.url });
  process.on('disconnect', () => emu.close().then(() => process.exit(0)));
} else {
  const server = fork(new URL(import.meta.url).pathname, ['--child'], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { url } = await new Promise((resolve) => server.once('message', resolve));
  const headers = { authorization: 'token bench', 'x-api-version': '20151130' };
  const dispatcher = new Agent({ connections: Number(values.clients) });
  const created = await request(`${url}/datasets/${values.dataset}/query/`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: '{}',
    dispatcher,
  });
  const { id, total } = await created.body.json();
  const size = Number(values.page);
  const pageCount = Math.ceil(total / size);

  /** `clients` loops fetching pages `0..span-1` in turn for `seconds` (or `limit` pages); pages and bytes. */
  async function load(seconds, limit, span) {
    let next = 0;
    let pages = 0;
    let bytes = 0;
    const until = performance.now() + seconds * 1000;
    const client = async () => {
      while (performance.now() < until && next < limit) {
        const start = (next++ % span) * size + 1;
        const res = await request(
          `${url}/datasets/${values.dataset}/query/${id}?start=${start}&limit=${size}`,
          {
            headers: { ...headers, accept: 'application/vnd.service.table+json' },
            dispatcher,
          },
        );
        for await (const chunk of res.body) bytes += chunk.length;
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        pages++;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: Number(values.clients) }, client));
    const s = (performance.now() - t0) / 1000;
    return { pages, s, perSecond: pages / s, mbPerSecond: bytes / 2 ** 20 / s };
  }

  // Cold: distinct pages the cache has not seen (at most its default 64 entries are kept).
  const cold = await load(Number(values.seconds), pageCount, pageCount);
  // Warm: the same 32 pages over and over, all in the cache.
  const warm = await load(Number(values.seconds), Number.POSITIVE_INFINITY, Math.min(32, pageCount));
  const fmt = (r) =>
    `${r.perSecond.toFixed(0)} pages/s (${r.mbPerSecond.toFixed(0)} MB/s, ${r.pages} pages in ${r.s.toFixed(1)} s)`;
  console.log(
    `emulator, ${values.clients} concurrent clients, ${values.dataset}, ${size}-row pages of table JSON`,
  );
  console.log(`cold (each page serialized once): ${fmt(cold)}`);
  console.log(`warm (served from the page cache): ${fmt(warm)}`);
  await dispatcher.close();
  server.disconnect();
}
