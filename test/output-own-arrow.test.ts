/**
 * Tables from another copy of apache-arrow (a notebook that imported its own) failed the `instanceof
 * Table` checks of `toPolars`/`toDuckDB`, and the IPC writer could not encode their batches (the
 * duckdb-wasm / arquero bug class). A second physical copy of the package, loaded from another path, has
 * classes of its own: its table goes through every hand-off and writer and must give what ours gives.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { DataType, Table, tableToIPC } from 'apache-arrow';
import type { DataFrame } from 'nodejs-polars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toArrowIpc, toCsv, toDuckDB, toJsonl, toPolars } from '../src/index.js';
import { setup } from './helpers.js';

const root = join(import.meta.dirname, '..');
let copyDir: string;
let Other: typeof import('apache-arrow');

beforeAll(async () => {
  // Inside node_modules so the copy still finds apache-arrow's own dependencies (flatbuffers, tslib).
  copyDir = mkdtempSync(join(root, 'node_modules', '.arrow-copy-'));
  cpSync(join(root, 'node_modules', 'apache-arrow'), join(copyDir, 'apache-arrow'), { recursive: true });
  Other = await import(pathToFileURL(join(copyDir, 'apache-arrow', 'Arrow.node.mjs')).href);
});

afterAll(() => {
  if (copyDir) rmSync(copyDir, { recursive: true, force: true });
});

async function bytesOf(batches: Iterable<unknown>, writer: () => NodeJS.ReadWriteStream): Promise<Buffer> {
  const out = writer();
  const done = buffer(out as unknown as Readable);
  await pipeline(Readable.from(batches), out);
  return done;
}

describe('Arrow from another copy of apache-arrow', () => {
  it('is a different class; toPolars, toDuckDB and the writers take it and give what our table gives', async () => {
    const { client } = await setup();
    const ours = await (await client.query('job_listings', { tickers: ['nasdaq:aapl', 'nyse:wmt'] })).toTable(
      { pageSize: 700 },
    );
    const theirs = Other.tableFromIPC(tableToIPC(ours, 'stream'));
    // Classes of their own (apache-arrow 21's `instanceof` accepts other copies' tables by a brand, but
    // not their types: `instanceof DataType` is false, which the IPC writer's visitors depend on).
    expect(Object.getPrototypeOf(theirs)).not.toBe(Table.prototype);
    expect(theirs.schema.fields[0]!.type).not.toBeInstanceOf(DataType);
    expect(theirs.batches.length).toBeGreaterThan(1);

    // Writers: the same bytes from either copy's batches.
    for (const writer of [() => toArrowIpc(), () => toCsv(), () => toJsonl()]) {
      const a = await bytesOf(ours.batches, writer);
      const b = await bytesOf(theirs.batches, writer);
      expect(b.equals(a)).toBe(true);
    }

    const df = await toPolars<DataFrame>(theirs as unknown as Table);
    const dfOurs = await toPolars<DataFrame>(ours);
    expect(df.height).toBe(ours.numRows);
    expect(df.toRecords()).toEqual(dfOurs.toRecords());
    // A single batch of the other copy too.
    expect((await toPolars<DataFrame>(theirs.batches[0] as never)).height).toBe(theirs.batches[0]!.numRows);

    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      expect(await toDuckDB(connection, theirs as unknown as Table, 'theirs')).toEqual({
        rows: ours.numRows,
      });
      expect(await toDuckDB(connection, ours, 'ours')).toEqual({ rows: ours.numRows });
      const diff = await connection.runAndReadAll(
        'SELECT count(*)::INTEGER AS n FROM ((SELECT * FROM theirs EXCEPT ALL SELECT * FROM ours) UNION ALL (SELECT * FROM ours EXCEPT ALL SELECT * FROM theirs))',
      );
      expect(diff.getRowObjectsJson()).toEqual([{ n: 0 }]);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});
