/**
 * The file writers (`toCsv`, `toJsonl`, `toParquet`) on batches built the way a result stream builds them,
 * each output read back by a reader we did not write: csv-parse, JSON.parse, DuckDB.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DataType, type RecordBatch, tableFromIPC } from 'apache-arrow';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import pl from 'nodejs-polars';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import { InvalidArgumentError } from '../src/core/errors.js';
import type { FieldDescriptor, WireValue } from '../src/core/wire.js';
import { cellReaders, isoDate, isoTimestamp } from '../src/output/cells.js';
import { csvField, toCsv } from '../src/output/csv.js';
import { decodeDictionaries, withoutDictionaries } from '../src/output/dictionaries.js';
import { arrowIpcTransform } from '../src/output/ipc-transform.js';
import { toJsonl } from '../src/output/jsonl.js';
import { toParquet } from '../src/output/parquet.js';
import { duck } from './cli-helpers.js';

function field(id: string, type: string, format: string | null = null): FieldDescriptor {
  return { id, display_name: id, summary: '', type, format, metric: false, length: 0, options: [] };
}

const FIELDS = [
  field('ticker', 'string', 'ticker'),
  field('title', 'string'),
  field('posted', 'date'),
  field('seen', 'datetime'),
  field('salary', 'number'),
  field('remote', 'boolean'),
];

// Awkward text on purpose: commas, quotes, line breaks, non-ASCII, empty string next to null.
const ROWS: WireValue[][] = [
  ['nasdaq:aapl', 'Engineer, "Platform" Team', '20240229', '20240229T123456Z', 120000, true],
  ['nyse:ibm', 'Line one\nline two', '19991231', '20000101T000000Z', 55000.5, false],
  ['nasdaq:aapl', '', null, null, null, null],
  ['private:acme', null, '20240101', '20240101T235959Z', 0, true],
  ['nyse:ibm', 'Ingénieur Données – Zürich ☕', '20230615', '20230615T080000Z', -1.25, false],
];

/** Batches from one builder (one growing ticker dictionary), `perBatch` rows each. */
function batches(rows: WireValue[][], perBatch: number): RecordBatch[] {
  const builder = new RecordBatchBuilder(planColumns(FIELDS));
  const out: RecordBatch[] = [];
  for (let i = 0; i < rows.length; i += perBatch) {
    builder.appendRows(rows.slice(i, i + perBatch), i + 1);
    out.push(builder.flush());
  }
  if (out.length === 0) out.push(builder.flush());
  return out;
}

