/**
 * decode/byte-dictionary.ts: the page-local dictionary both byte decoders (table JSON, CSV) key by UTF-8
 * bytes. Ids are dense and first-seen, equal bytes get one id whatever buffer they sit in, and `entries()`
 * gives the strings back in id order, through growth and rehashing. The decoders' agreement with the
 * reference on dictionary columns is tested with them (decode-table-json-fast, decode-csv-columns); here,
 * that the two give the same entries for the same values.
 */
import { describe, expect, it } from 'vitest';
import { planColumns } from '../src/convert/index.js';
import type { FieldDescriptor } from '../src/core/wire.js';
import { ByteDictionary } from '../src/decode/byte-dictionary.js';
import { FastCsvDecoder } from '../src/decode/csv-columns.js';
import { FastTableDecoder } from '../src/decode/table-json-fast.js';

function idOf(dict: ByteDictionary, text: string, pad = 0): number {
  // Somewhere inside a larger buffer, as a decoder sees it in a page body.
  const bytes = Buffer.concat([Buffer.alloc(pad, 0x2c), Buffer.from(text), Buffer.alloc(3, 0x22)]);
  return dict.id(bytes, pad, pad + Buffer.byteLength(text));
}

describe('ByteDictionary', () => {
  // A regression: the empty string got a new id each time (its hash was never made an int32).
  it('dense first-seen ids; equal bytes one id wherever they sit (the empty string too); entries in id order', () => {
    const dict = new ByteDictionary();
    expect(idOf(dict, 'nasdaq:aapl')).toBe(0);
    expect(idOf(dict, '')).toBe(1);
    expect(idOf(dict, 'Zürich – 東京 😀')).toBe(2);
    expect(idOf(dict, 'nasdaq:aapl', 17)).toBe(0);
    expect(idOf(dict, 'nasdaq:aap')).toBe(3); // a prefix is another value
    expect(idOf(dict, '', 5)).toBe(1);
    expect(dict.entries()).toEqual(['nasdaq:aapl', '', 'Zürich – 東京 😀', 'nasdaq:aap']);
  });

  it('keeps every id through growth and rehashing (5,000 values, long and short)', () => {
    const dict = new ByteDictionary();
    const values = Array.from({ length: 5000 }, (_, k) => (k % 7 === 0 ? `v${k}-`.repeat(40) : `v${k}`));
    values.forEach((v, k) => expect(idOf(dict, v, k % 5)).toBe(k));
    values.forEach((v, k) => expect(idOf(dict, v)).toBe(k));
    expect(dict.entries()).toEqual(values);
  });
});

describe('one dictionary for both byte decoders', () => {
  const fields: FieldDescriptor[] = [{ id: 'ticker', type: 'string', format: 'ticker' } as FieldDescriptor];
  const plan = planColumns(fields);
  const values = ['nyse:ibm', '', 'nyse:ibm', 'Zürich:東京', null, 'a,"b"', '', 'nyse:ibm'];

  it('CSV and table JSON give the same ids and entries for the same values', () => {
    const csv = `ticker\n${values.map((v) => (v === null ? '' : `"${v.replaceAll('"', '""')}"`)).join('\n')}\n`;
    const json = JSON.stringify({
      total: values.length,
      count: values.length,
      start: 1,
      rows: values.map((v) => [v]),
      fields,
    });
    const where = { start: 1, limit: values.length };
    const fromCsv = new FastCsvDecoder(plan).decode(Buffer.from(csv), where);
    const fromJson = new FastTableDecoder(plan).decode(Buffer.from(json), where);
    expect(fromCsv?.columns[0]).toEqual(fromJson?.columns[0]);
    const column = fromCsv!.columns[0]!;
    expect(column.kind).toBe('dictionary');
    if (column.kind !== 'dictionary') return;
    expect(column.entries).toEqual(['nyse:ibm', '', 'Zürich:東京', 'a,"b"']);
    expect([...column.ids.subarray(0, values.length)]).toEqual([0, 1, 0, 2, -1, 3, 1, 0]);
  });
});
