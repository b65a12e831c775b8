// What an accepted body just under `maxResponseBytes` costs in memory (issue: bodies bounded below V8's
// limits, "peak RSS for a body at the limit <= 2x its size"). A metadata answer holding one huge string is
// the costly case: it is read whole, made text and parsed, not decoded from bytes as result pages are.
//
// Usage: node bench/body-memory.js [--mib 255] [--no-length | --floor]
// The server runs in a child process so the RSS measured here is the client's alone. `--floor` reads no
// socket: the same body is built in a resizable buffer as the reader builds it, made text, freed and
// parsed, which is what the bytes, the text and the parsed string cost with nothing else alive (2.00x).
import { fork } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    mib: { type: 'string', default: '255' },
    'no-length': { type: 'boolean', default: false },
    serve: { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
  },
});
const size = Number(values.mib) * 1024 * 1024;
const head = Buffer.from('{"id":"big","name":"big","fields":[],"description":"');
const tail = Buffer.from('"}');

if (values.floor) {
  const idle = process.memoryUsage.rss();
  const store = new ArrayBuffer(0, { maxByteLength: size });
  store.resize(size);
  const bytes = Buffer.from(store);
  bytes.set(head, 0);
  bytes.fill('x', head.length, size - tail.length);
  bytes.set(tail, size - tail.length);
  const text = bytes.toString('utf8');
  store.resize(0);
  const meta = JSON.parse(text);
  const grew = process.resourceUsage().maxRSS * 1024 - idle;
  console.log(
    `body ${(size / 2 ** 20).toFixed(0)} MiB, no socket: description ${(meta.description.length / 2 ** 20).toFixed(0)} MiB; ` +
      `grew ${(grew / 2 ** 20).toFixed(0)} MiB = ${(grew / size).toFixed(2)}x the body`,
  );
} else if (values.serve) {
  // The child: one dataset whose description is a single string of `size` bytes in total.
  const http = await import('node:http');
  const fill = Buffer.alloc(1024 * 1024, 'x');
  const server = http.createServer((_req, res) => {
    const headers = { 'content-type': 'application/json' };
    if (!values['no-length']) headers['content-length'] = String(size);
    res.writeHead(200, headers);
    let left = size - head.length - tail.length;
    res.write(head);
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, fill.length);
        left -= n;
        if (!res.write(n === fill.length ? fill : fill.subarray(0, n))) return void res.once('drain', pump);
      }
      res.end(tail);
    };
    pump();
  });
  server.listen(0, '127.0.0.1', () => process.send(server.address().port));
} else {
  const child = fork(new URL(import.meta.url), [
    '--serve',
    '--mib',
    values.mib,
    ...(values['no-length'] ? ['--no-length'] : []),
  ]);
  const port = await new Promise((resolve) => child.once('message', resolve));
  const { DatasetClient } = await import('../dist/index.js');
  const client = new DatasetClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k', cache: false });
  const idle = process.memoryUsage.rss();
  const began = performance.now();
  try {
    const meta = await client.getDataset('big');
    const ms = performance.now() - began;
    // The kernel's high-water mark (ru_maxrss), not samples: the peak is inside synchronous work
    // (making the text, JSON.parse) that no timer could sample.
    const peak = process.resourceUsage().maxRSS * 1024;
    const grew = peak - idle;
    console.log(
      `body ${(size / 2 ** 20).toFixed(0)} MiB${values['no-length'] ? ' (no Content-Length)' : ''}: ` +
        `description ${(meta.description.length / 2 ** 20).toFixed(0)} MiB in ${ms.toFixed(0)} ms; RSS ${(idle / 2 ** 20).toFixed(0)} -> ` +
        `peak ${(peak / 2 ** 20).toFixed(0)} MiB: grew ${(grew / 2 ** 20).toFixed(0)} MiB = ${(grew / size).toFixed(2)}x the body`,
    );
  } finally {
    await client.close();
    child.kill();
  }
}