async function write(
  input: RecordBatch[],
  writer: NodeJS.ReadWriteStream | NodeJS.ReadWriteStream[],
  path: string,
): Promise<void> {
  const stages = Array.isArray(writer) ? writer : [writer];
  await pipeline([Readable.from(input, { objectMode: true }), ...stages, createWriteStream(path)]);
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dqs-output-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('toCsv', () => {
  it('writes RFC 4180 with a header, ISO dates, and "" apart from null; csv-parse reads it back', async () => {
    const path = join(dir, 'a.csv');
    await write(batches(ROWS, 2), toCsv(), path);
    const text = await readFile(path, 'utf8');
    expect(text.startsWith('ticker,title,posted,seen,salary,remote\r\n')).toBe(true);
    expect(text.split('\r\n')[3]).toBe('nasdaq:aapl,"",,,,');
    const records = parse(text, { columns: true, relax_column_count: false }) as Record<string, string>[];
    expect(records).toHaveLength(ROWS.length);
    expect(records[0]).toEqual({
      ticker: 'nasdaq:aapl',
      title: 'Engineer, "Platform" Team',
      posted: '2024-02-29',
      seen: '2024-02-29T12:34:56.000Z',
      salary: '120000',
      remote: 'true',
    });
    expect(records[1]!.title).toBe('Line one\nline two');
    expect(records[1]!.salary).toBe('55000.5');
    expect(records[4]!.title).toBe('Ingénieur Données – Zürich ☕');
  });

  it('writes the bytes of csvField() of every cell (the text route), whatever the values and slices', async () => {
    // The writer copies UTF-8 values and dictionary entries as bytes; this is the string-per-cell route
    // it replaced, on random awkward values, several batches sharing a dictionary, and sliced batches.
    const textRoute = (input: RecordBatch[]): Buffer => {
      let text = `${input[0]!.schema.fields.map((f) => csvField(f.name)).join(',')}\r\n`;
      for (const batch of input) {
        const readers = cellReaders(batch);
        for (let row = 0; row < batch.numRows; row++) {
          text += `${readers.map((read) => csvField(read(row))).join(',')}\r\n`;
        }
      }
      return Buffer.from(text, 'utf8');
    };
    const pad = (n: number, width: number) => String(n).padStart(width, '0');
    const wireDate = (d: Date) =>
      `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1, 2)}${pad(d.getUTCDate(), 2)}`;
    const wireTime = (d: Date) =>
      `${wireDate(d)}T${pad(d.getUTCHours(), 2)}${pad(d.getUTCMinutes(), 2)}${pad(d.getUTCSeconds(), 2)}Z`;
    const text = fc.oneof(
      fc.constantFrom('', '"', ',', '\r\n', '\n', 'a""b', 'Ingénieur – Zürich ☕', 'x,"y"\r'),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: fc.constantFrom('a', '"', ',', '\n', '\r', 'é', ' '), maxLength: 12 }),
    );
    const date = fc.date({
      min: new Date('0001-01-01T00:00:00Z'),
      max: new Date('9999-12-31T23:59:59Z'),
      noInvalidDate: true,
    });
    const row = fc.tuple(
      fc.constantFrom('nasdaq:aapl', 'nyse:ibm', 'lse:tsco', null),
      fc.option(text, { freq: 5 }),
      fc.option(date.map(wireDate), { freq: 5 }),
      fc.option(date.map(wireTime), { freq: 5 }),
      fc.option(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), { freq: 5 }),
      fc.option(fc.boolean(), { freq: 5 }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 7 }),
        fc.nat(3),
        async (rows, perBatch, cut) => {
          const input = batches(rows as WireValue[][], perBatch).map((b) =>
            cut > 0 && b.numRows > cut ? b.slice(cut, b.numRows - 1) : b,
          );
          const path = join(dir, 'p.csv');
          await write(input, toCsv(), path);
          expect((await readFile(path)).equals(textRoute(input))).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('dates and timestamps are written as Date#toISOString writes them', () => {
    const iso = (ms: number) => {
      const d = new Date(ms);
      return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
    };
    // Years 0 to 9999 are formatted without a Date; the rest (and fractions) still go through one.
    const edges = [0, -1, -0, 1.5, -1.5, -62167219200000, -62167219200001, 253402300799999, 253402300800000];
    for (const ms of [...edges, 8.64e15, -8.64e15, 8.64e15 + 1]) expect(isoTimestamp(ms)).toBe(iso(ms));
    for (const days of [0, -1, -719528, -719529, 2932896, 2932897, 1e8, 1e8 + 1, 2 ** 31 - 1, -(2 ** 31)]) {
      expect(isoDate(days)).toBe(iso(days * 86_400_000).slice(0, 10));
    }
    fc.assert(
      fc.property(fc.oneof(fc.maxSafeInteger(), fc.double({ noNaN: true }).map(Math.trunc)), (ms) => {
        expect(isoTimestamp(ms)).toBe(iso(ms));
        const days = Math.floor(ms / 86_400_000 / 100);
        expect(isoDate(days)).toBe(iso(days * 86_400_000).slice(0, 10));
      }),
      { numRuns: 20_000 },
    );
  });

  it('header: false leaves the header out', async () => {
    const path = join(dir, 'b.csv');
    await write(batches(ROWS.slice(0, 1), 1), toCsv({ header: false }), path);
    expect(await readFile(path, 'utf8')).toBe(
      'nasdaq:aapl,"Engineer, ""Platform"" Team",2024-02-29,2024-02-29T12:34:56.000Z,120000,true\r\n',
    );
  });
});

describe('toJsonl', () => {
  it('writes one object per line with every key, nulls kept, dates as YYYY-MM-DD', async () => {
    const path = join(dir, 'a.jsonl');
    await write(batches(ROWS, 3), toJsonl(), path);
    const lines = (await readFile(path, 'utf8')).split('\n');
    expect(lines.pop()).toBe('');
    const objects = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objects).toHaveLength(ROWS.length);
    expect(objects[0]).toEqual({
      ticker: 'nasdaq:aapl',
      title: 'Engineer, "Platform" Team',
      posted: '2024-02-29',
      seen: '2024-02-29T12:34:56.000Z',
      salary: 120000,
      remote: true,
    });
    expect(objects[2]).toEqual({
      ticker: 'nasdaq:aapl',
      title: '',
      posted: null,
      seen: null,
      salary: null,
      remote: null,
    });
    expect(Object.keys(objects[3]!)).toEqual(FIELDS.map((f) => f.id));
  });
});

