/**
 * Corrupted inputs to every decoder end in a DecodeError or a valid result: never another exception
 * type, never a hang. (A valid result is rows of exactly one value per field.)
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import { DecodeError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import { decodeCsv, decodeXlsx, parseTablePage } from '../src/decode/index.js';
import { chunked, collect, field, writeCsv, writeXlsx } from './convert-fixtures.js';

const where = { start: 1, limit: 100 };
const fields = [
  field('ticker', 'string', 'ticker'),
  field('d', 'date'),
  field('n', 'number'),
  field('b', 'boolean'),
  field('s'),
];
const plan = planColumns(fields);
const ids = fields.map((f) => f.id);
const rows: WireValue[][] = Array.from({ length: 12 }, (_, i) => [
  `nasdaq:t${i % 3}`,
  i % 4 ? `2024010${1 + (i % 9)}` : null,
  i % 5 ? i * 1.25 : null,
  i % 2 === 0,
  i % 3 ? `text "${i}", é😀\r\nmore` : '',
]);

/** Runs a decoder to the end; anything but a DecodeError fails the property. */
async function outcome(run: () => Promise<WireValue[][]>): Promise<WireValue[][] | DecodeError> {
  try {
    const out = await run();
    for (const row of out) expect(row).toHaveLength(fields.length);
    return out;
  } catch (error) {
    if (error instanceof DecodeError) return error;
    throw error;
  }
}

/** Decoded rows must also be safe for the builder: a batch, or an InvalidValueError. */
function buildOrInvalid(out: WireValue[][] | DecodeError): void {
  if (out instanceof DecodeError) return;
  try {
    new RecordBatchBuilder(plan).appendRows(out, 1, where);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidValueError);
  }
}

const mutation = fc.record({
  at: fc.nat(),
  op: fc.constantFrom('insert', 'delete', 'truncate', 'replace'),
  text: fc.constantFrom(',', '"', '\r\n', '\n', '\r', '""', 'x', ',,', '"a"b', '\u0000', '\uFEFF', 'é'),
});

function mutate(text: string, mutations: readonly { at: number; op: string; text: string }[]): string {
  let s = text;
  for (const m of mutations) {
    const at = s.length === 0 ? 0 : m.at % s.length;
    if (m.op === 'insert') s = s.slice(0, at) + m.text + s.slice(at);
    else if (m.op === 'delete') s = s.slice(0, at) + s.slice(at + 1 + (m.at % 3));
    else if (m.op === 'truncate') s = s.slice(0, at);
    else s = s.slice(0, at) + m.text + s.slice(at + m.text.length);
  }
  return s;
}

describe('fuzz: table JSON', () => {
  const valid = JSON.stringify({
    id: 'q',
    state: 'complete',
    total: 12,
    count: 12,
    start: 1,
    limit: 100,
    rows,
    fields,
  });

  it('random JSON values and random text', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.json(),
          fc.string(),
          fc.jsonValue().map((v) => JSON.stringify({ ...JSON.parse(valid), rows: v })),
        ),
        (text) => {
          try {
            const page = parseTablePage(text, where);
            expect(Array.isArray(page.rows) && Array.isArray(page.fields)).toBe(true);
          } catch (error) {
            expect(error).toBeInstanceOf(DecodeError);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('mutated and truncated pages', () => {
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), (mutations) => {
        try {
          parseTablePage(mutate(valid, mutations), where);
        } catch (error) {
          expect(error).toBeInstanceOf(DecodeError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('fuzz: CSV', () => {
  const valid = writeCsv(ids, rows);

  it.each(['core', 'public'] as const)('ragged, mutated and truncated CSV (%s engine)', async (engine) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(mutation, { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 64 }),
        async (mutations, cut) => {
          const out = await outcome(() =>
            collect(decodeCsv(chunked(mutate(valid, mutations), [cut]), plan, where, { engine })),
          );
          buildOrInvalid(out);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('random bytes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300 }),
        fc.integer({ min: 1, max: 64 }),
        async (bytes, cut) => {
          const body = Buffer.concat([Buffer.from(`${ids.join(',')}\r\n`), Buffer.from(bytes)]);
          await outcome(() => collect(decodeCsv(chunked(body, [cut]), plan, where)));
          await outcome(() => collect(decodeCsv(chunked(Buffer.from(bytes), [cut]), plan, where)));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('fuzz: XLSX', () => {
  it('random bytes, with and without a zip signature', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 400 }), fc.boolean(), async (bytes, zipLike) => {
        const body = zipLike
          ? Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.from(bytes)])
          : Buffer.from(bytes);
        const out = await outcome(() =>
          collect(decodeXlsx(chunked(body, [97]), plan, where, { stallMs: 200 })),
        );
        expect(out).toBeInstanceOf(DecodeError);
      }),
      { numRuns: 60 },
    );
  });

  it('truncated and corrupted workbooks', async () => {
    const valid = await writeXlsx(ids, rows);
    await fc.assert(
      fc.asyncProperty(
        fc.nat(valid.length - 1),
        fc.array(fc.record({ at: fc.nat(valid.length - 1), xor: fc.integer({ min: 1, max: 255 }) }), {
          maxLength: 3,
        }),
        async (length, flips) => {
          const body = Buffer.from(valid.subarray(0, flips.length === 0 ? length : valid.length));
          for (const f of flips) body[f.at % body.length]! ^= f.xor;
          const out = await outcome(() =>
            collect(decodeXlsx(chunked(body, [1024]), plan, where, { stallMs: 200 })),
          );
          buildOrInvalid(out);
        },
      ),
      { numRuns: 40 },
    );
  }, 30_000);
});
