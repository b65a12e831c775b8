/**
 * Data-frame hand-offs, each checked by the engine itself: nodejs-polars (`toPolars`), DuckDB's node API
 * (`toDuckDB`), and arquero's `fromArrow` recipe from docs/analytics.md. Sources are real results from the
 * emulator, read in small pages so the ticker dictionary grows across batches (what Polars rejects as
 * delta dictionaries unless decoded).
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { Table, tableToIPC } from 'apache-arrow';
import * as aq from 'arquero';
import pl, { type DataFrame } from 'nodejs-polars';
import { describe, expect, it } from 'vitest';
import { queryTotal } from '../src/emulator/index.js';
import { InvalidArgumentError, toDuckDB, toPolars } from '../src/index.js';
import { setup } from './helpers.js';

const DATASET = 'store_locations';
const TICKERS = ['nasdaq:aapl', 'lse:tsco', 'nyse:wmt'];
const BODY = { tickers: TICKERS };
const SMALL = { pageSize: 100 };

async function duckdb() {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  return {
    connection,
    async rows(sql: string) {
      return (await connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[];
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

describe('toPolars', () => {
  it('a multi-batch result with a growing ticker dictionary becomes a DataFrame with the right types', async () => {
    const { client } = await setup();
    const table = await (await client.query(DATASET, BODY)).toTable(SMALL);
    expect(table.batches.length).toBeGreaterThan(3);
    const df = await toPolars<DataFrame>(table);
    expect(df.height).toBe(queryTotal(DATASET, BODY));
    expect(df.columns).toEqual(table.schema.fields.map((f) => f.name));
    const types = Object.fromEntries(
      df.columns.map((c) => [c, String(df.getColumn(c).dtype).replace(/^DataType\((.*)\)$/, '$1')]),
    );
    expect(types).toMatchObject({
      ticker: 'String',
      opened_date: 'Date',
      latitude: 'Float64',
      is_open: 'Bool',
    });
    expect(types.updated_at).toBe('Datetime(ms,UTC)');
    const counts = df.groupBy('ticker').len().sort('ticker').toRecords();
    expect(counts).toEqual(
      [...TICKERS].sort().map((t) => ({ ticker: t, ticker_count: queryTotal(DATASET, { tickers: [t] }) })),
    );
    // Same values as Arrow: first row, dates compared as days.
    const first = table.get(0)!.toJSON() as Record<string, unknown>;
    const row = df.row(0);
    expect(row[0]).toBe(first.ticker);
    expect(row[1]).toBe(first.store_id);
    expect((row[8] as Date).getTime()).toBe(first.opened_date);
  });

  it('an empty result keeps its columns; the module can be passed in', async () => {
    const { client } = await setup();
    const result = await client.query(DATASET, { tickers: ['nasdaq:msft'] }); // no stores
    expect(result.total).toBe(0);
    const table = await result.toTable();
    const df = await toPolars(table, { polars: pl });
    expect(df.height).toBe(0);
    expect(df.columns).toEqual(result.fields.map((f) => f.id));
    // A table with no batch at all, only a schema.
    const bare = await toPolars<DataFrame>(new Table(table.schema));
    expect(bare.columns).toEqual(df.columns);
    expect(String(bare.getColumn('ticker').dtype)).toMatch(/String/);
    await expect(toPolars({} as Table)).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});

describe('toDuckDB', () => {
  it('creates a table from a Table, appends a whole result stream, replaces; types as DuckDB sees them', async () => {
    const { client } = await setup();
    const db = await duckdb();
    try {
      const total = queryTotal(DATASET, BODY);
      const table = await (await client.query(DATASET, BODY)).toTable(SMALL);
      const name = 'stores "2024"';
      expect(await toDuckDB(db.connection, table, name)).toEqual({ rows: total });
      const [types] = await db.rows(
        `SELECT count(*) AS n, typeof(ticker) AS ticker, typeof(opened_date) AS opened, typeof(updated_at) AS updated,
         typeof(is_open) AS open, typeof(latitude) AS lat FROM "stores ""2024""" GROUP BY ALL`,
      );
      expect(types).toEqual({
        n: String(total),
        ticker: 'VARCHAR',
        opened: 'DATE',
        updated: 'TIMESTAMP WITH TIME ZONE',
        open: 'BOOLEAN',
        lat: 'DOUBLE',
      });
      // Straight from the network: a ResultStream is streamed through Parquet, never held whole.
      const streamed = await toDuckDB(db.connection, client.stream(DATASET, BODY, SMALL), name, {
        mode: 'append',
      });
      expect(streamed.rows).toBe(total);
      const perTicker = await db.rows(
        `SELECT ticker, count(*) AS n FROM "stores ""2024""" GROUP BY ticker ORDER BY ticker`,
      );
      expect(perTicker).toEqual(
        [...TICKERS].sort().map((t) => ({ ticker: t, n: String(2 * queryTotal(DATASET, { tickers: [t] })) })),
      );
      await expect(toDuckDB(db.connection, table, name)).rejects.toThrow(/already exists/);
      await toDuckDB(db.connection, table.slice(0, 10), name, { mode: 'replace' });
      expect(await db.rows(`SELECT count(*) AS n FROM "stores ""2024"""`)).toEqual([{ n: '10' }]);
      // An empty table (no batch at all) still makes a table with every column.
      const empty = await (await client.query(DATASET, { tickers: ['nasdaq:msft'] })).toTable();
      await toDuckDB(db.connection, new Table(empty.schema), 'empty');
      const columns = await db.rows(`SELECT column_name FROM (DESCRIBE empty)`);
      expect(columns.map((c) => c.column_name)).toEqual(empty.schema.fields.map((f) => f.name));
    } finally {
      db.close();
    }
  });

  it('validates its arguments before writing anything', async () => {
    const db = await duckdb();
    try {
      await expect(toDuckDB({} as never, new Table(), 't')).rejects.toThrow(
        /Expected `connection` to be a DuckDB connection/,
      );
      await expect(toDuckDB(db.connection, new Table(), '')).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(toDuckDB(db.connection, 42 as never, 't')).rejects.toThrow(/to be a Table/);
      await expect(toDuckDB(db.connection, new Table(), 't', { mode: 'upsert' as 'create' })).rejects.toThrow(
        /to be 'create', 'replace' or 'append'/,
      );
    } finally {
      db.close();
    }
  });
});

describe('arquero recipe (docs/analytics.md)', () => {
  it('aq.fromArrow(table) uses the Arrow columns as they are, the growing dictionary included', async () => {
    const { client } = await setup();
    const table = await (await client.query(DATASET, BODY)).toTable(SMALL);
    // arquero's types name flechette's Table only; an apache-arrow Table works the same (duck-typed).
    const dt = aq.fromArrow(table as unknown as Parameters<typeof aq.fromArrow>[0]);
    expect(dt.numRows()).toBe(table.numRows);
    const counts = dt.groupby('ticker').count().orderby('ticker').objects();
    expect(counts).toEqual(
      [...TICKERS].sort().map((t) => ({ ticker: t, count: queryTotal(DATASET, { tickers: [t] }) })),
    );
    // Dates arrive as apache-arrow gives them: epoch milliseconds (UTC midnight).
    const [first] = dt.objects({ limit: 1 }) as Record<string, unknown>[];
    expect(first?.opened_date).toBe(table.get(0)!.toJSON().opened_date);
    // Through IPC bytes, flechette decodes (a copy) with dates as Date objects.
    const copied = aq.fromArrow(tableToIPC(table));
    expect(copied.numRows()).toBe(table.numRows);
    expect((copied.objects({ limit: 1 })[0] as Record<string, unknown>).opened_date).toBeInstanceOf(Date);
  });
});
