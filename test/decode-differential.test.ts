/**
 * The fast path against its oracle, the reference (`JSON.parse` + the converters), for every sink of the
 * one page reader: columns for Arrow (UTF-8 strings), columns for row objects (exact strings) and row
 * objects straight from the bytes, with dates as `Date`s or text. Pages come in every chunking (a byte at
 * a time, random splits, whole), at every position (the query's first page, whose envelope is read from
 * its bytes; a later page), with numbers in every spelling (`.0`, exponents, leading zeros in exponents,
 * past 2^53, `1e400`), lone surrogates, invalid UTF-8, empty strings beside nulls, and members sent twice.
 * The contract: the reference's result, or a decline (and then the reference's error or result).
 */

import { isDeepStrictEqual } from 'node:util';
import { Table, tableToIPC } from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  makeColumnRowFactory,
  makeRowFactory,
  planColumns,
  RecordBatchBuilder,
} from '../src/convert/index.js';
import { keepsDigits } from '../src/convert/numbers.js';
import type { DatesAs } from '../src/convert/row-factory.js';
import { DecodeError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { FORMATS, parseTablePage } from '../src/decode/index.js';
import { allSlices } from '../src/decode/slices.js';
import { envelopeOf } from '../src/decode/table-json.js';
import {
  type FastRowPage,
  FastTableDecoder,
  type FastTablePage,
  readTableEnvelope,
} from '../src/decode/table-json-fast.js';
import { field, wireDate, wireTimestamp } from './convert-fixtures.js';

const where = { start: 1, limit: 50 };
const fields = [
  field('ticker', 'string', 'ticker'),
  field('d', 'date'),
  field('t', 'datetime'),
  field('n', 'number'),
  field('b', 'boolean'),
  field('s'),
];
const plan = planColumns(fields);

/** A number as JSON text, in one of the spellings of its value that JSON allows. */
const respelled = fc
  .tuple(
    fc.oneof(
      { weight: 4, arbitrary: fc.integer() },
      { weight: 4, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
      { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }) },
    ),
    fc.nat(5),
    fc.integer({ min: -3, max: 3 }),
  )
  .map(([v, how, shift]) => {
    const text = typeof v === 'bigint' ? v.toString() : JSON.stringify(v);
    const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(text)!;
    const [, sign, whole, fraction = '', exponent = '0'] = m;
    const digits = `${whole}${fraction}`;
    const scale = Number(exponent) - fraction.length;
    switch (how) {
      case 0:
        return text;
      case 1: // `.0`, or more zeros after the fraction
        return fraction || exponent !== '0' ? text : `${text}.000`;
      case 2: // digits and an exponent with leading zeros
        return `${sign}${digits}e${scale < 0 ? '-' : '+'}00${Math.abs(scale)}`;
      case 3: // one digit before the point
        return `${sign}${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ''}E${scale + digits.length - 1}`;
      case 4: // the point moved by `shift` places, the exponent making up for it
        return `${sign}${digits}${'0'.repeat(Math.max(0, shift))}e${scale - Math.max(0, shift)}`;
      default:
        return `${sign}${digits.replace(/^0+(?=\d)/, '')}e${scale}`;
    }
  })
  .filter((s) => /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(s));
const numberText = fc.oneof(
  { weight: 12, arbitrary: respelled },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '1e400',
      '-1e400',
      '1e-400',
      '0e999',
      '-0',
      '-0.0',
      '9007199254740992',
      '9007199254740993',
      '9007199254740993.0',
      '9.007199254740993e15',
      '90071992547409930e-1',
      '12345678901234567890.5',
      '0.1000000000000000055511151231257827',
      '0.10000000000000001',
      '1E+02',
      '7945440257177955000e-4',
    ),
  },
);
/** A JSON string literal of `s`, some characters as `\uXXXX` escapes (as other serializers write). */
const literal = (s: string, mask: number) => {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const code = s.charCodeAt(i);
    if ((mask >> (i % 31)) & 1 || code < 0x20 || s[i] === '"' || s[i] === '\\')
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += s[i];
  }
  return `${out}"`;
};
const text = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }), // lone surrogates among them
  fc.constantFrom('', '\ud800', 'a\udc00b', '\u0000', 'null', '1', 'true', '20240101'),
);
const stringText = fc.tuple(text, fc.nat()).map(([s, mask]) => literal(s, mask % 3 === 0 ? mask : 0));
/** A cell of any kind as JSON text: mostly the column's own kind, sometimes anything. */
const any = fc.oneof(stringText, numberText, fc.constantFrom('null', 'true', 'false'));
const cell = (own: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 40, arbitrary: own },
    { weight: 4, arbitrary: fc.constant('null') },
    { weight: 1, arbitrary: any },
  );
const row = fc.tuple(
  cell(fc.constantFrom('"nasdaq:aapl"', '"nyse:ge"', '""', '"\\ud83d\\ude00"')),
  cell(wireDate.map((d) => `"${d}"`)),
  cell(fc.oneof(wireTimestamp, wireDate).map((d) => `"${d}"`)),
  cell(numberText),
  cell(fc.constantFrom('true', 'false', '1', '0', '"true"')),
  cell(stringText),
);

