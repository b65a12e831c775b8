// Pieces the benchmarks share: real emulator pages to time in process, and the naive row-object loop the
// library's row output is compared with.
import { execFileSync, fork } from 'node:child_process';
import { request } from 'undici';

/**
 * The first `rows` rows of an unfiltered query on `dataset`, as raw table-JSON page bodies of `page` rows,
 * read from an in-process emulator that is closed again before anything is timed.
 * @returns {Promise<{ buf: Buffer, where: { start: number, limit: number } }[]>}
 */
export async function emulatorPages(dataset, rows, page) {
  // Imported here, not at the top: the scenario processes import this module for `naiveRowMaker`, and their
  // peak RSS must be the client's alone, without the emulator's modules.
  const { startEmulator } = await import('../dist/emulator/index.js');
  const emu = await startEmulator({ port: 0, apiKey: 'k' });
  const headers = { authorization: 'token k', 'x-api-version': '20151130' };
  try {
    const created = await request(`${emu.url}/datasets/${dataset}/query/`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: '{}',
    });
    const { id, total } = await created.body.json();
    const count = Math.min(total, rows);
    const pages = [];
    for (let start = 1; start <= count; start += page) {
      const limit = Math.min(page, count - start + 1);
      const res = await request(`${emu.url}/datasets/${dataset}/query/${id}?start=${start}&limit=${limit}`, {
        headers: { ...headers, accept: 'application/vnd.service.table+json' },
      });
      pages.push({ buf: Buffer.from(await res.body.arrayBuffer()), where: { start, limit } });
    }
    return pages;
  } finally {
    await emu.close();
  }
}

/**
 * Row objects made naively from wire rows: per value a test of the column's descriptor type (a `Date` for
 * date and datetime columns, parsed with `slice`), a fresh object filled key by key.
 * @param {{ id: string, type: string }[]} columns
 */
export function naiveRowMaker(columns) {
  const convert = (type, v) => {
    if (v === null) return null;
    if (type === 'date') return new Date(Date.UTC(+v.slice(0, 4), +v.slice(4, 6) - 1, +v.slice(6, 8)));
    if (type === 'datetime') {
      return new Date(
        Date.UTC(
          +v.slice(0, 4),
          +v.slice(4, 6) - 1,
          +v.slice(6, 8),
          +v.slice(9, 11),
          +v.slice(11, 13),
          +v.slice(13, 15),
        ),
      );
    }
    return v;
  };
  return (r) => {
    const o = {};
    for (let j = 0; j < columns.length; j++) o[columns[j].id] = convert(columns[j].type, r[j]);
    return o;
  };
}

/**
 * The parent side of a bench that measures one run in a process of its own (so that its peak, its GCs and
 * its stalls are its own): starts the bench's page server, runs this same script once to warm the
 * server's page cache and once measured, each with the server's URL in `env[urlVariable]` (and `tag`,
 * 'warm-up' or 'run', in `env[tagVariable]` if given), prints the measured run's output, and exits.
 */
export async function runWarmThenMeasured(urlVariable, tagVariable) {
  const server = fork(new URL('./server.js', import.meta.url), {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const { url } = await new Promise((resolve) => server.once('message', resolve));
  for (const tag of ['warm-up', 'run']) {
    const out = execFileSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
      env: { ...process.env, [urlVariable]: url, ...(tagVariable ? { [tagVariable]: tag } : {}) },
      maxBuffer: 1 << 26,
    });
    if (tag === 'run') process.stdout.write(out);
  }
  server.disconnect();
  process.exit(0);
}
