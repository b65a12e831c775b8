/** Shared fixtures of the convert/decode tests: descriptors, wire writers per docs/wire-formats.md. */

import { PassThrough } from 'node:stream';
import ExcelJS from 'exceljs';
import fc from 'fast-check';
import type { FieldDescriptor, WireValue } from '../src/core/wire.js';
import { escapeXlsxText } from '../src/emulator/formats/xlsx.js';

export function field(id: string, type = 'string', format: string | null = null): FieldDescriptor {
  return {
    id,
    display_name: `Name of ${id}`,
    summary: `About ${id}`,
    type,
    format,
    metric: false,
    length: 0,
    options: [],
  };
}

/** Short column ids for `mixedFields()`, as the converter suites name them. */
export const SHORT_IDS = ['ticker', 'd', 'ts', 'n', 'b', 's'] as const;

/**
 * One column of every kind, in this order: a ticker dictionary, a date, a datetime, a number, a boolean,
 * a string; named `ids`.
 */
export function mixedFields(
  ids: readonly string[] = ['ticker', 'posted', 'seen', 'n', 'ok', 'text'],
): FieldDescriptor[] {
  const [ticker, date, datetime, number, boolean, text] = ids;
  return [
    field(ticker!, 'string', 'ticker'),
    field(date!, 'date'),
    field(datetime!, 'datetime'),
    field(number!, 'number'),
    field(boolean!, 'boolean'),
    field(text!, 'string'),
  ];
}

/** The emulator's CSV: RFC 4180, CRLF, `""` for the empty string, nothing for null, `String(n)`. */
export function writeCsv(ids: readonly string[], rows: readonly (readonly WireValue[])[]): string {
  const cell = (v: WireValue): string => {
    if (v === null) return '';
    const s = String(v);
    return s === '' || /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  let out = `${ids.map(cell).join(',')}\r\n`;
  for (const row of rows) out += `${row.map(cell).join(',')}\r\n`;
  return out;
}

/** The emulator's XLSX: exceljs streaming writer, inline strings, null = no cell, text `_xHHHH_`-escaped. */
export async function writeXlsx(
  ids: readonly string[],
  rows: readonly (readonly WireValue[])[],
): Promise<Buffer> {
  const pass = new PassThrough();
  const parts: Buffer[] = [];
  pass.on('data', (c: Buffer) => parts.push(c));
  const book = new ExcelJS.stream.xlsx.WorkbookWriter({
    stream: pass,
    useSharedStrings: false,
    useStyles: false,
  });
  const sheet = book.addWorksheet('results');
  sheet.addRow([...ids]).commit();
  for (const row of rows) {
    sheet
      .addRow(row.map((v) => (v === null ? undefined : typeof v === 'string' ? escapeXlsxText(v) : v)))
      .commit();
  }
  sheet.commit();
  await book.commit();
  return Buffer.concat(parts);
}

/** A body delivered in the given chunk sizes (cycled), as an async iterable. */
export async function* chunked(
  body: Buffer | string,
  sizes: readonly number[] = [65536],
): AsyncGenerator<Buffer> {
  const buf = typeof body === 'string' ? Buffer.from(body) : body;
  let at = 0;
  let k = 0;
  while (at < buf.length) {
    const n = Math.max(1, sizes[k++ % sizes.length]!);
    yield buf.subarray(at, at + n);
    at += n;
  }
}

export async function collect<T>(chunks: AsyncIterable<T[]>): Promise<T[]> {
  const out: T[] = [];
  for await (const chunk of chunks) out.push(...chunk);
  return out;
}

/** Runs `fn` and returns what it threw (or fails the test if it did not throw). */
export async function caught(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

/** Text with the characters that break naive writers: quotes, commas, CR/LF, non-ASCII, emoji. */
export const trickyText = fc.oneof(
  fc.string({ unit: 'grapheme' }),
  fc.constantFrom(
    '',
    '""',
    '"',
    ',',
    '\r\n',
    '\n',
    '\r',
    'a,b',
    ' lead',
    'trail ',
    'é',
    '😀',
    'null',
    'NaN',
    '0x10',
  ),
  fc
    .array(fc.constantFrom('a', '"', ',', '\r', '\n', ' ', 'é', '😀', '\u2028'), { maxLength: 8 })
    .map((a) => a.join('')),
);

/** YYYYMMDD of a real date, and a timestamp of that day. */
export const wireDate = fc
  .date({ min: new Date(Date.UTC(1900, 0, 1)), max: new Date(Date.UTC(2100, 11, 31)), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10).replaceAll('-', ''));
export const wireTimestamp = fc
  .date({ min: new Date(Date.UTC(1900, 0, 1)), max: new Date(Date.UTC(2100, 11, 31)), noInvalidDate: true })
  .map((d) => `${d.toISOString().slice(0, 19).replaceAll('-', '').replaceAll(':', '')}Z`);

/**
 * Any finite double but those written as an integer literal past ±2^53 (`9007199254740994`, or
 * `1152921504606847000` for 2^60): such literals are refused unless `bigNumbers` asks for them exactly.
 */
export function exactDouble(): fc.Arbitrary<number> {
  return fc
    .double({ noNaN: true, noDefaultInfinity: true })
    .filter((x) => !(Number.isInteger(x) && Math.abs(x) > 2 ** 53 && Math.abs(x) < 1e21));
}
