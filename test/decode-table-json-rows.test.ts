/**
 * The table-JSON row decoder (row objects straight from page bytes, for `toArray()`) agrees with the
 * reference path (JSON.parse + makeRowFactory): on every emulator dataset over real HTTP, with every
 * `dates` spelling and with `types` overrides, and on fuzzed pages. Its contract is "the same objects, or
 * decline": the same keys in the same order, values of the same type and content (`Date`s, strings,
 * numbers including -0, booleans, nulls), and wherever the reference fails, a decline (so the stream
 * reports the reference's error, with its page, row and column).
 */

import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ColumnKind, makeRowFactory, planColumns } from '../src/convert/index.js';
import type { DatesAs } from '../src/convert/row-factory.js';
import { DecodeError, DqsError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { parseTablePage } from '../src/decode/index.js';
import { type FastRowPage, FastTableDecoder } from '../src/decode/table-json-fast.js';
import { DATASETS } from '../src/emulator/datasets/index.js';
import type { QueryResult } from '../src/query/query-result.js';
import { exactDouble, field, trickyText, wireDate, wireTimestamp } from './convert-fixtures.js';
import { setup } from './helpers.js';

const where = { start: 1, limit: 1000 };
const fields = [
  field('ticker', 'string', 'ticker'),
  field('d', 'date'),
  field('t', 'datetime'),
  field('n', 'number'),
  field('b', 'boolean'),
  field('s'),
  field('__proto__'),
];
const plan = planColumns(fields);

function envelope(rows: unknown): Record<string, unknown> {
  const n = Array.isArray(rows) ? rows.length : 0;
  return {
    id: 'a'.repeat(64),
    state: 'complete',
    total: 5000,
    count: n,
    start: 1,
    limit: 1000,
    rows,
    fields,
  };
}

/**
 * Same values of the same types (`isDeepStrictEqual`: a Date is not its string, -0 is not 0), same keys
 * in the same order, plain objects.
 */
function expectSameRows(got: readonly unknown[], want: readonly unknown[]): void {
  expect(got.length).toBe(want.length);
  for (let i = 0; i < want.length; i++) {
    const [g, w] = [got[i] as object, want[i] as object];
    if (!isDeepStrictEqual(g, w) || Reflect.ownKeys(g).join() !== Reflect.ownKeys(w).join()) {
      expect.fail(`row ${i + 1}: ${String(g)} differs from the reference's ${String(w)}`);
    }
    expect(Object.getPrototypeOf(g)).toBe(Object.prototype);
  }
}

/** The reference's row objects of a page, or its error. */
function reference(bytes: Buffer, dates: DatesAs): unknown[] | Error {
  try {
    const page = parseTablePage(bytes.toString('utf8'), where);
    const make = makeRowFactory(plan, { dates });
    return page.rows.map((r, i) => make(r, 1 + i, where));
  } catch (error) {
    if (error instanceof DecodeError || error instanceof InvalidValueError) return error;
    throw error;
  }
}

/** Decodes `bytes` both ways: the same objects (and envelope), or a decline. */
function agree(bytes: Buffer, dates: DatesAs = 'date'): 'fast' | 'declined' {
  const want = reference(bytes, dates);
  const got = new FastTableDecoder<FastRowPage>(plan, { rows: { dates } }).decode(bytes, where);
  if (want instanceof Error) {
    expect(got, `accepted a page the reference rejects: ${want.message}`).toBeUndefined();
    return 'declined';
  }
  if (got === undefined) return 'declined';
  expectSameRows(got.objects, want);
  const page = parseTablePage(bytes.toString('utf8'), where);
  expect([got.count, got.total, got.start, got.length]).toEqual([
    page.count,
    page.total,
    page.start,
    page.rows.length,
  ]);
  return 'fast';
}

/** A JSON string literal with some characters escaped as \uXXXX (what other serializers do). */
function escapedLiteral(s: string, mask: number): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    const code = s.charCodeAt(i);
    if ((mask >> (i % 31)) & 1 || code < 0x20 || ch === '"' || ch === '\\')
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

const anyText = fc.oneof(
  trickyText,
  fc.string({ unit: 'binary' }), // lone surrogates included
  fc.string({ unit: 'grapheme', minLength: 40, maxLength: 300 }), // past the four-byte steps and a page
  fc.constantFrom('\ud800', '\udc00', 'a\ud83d\ude00b', '\u0000', '\u001f', '\\', '/', '\b\f\t', 'x\ny\nz'),
);
const anyNumber = fc.oneof(
  fc.integer(),
  exactDouble(),
  fc.constantFrom(0, -0, 1e21, 1e-7, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 123456789012345.6, 0.1, 5e-324),
);
const wrongTyped = fc.oneof(
  anyText,
  anyNumber,
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('1', ' 1', '0x10', 'true', 'false', '20240230', '20240101T000000Z', '20240101T250000Z'),
);
/** Mostly well-typed values, sometimes anything. */
const cell = (typed: fc.Arbitrary<WireValue>) =>
  fc.oneof(
    { weight: 6, arbitrary: typed },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: wrongTyped },
  );