/** One case in eight a value, else null. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, { weight: 1, arbitrary });

const MEMBERS = ['id', 'state', 'total', 'count', 'start', 'limit', 'rows', 'fields', 'last_date_updated'];

/** A page's text: its rows, members in some order, white space, and maybe one member sent twice. */
const pageText = fc
  .record({
    rows: fc.array(row, { maxLength: 6 }),
    ws: fc.constantFrom('', ' ', '\n\t '),
    order: fc.array(fc.nat(), { minLength: 9, maxLength: 9 }),
    twice: sometimes(fc.constantFrom(...MEMBERS)),
  })
  .map(({ rows, ws, order, twice }) => {
    const value: Record<string, string> = {
      id: JSON.stringify('a'.repeat(64)),
      state: '"complete"',
      total: '5000',
      count: String(rows.length),
      start: '1',
      limit: '50',
      rows: `[${ws}${rows.map((r) => `[${r.join(`${ws},`)}]`).join(`,${ws}`)}${ws}]`,
      fields: JSON.stringify(fields),
      last_date_updated: '"2024-12-31T22:15:00Z"',
    };
    const names = [...MEMBERS].sort((a, b) => order[MEMBERS.indexOf(a)]! - order[MEMBERS.indexOf(b)]!);
    if (twice) names.splice(1 + (order[0]! % names.length), 0, twice);
    return `${ws}{${names.map((k) => `${ws}"${k}"${ws}:${ws}${value[k]}`).join(',')}${ws}}`;
  });

/** The page's bytes: as written, or with one byte that cannot be UTF-8 put into a string. */
const pageBytes = fc.tuple(pageText, sometimes(fc.nat())).map(([t, bad]) => {
  const bytes = Buffer.from(t);
  if (bad === null) return bytes;
  const quotes = [...t.matchAll(/"[^"\\]+"/g)];
  const hit = quotes[bad % Math.max(1, quotes.length)];
  if (hit === undefined) return bytes;
  const at = Buffer.byteLength(t.slice(0, hit.index! + 1));
  return Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff]), bytes.subarray(at)]);
});

interface Expected {
  readonly ipc: Buffer;
  readonly objects: Record<DatesAs, unknown[]>;
  readonly members: number[];
}

/** The reference: the format's reference decoder (UTF-8, fields, members), then the converters; or its error. */
async function reference(bytes: Buffer): Promise<Expected | Error> {
  try {
    async function* once() {
      yield bytes;
    }
    const { part, envelope } = await FORMATS.json.reference(once(), plan, where, { invalidUtf8: 'error' });
    const rows = part as WireValue[][];
    const builder = new RecordBatchBuilder(plan);
    builder.appendRows(rows, 1, where);
    const objects = (dates: DatesAs) => {
      const make = makeRowFactory(plan, { dates });
      return rows.map((r, i) => make(r, 1 + i, where));
    };
    return {
      ipc: Buffer.from(tableToIPC(new Table([builder.flush()]), 'stream')),
      objects: { date: objects('date'), string: objects('string') },
      members: [envelope!.count, envelope!.total, envelope!.start],
    };
  } catch (error) {
    if (error instanceof DecodeError || error instanceof InvalidValueError) return error;
    throw error;
  }
}

/** `bytes` in chunks of `sizes` (cycled) through a fresh decoder's stream. */
function streamed<P extends FastTablePage | FastRowPage>(
  decoder: FastTableDecoder<P>,
  bytes: Buffer,
  sizes: readonly number[],
): P | undefined {
  const stream = decoder.stream(where, bytes.length);
  for (let at = 0, k = 0; at < bytes.length; k++) {
    const n = sizes[k % sizes.length]!;
    stream.push(bytes.subarray(at, at + n));
    at += n;
  }
  return allSlices(stream.finish());
}

const chunking = fc.oneof(
  fc.constant([1]),
  fc.array(fc.integer({ min: 1, max: 97 }), { minLength: 1, maxLength: 6 }),
  fc.constant([1 << 20]),
);

