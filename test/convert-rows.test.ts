import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ColumnKind, makeRowFactory, planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import { DecodeError, InvalidValueError } from '../src/core/errors.js';
import type { WireValue } from '../src/core/wire.js';
import {
  caught,
  field,
  mixedFields,
  SHORT_IDS,
  trickyText,
  wireDate,
  wireTimestamp,
} from './convert-fixtures.js';

const mixed = planColumns(mixedFields(SHORT_IDS));

describe('makeRowFactory', () => {
  it('builds objects keyed by column id with typed values', () => {
    const toRow = makeRowFactory(mixed);
    const row = toRow(['nasdaq:aapl', '20240229', '20240229T123456Z', '12', 'true', 5], 1);
    expect(row).toEqual({
      ticker: 'nasdaq:aapl',
      d: new Date(Date.UTC(2024, 1, 29)),
      ts: new Date(Date.UTC(2024, 1, 29, 12, 34, 56)),
      n: 12,
      b: true,
      s: '5',
    });
    expect(Object.keys(row)).toEqual(['ticker', 'd', 'ts', 'n', 'b', 's']);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(toRow([null, null, null, null, null, null], 2)).toEqual({
      ticker: null,
      d: null,
      ts: null,
      n: null,
      b: null,
      s: null,
    });
  });

  it('gives each row its own Date objects', () => {
    const toRow = makeRowFactory(mixed);
    const a = toRow(['x', '20240101', null, null, null, null], 1);
    const b = toRow(['x', '20240101', null, null, null, null], 2);
    expect(a.d).not.toBe(b.d);
  });

  it('reports invalid values like the builder, or nulls them', async () => {
    const page = { start: 41, limit: 10 };
    const error = await caught(() =>
      makeRowFactory(mixed)(['x', '20230229', null, null, null, null], 45, page),
    );
    expect(error).toBeInstanceOf(InvalidValueError);
    expect(error).toMatchObject({
      row: 45,
      column: 'd',
      page,
      value: '20230229',
      expected: 'a date YYYYMMDD',
    });
    const lenient = makeRowFactory(mixed, { onInvalid: 'null' });
    expect(lenient([{} as never, 'x', 'y', 'z', 'maybe', [] as never], 1)).toEqual({
      ticker: null,
      d: null,
      ts: null,
      n: null,
      b: null,
      s: null,
    });
  });

  it('rejects rows with the wrong length or shape', async () => {
    const toRow = makeRowFactory(mixed);
    const error = await caught(() => toRow(['x'], 7, { start: 1, limit: 10 }));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ row: 7, page: { start: 1, limit: 10 } });
    expect(() => toRow('abc' as never, 1)).toThrow(DecodeError);
  });

  it('handles column ids that are not identifiers, or are dangerous as keys', () => {
    const ids = [
      'a b',
      'constructor',
      '__proto__',
      'toString',
      'hasOwnProperty',
      '"quoted"',
      "it's",
      'back\\slash',
      '`$' + '{process.exit(1)}`',
      '"]; throw 1; //',
      '\u2028line\u2029',
      '',
      '0',
      '1e3',
      'é😀',
    ];
    const plan = planColumns(ids.map((id) => field(id, 'string')));
    const toRow = makeRowFactory(plan);
    const row = toRow(
      ids.map((id) => `v:${id}`),
      1,
    );
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.keys(row).sort()).toEqual([...ids].sort());
    for (const id of ids) {
      expect(Object.hasOwn(row, id), id).toBe(true);
      expect(row[id], id).toBe(`v:${id}`);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('does not let a __proto__ column set the prototype, even to an object-like value', () => {
    const toRow = makeRowFactory(planColumns([field('__proto__', 'string'), field('x', 'number')]));
    const row = toRow([null, 1], 1);
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')).toMatchObject({
      value: null,
      enumerable: true,
    });
  });
});

const kinds: ColumnKind[] = ['string', 'number', 'date', 'datetime', 'boolean'];

/** Valid values, nulls, and values that are invalid for some kinds. */
function anyWire(kind: ColumnKind): fc.Arbitrary<WireValue> {
  const valid: Record<ColumnKind, fc.Arbitrary<WireValue>> = {
    string: trickyText as fc.Arbitrary<WireValue>,
    number: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer().map(String)),
    date: wireDate,
    datetime: wireTimestamp,
    boolean: fc.constantFrom(true, false, 'true', 'false', 1, 0),
  };
  return fc.oneof(
    { arbitrary: valid[kind], weight: 6 },
    { arbitrary: fc.constant(null), weight: 2 },
    { arbitrary: fc.oneof(fc.string(), fc.integer(), fc.boolean(), wireDate, wireTimestamp), weight: 2 },
  );
}

describe('row factory and builder agree (property)', () => {
  it('gives the same values for random wire rows, invalid values nulled by both', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 6 }).chain((cols) =>
          fc.record({
            cols: fc.constant(cols),
            ticker: fc.boolean(),
            rows: fc.array(fc.tuple(...cols.map(anyWire)), { maxLength: 25 }),
          }),
        ),
        ({ cols, ticker, rows }) => {
          const plan = planColumns(
            cols.map((k, j) => field(`c${j}`, k, ticker && k === 'string' ? 'ticker' : null)),
          );
          const builder = new RecordBatchBuilder(plan, { onInvalid: 'null' });
          builder.appendRows(rows, 1);
          const batch = builder.flush();
          const toRow = makeRowFactory(plan, { onInvalid: 'null' });
          rows.forEach((wire, i) => {
            const obj = toRow(wire, i + 1);
            plan.forEach((c) => {
              const fromArrow = batch.getChild(c.id)!.get(i);
              const fromRow = obj[c.id] instanceof Date ? (obj[c.id] as Date).getTime() : obj[c.id];
              const expected =
                c.kind === 'string' && typeof fromRow === 'string'
                  ? Buffer.from(fromRow).toString()
                  : fromRow;
              expect(fromArrow).toEqual(expected);
            });
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  it('throws for the same rows, at the same place, with onInvalid: error', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...kinds), { minLength: 1, maxLength: 5 }).chain((cols) =>
          fc.record({
            cols: fc.constant(cols),
            rows: fc.array(fc.tuple(...cols.map(anyWire)), { maxLength: 10 }),
          }),
        ),
        ({ cols, rows }) => {
          const plan = planColumns(cols.map((k, j) => field(`c${j}`, k)));
          const builder = new RecordBatchBuilder(plan);
          const toRow = makeRowFactory(plan);
          let fromBuilder: unknown;
          let fromRows: unknown;
          try {
            builder.appendRows(rows, 1);
          } catch (e) {
            fromBuilder = e;
          }
          try {
            rows.forEach((r, i) => toRow(r, i + 1));
          } catch (e) {
            fromRows = e;
          }
          expect(fromBuilder === undefined).toBe(fromRows === undefined);
          if (fromBuilder !== undefined) {
            expect((fromBuilder as Error).message).toBe((fromRows as Error).message);
            expect(builder.length).toBe(0);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
