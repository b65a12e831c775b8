// One benchmark scenario in a fresh process, so its peak RSS is its own. Prints one JSON line.
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parse as csvParse } from 'csv-parse/sync';
import { request } from 'undici';
import { DatasetClient, toArrowIpc } from '../dist/index.js';

const [name, url, dataset, pageSizeArg, concurrencyArg] = process.argv.slice(2);
const pageSize = Number(pageSizeArg);
const concurrency = Number(concurrencyArg);
const key = 'bench';
const headers = { authorization: `token ${key}`, 'x-api-version': '20151130' };
const TABLE = 'application/vnd.service.table+json';

async function queryId() {
  const res = await request(`${url}/datasets/${dataset}/query/`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json', accept: 'application/json' },
    body: '{}',
  });
  const h = await res.body.json();
  const head = await request(`${url}/datasets/${dataset}/query/${h.id}`, { method: 'HEAD', headers });
  await head.body.dump();
  return { id: h.id, total: Number(head.headers['x-total']) };
}

/** Reads pages [start, limit] with `concurrency` requests at once, in order, through `each(buffer)`. */
async function pages(id, total, size, conc, accept, each) {
  let next = 1;
  let bytes = 0;
  const worker = async () => {
    while (next <= total) {
      const start = next;
      next += size;
      const res = await request(`${url}/datasets/${dataset}/query/${id}?start=${start}&limit=${size}`, {
        headers: { ...headers, accept },
      });
      const buf = Buffer.from(await res.body.arrayBuffer());
      bytes += buf.length;
      each(buf);
    }
  };
  await Promise.all(Array.from({ length: conc }, worker));
  return bytes;
}

const scenarios = {
  // The floor: bytes only, then bytes + JSON.parse, with the same pages as the library.
  async bytes() {
    const { id, total } = await queryId();
    await pages(id, total, pageSize, concurrency, TABLE, () => {});
    return total;
  },
  async 'json-parse'() {
    const { id, total } = await queryId();
    let rows = 0;
    await pages(id, total, pageSize, concurrency, TABLE, (b) => {
      rows += JSON.parse(b.toString('utf8')).rows.length;
    });
    return rows;
  },
  // The service's own thin client: 100k-row pages one by one, res.json(), untyped arrays kept in memory.
  async naive() {
    const { id, total } = await queryId();
    const all = [];
    for (let start = 1; start <= total; start += 100_000) {
      const res = await fetch(`${url}/datasets/${dataset}/query/${id}?start=${start}&limit=100000`, {
        headers: { ...headers, accept: TABLE },
      });
      const page = await res.json();
      for (const r of page.rows) all.push(r);
    }
    return all.length;
  },
  async 'csv-parse'() {
    const { id, total } = await queryId();
    let rows = 0;
    await pages(id, total, pageSize, concurrency, 'text/csv', (b) => {
      rows += csvParse(b, { from_line: 2 }).length;
    });
    return rows;
  },
  async 'lib-table'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const result = await client.query(dataset, {});
    const table = await result.toTable({ pageSize, concurrency });
    await client.close();
    return table.numRows;
  },
  async 'lib-table-csv'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const result = await client.query(dataset, {});
    const table = await result.toTable({ pageSize, concurrency, format: 'csv' });
    await client.close();
    return table.numRows;
  },
  async 'lib-table-xlsx'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const result = await client.query(dataset, {});
    const table = await result.toTable({ pageSize, concurrency, format: 'xlsx' });
    await client.close();
    return table.numRows;
  },
  async 'lib-rows'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const result = await client.query(dataset, {});
    let rows = 0;
    for await (const _ of result.stream({ output: 'rows', pageSize, concurrency })) rows++;
    await client.close();
    return rows;
  },
  async 'lib-ipc-file'() {
    const client = new DatasetClient({ baseUrl: url, apiKey: key });
    const path = join(tmpdir(), `dqs-bench-${process.pid}.arrow`);
    let rows = 0;
    const stream = client.stream(dataset, {}, { pageSize, concurrency });
    stream.on('progress', (p) => {
      rows = p.rows;
    });
    await pipeline(stream, toArrowIpc({ format: 'file' }), createWriteStream(path));
    await rm(path, { force: true });
    await client.close();
    return rows;
  },
};

const run = scenarios[name];
if (!run) throw new Error(`unknown scenario ${name}`);
const t0 = performance.now();
const rows = await run();
const ms = performance.now() - t0;
console.log(JSON.stringify({ name, rows, ms, maxRssMB: process.resourceUsage().maxRSS / 1024 }));
