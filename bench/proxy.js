// Through a forward proxy vs direct: the same 500k-row read (job_listings, unfiltered) from an emulator
// on loopback, once through the `proxy` package's CONNECT tunnel and once direct, alternating, best of
// N each. The target: through the proxy within 1.3x of direct.
// Usage: npm run build && flock /tmp/dqs-cpu.lock node bench/proxy.js [--rounds 2]
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { createProxy } from 'proxy';
import { startEmulator } from '../dist/emulator/index.js';
import { DatasetClient } from '../dist/index.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '2' } } });
const rounds = Number(values.rounds);

const emu = await startEmulator({ port: 0, apiKey: 'k' });
const proxyServer = createProxy(createServer());
let tunnels = 0;
proxyServer.on('connect', () => tunnels++);
await new Promise((r) => proxyServer.listen(0, '127.0.0.1', r));
const proxyUrl = `http://127.0.0.1:${proxyServer.address().port}`;

async function read(proxy) {
  const client = new DatasetClient({ baseUrl: emu.url, apiKey: 'k', proxy, cache: false });
  try {
    const start = performance.now();
    const result = await client.query('job_listings', {});
    let rows = 0;
    for await (const batch of result.stream()) rows += batch.numRows;
    return { ms: performance.now() - start, rows };
  } finally {
    await client.close();
  }
}

const best = { direct: Number.POSITIVE_INFINITY, proxy: Number.POSITIVE_INFINITY };
let rows = 0;
await read(false); // warm the emulator's page building and the JIT
for (let i = 0; i < rounds; i++) {
  const d = await read(false);
  const p = await read(proxyUrl);
  rows = d.rows;
  if (p.rows !== d.rows) throw new Error(`rows differ: ${p.rows} through the proxy, ${d.rows} direct`);
  best.direct = Math.min(best.direct, d.ms);
  best.proxy = Math.min(best.proxy, p.ms);
  console.log(`round ${i + 1}: direct ${d.ms.toFixed(0)} ms, proxy ${p.ms.toFixed(0)} ms`);
}
console.log(
  JSON.stringify({
    rows,
    directMs: Math.round(best.direct),
    proxyMs: Math.round(best.proxy),
    ratio: Number((best.proxy / best.direct).toFixed(2)),
    tunnels,
  }),
);
proxyServer.closeAllConnections();
proxyServer.close();
await emu.close();