const row = fc.tuple(
  cell(fc.constantFrom('nasdaq:aapl', 'nyse:ge', 'xetra:sap', 'private:é', 'a\nb')),
  cell(
    fc.oneof(
      wireDate,
      wireDate.map((d) => `${d}T000000Z`),
    ),
  ),
  cell(fc.oneof(wireTimestamp, wireDate)),
  cell(anyNumber),
  cell(fc.oneof(fc.boolean(), fc.constantFrom(0, 1, 'true', 'false'))),
  cell(anyText),
  cell(anyText),
);

describe('FastTableDecoder, row objects', () => {
  it('makes the reference objects from fuzzed pages (strings, numbers, dates, nulls, wrong types)', () => {
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.array(row, { maxLength: 40 }),
        fc.constantFrom<DatesAs>('date', 'string'),
        (rows, dates) => {
          if (agree(Buffer.from(JSON.stringify(envelope(rows))), dates) === 'fast') accepted++;
        },
      ),
      { numRuns: 400 },
    );
    expect(accepted).toBeGreaterThan(50);
  });

  it('agrees on other spellings of the same JSON: \\u escapes, whitespace', () => {
    fc.assert(
      fc.property(
        fc.array(row, { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.constantFrom('', ' ', '\n  ', '\t\r\n'),
        (rows, mask, ws) => {
          const body = rows
            .map(
              (r) =>
                `[${ws}${r.map((v) => (typeof v === 'string' ? escapedLiteral(v, mask) : JSON.stringify(v))).join(`${ws},${ws}`)}${ws}]`,
            )
            .join(`,${ws}`);
          const text = JSON.stringify(envelope([])).replace('"rows":[]', `"rows":${ws}[${ws}${body}${ws}]`);
          agree(Buffer.from(text.replace('"count":0', `"count":${rows.length}`)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('declines garbled and truncated bodies without throwing or hanging', () => {
    const valid = JSON.stringify(
      envelope([['nasdaq:aapl', '20240101', '20240101T101010Z', 1.5, true, 'a\nb "q" \\ é', null]]),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: valid.length }),
        fc.integer({ min: 0, max: 255 }),
        fc.constantFrom('cut', 'replace', 'insert'),
        (at, byte, how) => {
          const b = Buffer.from(valid);
          if (how === 'cut') return void agree(b.subarray(0, at));
          const rest = how === 'replace' ? b.subarray(at + 1) : b.subarray(at);
          agree(Buffer.concat([b.subarray(0, at), Buffer.from([byte]), rest]));
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('keeps a lone surrogate escape exactly as JSON.parse does (the column decoder declined those pages)', () => {
    const bytes = Buffer.from(
      JSON.stringify(envelope([['\ud800', '20240101', null, 1, false, 'x\udc00y', 'a\\b']])),
    );
    expect(agree(bytes)).toBe('fast');
  });

  it('reads number spellings JSON.stringify never writes as JSON.parse does: -0, exponents, long fractions', () => {
    const page = (n: string) => {
      const text = JSON.stringify(envelope([['nyse:ge', null, null, 0, null, null, null]]));
      return Buffer.from(text.replace('null,0,null', `null,${n},null`));
    };
    for (const n of [
      '-0',
      '-0.0',
      '1E2',
      '1e-7',
      '-1.5e+300',
      '0.30000000000000004',
      '0.10000000000000001',
    ]) {
      expect(agree(page(n)), n).toBe('fast');
    }
    // Digits a double cannot keep: both paths refuse them (the reference with its InvalidValueError).
    for (const n of [
      '123456789.123456789',
      '9007199254740993.0',
      '9.007199254740993e15',
      '1e400',
      '1e-400',
    ]) {
      expect(agree(page(n)), n).toBe('declined');
      expect(reference(page(n), 'date'), n).toBeInstanceOf(InvalidValueError);
    }
  });
});

/** A result's rows both ways (`toArray()`), or the error each way throws. */
async function bothWays(
  result: QueryResult,
  options: { dates?: DatesAs; types?: Record<string, ColumnKind>; onInvalid?: 'error' | 'null' },
): Promise<[unknown[] | DqsError, unknown[] | DqsError]> {
  const read = (decoder: 'fast' | 'json') =>
    result.toArray({ ...options, pageSize: 700, decoder }).catch((error: unknown) => {
      if (error instanceof DqsError) return error;
      throw error;
    });
  return [await read('fast'), await read('json')];
}

describe('toArray() over HTTP: row objects straight from the bytes', () => {
  it.each(DATASETS.map((d) => d.id))('makes the reference objects of every column of %s', async (dataset) => {
    const { client } = await setup({ seed: 11, rowCap: 4000 });
    const result = await client.query(dataset, {});
    for (const dates of ['date', 'string'] as const) {
      const [fast, json] = await bothWays(result, { dates });
      expect(fast).toBeInstanceOf(Array);
      expect((fast as unknown[]).length).toBe(4000);
      expectSameRows(fast as unknown[], json as unknown[]);
    }
    // Every column read as text (dates as their wire text, numbers as their shortest spelling).
    const types = Object.fromEntries(result.fields.map((f) => [f.id, 'string' as const]));
    const [fast, json] = await bothWays(result, { types });
    expectSameRows(fast as unknown[], json as unknown[]);
    // And the row decoder really made these pages (it did not decline them all to the reference).
    const body = await result.download({ start: 1, limit: 700 });
    const parts: Buffer[] = [];
    for await (const chunk of body) parts.push(chunk as Buffer);
    const page = new FastTableDecoder<FastRowPage>(planColumns(result.fields), {
      rows: { dates: 'date' },
    }).decode(Buffer.concat(parts), where);
    expect(page?.length).toBe(700);
  });

  it('fails with the reference error (page, row, column) on invalid values, or nulls them', async () => {
    const { client } = await setup({ seed: 11, rowCap: 4000 });
    const result = await client.query('job_listings', {});
    // Text in a number column, and text read as dates: the row decoder declines, the reference reports.
    for (const types of [{ title: 'number' }, { category: 'date' }] as const) {
      const [fast, json] = await bothWays(result, { types });
      expect(fast).toBeInstanceOf(InvalidValueError);
      const picked = (e: InvalidValueError) => ({
        code: e.code,
        message: e.message,
        page: e.page,
        row: e.row,
        column: e.column,
        value: e.value,
      });
      expect(picked(fast as InvalidValueError)).toEqual(picked(json as InvalidValueError));
      const [nulled, nulledJson] = await bothWays(result, { types, onInvalid: 'null' });
      expectSameRows(nulled as unknown[], nulledJson as unknown[]);
    }
  });

  it('hands toArray() a page of rows per group, not a slice of 1,000', async () => {
    const { client } = await setup({ seed: 11, rowCap: 4000 });
    const result = await client.query('job_listings', {});
    const sizes: number[] = [];
    for await (const group of result.stream({ output: 'rows', pageSize: 2500 }).groups()) {
      sizes.push(group.length);
    }
    expect(sizes).toEqual([2500, 1500]);
  });
});