describe('the fast path equals the reference or declines, for every sink, chunking and page position', () => {
  it('on generated pages (numbers in every spelling, surrogates, bad UTF-8, empty vs null, members twice)', async () => {
    const seen = { fast: 0, declined: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(pageBytes, chunking, async (bytes, sizes) => {
        const want = await reference(bytes);
        const columns = streamed(new FastTableDecoder(plan), bytes, sizes);
        const exact = streamed(new FastTableDecoder(plan, { strings: 'exact' }), bytes, sizes);
        const rows = (dates: DatesAs) =>
          streamed<FastRowPage>(new FastTableDecoder<FastRowPage>(plan, { rows: { dates } }), bytes, sizes);
        const made = { date: rows('date'), string: rows('string') };
        if (want instanceof Error) {
          seen.refused++;
          for (const got of [columns, exact, made.date, made.string]) {
            expect(got, `accepted what the reference refuses: ${want.message}`).toBeUndefined();
          }
          return;
        }
        if (columns === undefined) seen.declined++;
        else {
          seen.fast++;
          const builder = new RecordBatchBuilder(plan);
          builder.appendDecoded(columns, 0, columns.length);
          expect(Buffer.from(tableToIPC(new Table([builder.flush()]), 'stream')).equals(want.ipc)).toBe(true);
          expect([columns.count, columns.total, columns.start]).toEqual(want.members);
        }
        if (exact !== undefined) {
          const objects: unknown[] = [];
          makeColumnRowFactory(plan)(exact, 0, exact.length, objects);
          expect(isDeepStrictEqual(objects, want.objects.date)).toBe(true);
        }
        for (const dates of ['date', 'string'] as const) {
          const got = made[dates];
          if (got === undefined) continue;
          expect(isDeepStrictEqual(got.objects, want.objects[dates]), dates).toBe(true);
          expect([got.count, got.total, got.start]).toEqual(want.members);
        }
      }),
      { numRuns: 400 },
    );
    // Most generated pages are ordinary: the fast path must really decode them, not decline them all.
    expect(seen.fast).toBeGreaterThan(seen.declined);
    expect(seen.refused).toBeGreaterThan(20);
  }, 120_000);

  it("reads a first page's envelope as the reference does, or declines (members twice always)", () => {
    fc.assert(
      fc.property(pageText, (t) => {
        const bytes = Buffer.from(t);
        const got = readTableEnvelope(bytes);
        let want: ReturnType<typeof envelopeOf> | undefined;
        try {
          want = envelopeOf(parseTablePage(t, where));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
        }
        if (got === undefined) return;
        // Rows are not read with the envelope: what is wrong inside them is the stream's to find.
        expect(want, 'read an envelope the reference refuses').toBeDefined();
        const { rowCount, ...read } = got;
        const { rowCount: _counted, ...expected } = want!;
        expect(read).toEqual(expected);
        expect(rowCount).toBe(got.count);
      }),
      { numRuns: 400 },
    );
  });
});

describe('the number rule', () => {
  /**
   * An oracle of its own: `text`'s exact value as digits, and the double's exact value (BigInt
   * arithmetic) rounded half up to as many significant digits as `text` carries.
   */
  function keepsEveryDigit(text: string): boolean {
    const m = /^(-?)(\d+)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text)!;
    const fraction = (m[3] ?? '').replace(/0+$/, '');
    const carried = `${m[2]}${fraction}`.replace(/^0+/, '');
    const d = Math.abs(Number(text));
    if (carried === '') return d === 0;
    if (d === 0 || !Number.isFinite(d)) return false;
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, d);
    const bits = view.getBigUint64(0);
    const e = Number((bits >> 52n) & 0x7ffn);
    const mantissa = e === 0 ? bits & ((1n << 52n) - 1n) : (bits & ((1n << 52n) - 1n)) | (1n << 52n);
    const k = (e === 0 ? 1 : e) - 1075;
    // The double as an integer numerator over 10^places.
    const places = k < 0 ? -k : 0;
    const numerator = k < 0 ? mantissa * 5n ** BigInt(-k) : mantissa << BigInt(k);
    // Both as integer numerators over 10^scale, the finer of the two expansions: the text's digits may
    // reach below the double's last place (then they end in zeros, "7945440257177955000e-4", or differ).
    const exponent = Number(m[4] ?? 0) - fraction.length;
    const scale = Math.max(places, -exponent);
    const doubleNumerator = numerator * 10n ** BigInt(scale - places);
    const textNumerator = BigInt(carried) * 10n ** BigInt(exponent + scale);
    // Round the double to `carried.length` significant digits, half up.
    const digits = doubleNumerator.toString();
    const drop = digits.length - carried.length;
    if (drop <= 0) return textNumerator === doubleNumerator;
    const unit = 10n ** BigInt(drop);
    const rounded = ((doubleNumerator + unit / 2n) / unit) * unit;
    return rounded === textNumerator;
  }

  it('keeps a literal exactly when the double, rounded to its digits, gives it back (any spelling)', () => {
    fc.assert(
      fc.property(numberText, (t) => {
        expect(keepsDigits(t, Number(t)), t).toBe(keepsEveryDigit(t));
      }),
      { numRuns: Number(process.env.DQS_NUMBER_RUNS ?? 2000) },
    );
    for (const [t, kept] of [
      ['9007199254740992', true],
      ['9007199254740993', false],
      ['9007199254740993.0', false],
      ['9.007199254740993e15', false],
      ['90071992547409930e-1', false],
      ['9007199254740994', true],
      ['12345678901234567000', false],
      ['1.2345678901234567e19', true],
      ['0.1', true],
      ['0.10000000000000001', true],
      ['0.30000000000000005', false],
      ['1e400', false],
      ['1e-400', false],
      ['5e-324', true],
      ['1e0005', true],
    ] as const) {
      expect(keepsDigits(t, Number(t)), t).toBe(kept);
    }
  });
});