describe('toParquet', () => {
  it('writes every type so DuckDB reads the right types and values, in row groups, zstd', async () => {
    const many: WireValue[][] = [];
    for (let i = 0; i < 2000; i++)
      many.push(ROWS[i % ROWS.length]!.map((v, c) => (c === 4 && v !== null ? i : v)));
    const path = join(dir, 'a.parquet');
    await write(batches(many, 300), toParquet({ rowGroupSize: 1000 }), path);
    const p = `read_parquet('${path}')`;
    const [types] = await duck(
      `SELECT count(*) AS n, typeof(ticker) AS ticker, typeof(title) AS title, typeof(posted) AS posted,
       typeof(seen) AS seen, typeof(salary) AS salary, typeof(remote) AS remote FROM ${p} GROUP BY ALL`,
    );
    expect(types).toEqual({
      n: '2000',
      ticker: 'VARCHAR',
      title: 'VARCHAR',
      posted: 'DATE',
      seen: 'TIMESTAMP WITH TIME ZONE',
      salary: 'DOUBLE',
      remote: 'BOOLEAN',
    });
    const rows = await duck(
      `SELECT ticker, title, strftime(posted, '%Y-%m-%d') AS posted, epoch_ms(seen) AS seen, salary, remote
       FROM ${p} LIMIT 5`,
    );
    expect(rows[0]).toEqual({
      ticker: 'nasdaq:aapl',
      title: 'Engineer, "Platform" Team',
      posted: '2024-02-29',
      seen: String(Date.UTC(2024, 1, 29, 12, 34, 56)),
      salary: 0,
      remote: true,
    });
    expect(rows[2]).toEqual({
      ticker: 'nasdaq:aapl',
      title: '',
      posted: null,
      seen: null,
      salary: null,
      remote: null,
    });
    expect(rows[3]!.ticker).toBe('private:acme');
    expect(rows[3]!.title).toBeNull();
    expect(rows[4]!.title).toBe('Ingénieur Données – Zürich ☕');
    const [tickers] = await duck(`SELECT count(DISTINCT ticker) AS n FROM ${p}`);
    expect(tickers!.n).toBe('3');
    const meta = await duck(
      `SELECT DISTINCT row_group_id, compression FROM parquet_metadata('${path}') ORDER BY row_group_id`,
    );
    expect(meta.map((m) => m.compression)).toEqual(['ZSTD', 'ZSTD']);
  });

  it('writes a result with no rows as a valid file that still has the columns', async () => {
    const path = join(dir, 'empty.parquet');
    await write(batches([], 10), toParquet({ compression: 'snappy' }), path);
    const [row] = await duck(`SELECT count(*) AS n FROM read_parquet('${path}')`);
    expect(row!.n).toBe('0');
    const cols = await duck(`DESCRIBE SELECT * FROM read_parquet('${path}')`);
    expect(cols.map((c) => c.column_name)).toEqual(FIELDS.map((f) => f.id));
  });

  it('fails clearly with no batch at all, and validates its options', async () => {
    await expect(write([], toParquet(), join(dir, 'none.parquet'))).rejects.toThrow(
      /at least one RecordBatch/,
    );
    expect(() => toParquet({ compression: 'lzma' as 'zstd' })).toThrow(InvalidArgumentError);
    expect(() => toParquet({ rowGroupSize: 0 })).toThrow(/to be an integer >= 1, got 0/);
  });
});

