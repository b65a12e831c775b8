import { Bool, DateDay, Dictionary, Float64, TimestampMillisecond, Type, Utf8 } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { buildSchema, columnKind, planColumns } from '../src/convert/index.js';
import { DecodeError, InvalidArgumentError } from '../src/core/errors.js';
import { caught, field, mixedFields, SHORT_IDS } from './convert-fixtures.js';

describe('columnKind', () => {
  it.each([
    ['number', 'number'],
    ['integer', 'number'],
    ['int', 'number'],
    ['float', 'number'],
    ['double', 'number'],
    ['Integer', 'number'],
    ['date', 'date'],
    ['datetime', 'datetime'],
    ['timestamp', 'datetime'],
    ['boolean', 'boolean'],
    ['bool', 'boolean'],
    ['string', 'string'],
    ['text', 'string'],
    ['', 'string'],
    ['decimal(10,2)', 'string'],
  ])('%j → %s', (type, kind) => {
    expect(columnKind(type)).toBe(kind);
  });
});

describe('planColumns', () => {
  const fields = [field('ticker', 'string', 'ticker'), field('posted', 'string'), field('n', 'integer')];

  it('keeps positions and descriptors, kinds from the declared types', () => {
    const plan = planColumns(fields);
    expect(plan.map((c) => [c.id, c.index, c.kind])).toEqual([
      ['ticker', 0, 'string'],
      ['posted', 1, 'string'],
      ['n', 2, 'number'],
    ]);
    expect(plan[0]!.descriptor).toBe(fields[0]);
  });

  it('lets overrides win over declared types', () => {
    const plan = planColumns(fields, { posted: 'date', n: 'string' });
    expect(plan.map((c) => c.kind)).toEqual(['string', 'date', 'string']);
    expect(plan[1]!.field.type).toBeInstanceOf(DateDay);
  });

  it('rejects an override for a column the result does not have, naming it', async () => {
    const error = await caught(() => planColumns(fields, { nope: 'date' }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ code: 'DQS_INVALID_ARGUMENT', argument: 'types' });
    expect((error as Error).message).toContain('"nope"');
    expect((error as Error).message).toContain('"ticker"');
  });

  it('rejects an unknown kind, naming column and kind', async () => {
    const error = await caught(() => planColumns(fields, { n: 'int' as never }));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(/column "n".*"int"/);
  });

  it('does not take inherited keys of the overrides object for columns', () => {
    const plan = planColumns([field('constructor', 'integer')], {});
    expect(plan[0]!.kind).toBe('number');
  });

  it('rejects duplicate field ids', async () => {
    const error = await caught(() => planColumns([field('a'), field('b'), field('a')]));
    expect(error).toBeInstanceOf(DecodeError);
    expect((error as Error).message).toContain('"a"');
  });
});

describe('buildSchema', () => {
  const plan = planColumns([...mixedFields(SHORT_IDS), field('x', 'weird')]);
  const schema = buildSchema(plan);

  it('names columns by field id and maps kinds to Arrow types, all nullable', () => {
    expect(schema.fields.map((f) => f.name)).toEqual(['ticker', 'd', 'ts', 'n', 'b', 's', 'x']);
    const [ticker, d, ts, n, b, s, x] = schema.fields.map((f) => f.type);
    expect(ticker).toBeInstanceOf(Dictionary);
    expect((ticker as Dictionary).dictionary).toBeInstanceOf(Utf8);
    expect((ticker as Dictionary).indices.typeId).toBe(Type.Int);
    expect((ticker as Dictionary).indices.bitWidth).toBe(32);
    expect(d).toBeInstanceOf(DateDay);
    expect(ts).toBeInstanceOf(TimestampMillisecond);
    expect((ts as TimestampMillisecond).timezone).toBe('UTC');
    expect(n).toBeInstanceOf(Float64);
    expect(b).toBeInstanceOf(Bool);
    expect(s).toBeInstanceOf(Utf8);
    expect(x).toBeInstanceOf(Utf8);
    expect(schema.fields.every((f) => f.nullable)).toBe(true);
  });

  it('keeps descriptor facts as field metadata', () => {
    const ticker = schema.fields[0]!;
    expect(Object.fromEntries(ticker.metadata)).toEqual({
      display_name: 'Name of ticker',
      summary: 'About ticker',
      format: 'ticker',
      dqs_type: 'string',
    });
    expect(schema.fields[1]!.metadata.has('format')).toBe(false);
    expect(schema.fields[6]!.metadata.get('dqs_type')).toBe('weird');
  });

  it('gives every dictionary column its own dictionary id', () => {
    const two = buildSchema(planColumns([field('a', 'string', 'ticker'), field('b', 'string', 'ticker')]));
    const [a, b] = two.fields.map((f) => (f.type as Dictionary).id);
    expect(a).not.toBe(b);
  });
});
