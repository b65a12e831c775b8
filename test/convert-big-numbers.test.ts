/**
 * Integers past a double's exact range (2^53 + 1 = 9007199254740993) were rounded silently: `Number()`
 * in the table-JSON fast decoder, `JSON.parse` on its reference path and `+s` for CSV text all read it
 * as 9007199254740992. Now: a typed error naming page, row and column by default, and the exact value
 * with `bigNumbers: 'bigint'` or `'string'`, in every wire format, end to end against the emulator.
 */
import { DataType, type Table } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { exactIntegerCells } from '../src/decode/xlsx.js';
import { InvalidValueError } from '../src/index.js';
import { expectRejects, setup } from './helpers.js';

const BODY = { tickers: ['nasdaq:aapl'] };
const FIRST = 9007199254740993n; // 2^53 + 1: result row 1 (the emulator's `bigIntegers`)
const FORMATS = ['json', 'csv', 'xlsx'] as const;
const DECODERS = ['fast', 'json'] as const;

describe('integers outside ±2^53', () => {
  for (const format of FORMATS) {
    for (const decoder of format === 'xlsx' ? (['json'] as const) : DECODERS) {
      it(`${format} (${decoder} decoder): InvalidValueError naming page, row and column by default`, async () => {
        const { client } = await setup({ bigIntegers: true });
        const result = await client.query('web_traffic', BODY);
        for (const output of ['arrow', 'rows'] as const) {
          const err = await expectRejects<InvalidValueError>(
            output === 'arrow'
              ? result.toTable({ format, decoder, pageSize: 500 })
              : result.toArray({ format, decoder, pageSize: 500 }),
            () => {},
          );
          expect(err).toBeInstanceOf(InvalidValueError);
          expect(err.code).toBe('DQS_INVALID_VALUE');
          expect(err.row).toBe(1);
          expect(err.column).toBe('visits');
          expect(err.page).toMatchObject({ start: 1, limit: 500 });
          expect(err.value).toBe('9007199254740993');
          expect(err.message).toContain("bigNumbers: 'bigint' or 'string'");
        }
      });
    }

    it(`${format}: bigNumbers 'bigint' gives the exact value (Int64 column, bigint rows)`, async () => {
      // job_listings: its number columns (salaries) hold integers only, as 'bigint' requires.
      const { client } = await setup({ bigIntegers: true });
      const result = await client.query('job_listings', BODY);
      const table: Table = await result.toTable({ format, bigNumbers: 'bigint' });
      const salary = table.getChild('salary_min')!;
      expect(DataType.isInt(salary.type)).toBe(true);
      expect(salary.get(0)).toBe(FIRST);
      expect(salary.get(1000)).toBe(FIRST + 1000n);
      const rows = (await result.toArray({ format, bigNumbers: 'bigint' })) as Record<string, unknown>[];
      expect(rows[0]!.salary_min).toBe(FIRST);
      expect(rows[1000]!.salary_min).toBe(FIRST + 1000n);
      expect(rows.map((r) => r.salary_min)).toEqual([...salary]);
      expect(rows.map((r) => r.salary_max)).toEqual([...table.getChild('salary_max')!]);
    });

    it(`${format}: bigNumbers 'string' gives the exact digits (Utf8 column, string rows)`, async () => {
      const { client } = await setup({ bigIntegers: true });
      const result = await client.query('web_traffic', BODY);
      const table: Table = await result.toTable({ format, bigNumbers: 'string' });
      expect(DataType.isUtf8(table.getChild('visits')!.type)).toBe(true);
      expect(table.getChild('visits')!.get(0)).toBe('9007199254740993');
      // Fractions keep their shortest exact spelling, whatever the wire format wrote.
      const bounce = table.getChild('bounce_rate')!.get(1) as string;
      expect(String(Number(bounce))).toBe(bounce);
      const rows = (await result.toArray({ format, bigNumbers: 'string' })) as Record<string, unknown>[];
      expect(rows[0]!.visits).toBe('9007199254740993');
      expect(rows.map((r) => r.bounce_rate)).toEqual([...table.getChild('bounce_rate')!]);
    });
  }

  it('the three formats agree value for value with bigNumbers: string', async () => {
    const { client } = await setup({ bigIntegers: true });
    const result = await client.query('web_traffic', BODY);
    const [json, csv, xlsx] = await Promise.all(
      FORMATS.map((format) => result.toArray({ format, bigNumbers: 'string' })),
    );
    expect(csv).toEqual(json);
    expect(xlsx).toEqual(json);
  });

  it("bigNumbers: 'bigint' rejects a fraction as an invalid value, naming it", async () => {
    const { client } = await setup();
    const result = await client.query('web_traffic', BODY);
    const err = await expectRejects<InvalidValueError>(result.toTable({ bigNumbers: 'bigint' }), () => {});
    expect(err).toBeInstanceOf(InvalidValueError);
    expect(err.column).toBe('bounce_rate');
    expect(err.message).toContain('an integer within the 64-bit range');
  });

  it('without big integers, the default output is unchanged (Float64, numbers)', async () => {
    const { client } = await setup();
    const table = await (await client.query('web_traffic', BODY)).toTable();
    expect(DataType.isFloat(table.getChild('visits')!.type)).toBe(true);
  });
});

describe('exactIntegerCells (XLSX worksheet text)', () => {
  async function rewrite(chunks: string[]): Promise<string> {
    async function* source() {
      yield* chunks;
    }
    let out = '';
    for await (const text of exactIntegerCells(source())) out += text;
    return out;
  }

  it('makes a numeric cell past 2^53 a text cell, even split between chunks; leaves the rest as is', async () => {
    const xml =
      '<row r="2"><c r="A2"><v>9007199254740993</v></c><c r="B2"><v>9007199254740991</v></c>' +
      '<c r="C2" t="n"><v>-12345678901234567890</v></c><c r="D2" t="s"><v>12345678901234567890</v></c></row>';
    const expected =
      '<row r="2"><c r="A2" t="str"><v>9007199254740993</v></c><c r="B2"><v>9007199254740991</v></c>' +
      '<c r="C2" t="str"><v>-12345678901234567890</v></c><c r="D2" t="s"><v>12345678901234567890</v></c></row>';
    expect(await rewrite([xml])).toBe(expected);
    for (let cut = 1; cut < xml.length; cut += 7) {
      expect(await rewrite([xml.slice(0, cut), xml.slice(cut)])).toBe(expected);
    }
  });
});