describe('decodeDictionaries + arrowIpcTransform', () => {
  // Tickers first seen in later batches: the growing dictionary that makes delta dictionaries.
  const input = () => batches(ROWS, 2);

  it('turns the ticker dictionary into plain strings, values and nulls kept', () => {
    const [first] = input();
    const plain = withoutDictionaries(first!);
    expect(DataType.isDictionary(first!.schema.fields[0]!.type)).toBe(true);
    expect(DataType.isUtf8(plain.schema.fields[0]!.type)).toBe(true);
    expect(plain.schema.fields[0]!.metadata.get('format')).toBe('ticker');
    expect(plain.getChildAt(0)!.toArray()).toEqual(['nasdaq:aapl', 'nyse:ibm']);
    expect(plain.data.children[1]).toBe(first!.data.children[1]);
    expect(withoutDictionaries(plain)).toBe(plain);
  });

  it.each(['file', 'stream'] as const)(
    'writes an IPC %s that Polars and apache-arrow read',
    async (format) => {
      const path = join(dir, `a.${format === 'file' ? 'arrow' : 'arrows'}`);
      await write(input(), [decodeDictionaries(), arrowIpcTransform(format)], path);
      const bytes = await readFile(path);
      const table = tableFromIPC(bytes);
      expect(table.numRows).toBe(ROWS.length);
      expect(table.getChild('ticker')!.toArray()).toEqual(ROWS.map((r) => r[0]));
      expect(table.getChild('title')!.get(2)).toBe('');
      expect(table.getChild('title')!.get(3)).toBeNull();
      const df = format === 'file' ? pl.readIPC(bytes) : pl.readIPCStream(bytes);
      expect(df.height).toBe(ROWS.length);
      expect(df.getColumn('ticker').toArray()).toEqual(ROWS.map((r) => r[0]));
      expect(df.dtypes.map(String)).toEqual([
        'DataType(String)',
        'DataType(String)',
        'DataType(Date)',
        'DataType(Datetime(ms,UTC))',
        'DataType(Float64)',
        'DataType(Bool)',
      ]);
    },
  );

  it('an error mid-stream fails the pipeline cleanly (no stray rejection) and leaves the bytes unfinished', async () => {
    async function* failing() {
      yield* input().slice(0, 1);
      throw new Error('source failed');
    }
    const path = join(dir, 'broken.arrow');
    await expect(
      pipeline(
        Readable.from(failing(), { objectMode: true }),
        arrowIpcTransform('file'),
        createWriteStream(path),
      ),
    ).rejects.toThrow('source failed');
  });
});

describe('toCsv nullText', () => {
  it('writes nulls as the marker (quoted when it must be), "" stays "", and refuses an empty marker', async () => {
    const fields: FieldDescriptor[] = [
      {
        id: 'url',
        display_name: 'url',
        summary: '',
        type: 'string',
        format: null,
        metric: false,
        length: 0,
        options: [],
      },
      {
        id: 'n',
        display_name: 'n',
        summary: '',
        type: 'number',
        format: null,
        metric: false,
        length: 0,
        options: [],
      },
    ];
    const builder = new RecordBatchBuilder(planColumns(fields));
    builder.appendRows(
      [
        ['', 1],
        [null, null],
        ['x', 2],
      ],
      1,
    );
    const batch = builder.flush();
    const write = async (nullText?: string) => {
      const chunks: Buffer[] = [];
      await pipeline(
        Readable.from([batch]),
        toCsv(nullText === undefined ? {} : { nullText }),
        async (source) => {
          for await (const c of source) chunks.push(c as Buffer);
        },
      );
      return Buffer.concat(chunks).toString('utf8');
    };
    expect(await write()).toBe('url,n\r\n"",1\r\n,\r\nx,2\r\n');
    expect(await write('NULL')).toBe('url,n\r\n"",1\r\nNULL,NULL\r\nx,2\r\n');
    expect(await write('a,b')).toBe('url,n\r\n"",1\r\n"a,b","a,b"\r\nx,2\r\n');
    expect(() => toCsv({ nullText: '' })).toThrow(InvalidArgumentError);
  });
});
