import { describe, expect, it } from 'vitest';
import { planColumns } from '../src/convert/index.js';
import { DecodeError } from '../src/core/errors.js';
import { FORMATS, parseTablePage } from '../src/decode/index.js';
import { caught, chunked, field } from './convert-fixtures.js';

const where = { start: 21, limit: 10 };
const page = {
  id: 'a'.repeat(64),
  state: 'complete',
  total: 22,
  count: 2,
  start: 21,
  limit: 10,
  rows: [
    ['nasdaq:aapl', '20240229', 3],
    ['nyse:ibm', null, null],
  ],
  fields: [field('ticker', 'string', 'ticker'), field('posted', 'date'), field('n', 'number')],
  group_fields: [],
  sort_fields: [],
  last_date_updated: '2024-03-01T00:00:00Z',
};

describe('parseTablePage', () => {
  it('returns the page as sent', () => {
    expect(parseTablePage(JSON.stringify(page), where)).toEqual(page);
  });

  it.each([
    ['not JSON', '{"rows": [', /the body is not JSON/],
    ['an array', '[]', /not an object/],
    ['null', 'null', /the body is null, not an object/],
    ['rows missing', JSON.stringify({ ...page, rows: undefined }), /rows is not an array/],
    ['rows an object', JSON.stringify({ ...page, rows: {} }), /rows is not an array/],
    ['a row not an array', JSON.stringify({ ...page, rows: [[1], 'x'] }), /rows\[1\] is not an array/],
    ['fields missing', JSON.stringify({ ...page, fields: null }), /fields is not an array/],
    [
      'a field without id',
      JSON.stringify({ ...page, fields: [{ type: 'string' }] }),
      /fields\[0\] is not a descriptor/,
    ],
    ['a numeric field id', JSON.stringify({ ...page, fields: [{ id: 3 }] }), /fields\[0\]/],
    ['total a string', JSON.stringify({ ...page, total: '22' }), /total is not an integer \("22"\)/],
    ['count fractional', JSON.stringify({ ...page, count: 1.5 }), /count is not an integer/],
    ['start missing', JSON.stringify({ ...page, start: undefined }), /start is not an integer/],
  ])('rejects %s with a DecodeError naming the page', async (_what, text, message) => {
    const error = await caught(() => parseTablePage(text, where));
    expect(error).toBeInstanceOf(DecodeError);
    expect(error).toMatchObject({ code: 'DQS_DECODE', page: where });
    expect((error as Error).message).toMatch(/^Not a result page: /);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).toContain('(page start=21 limit=10)');
  });
});

describe("FORMATS.json.reference (table JSON's reference decoder)", () => {
  const plan = planColumns(page.fields);
  const { reference } = FORMATS.json;

  it('gives the rows and the envelope of a body arriving in pieces', async () => {
    const text = JSON.stringify(page);
    expect(await reference(chunked(text, [7, 1, 300]), plan, where)).toEqual({
      part: page.rows,
      envelope: { total: 22, count: 2, start: 21 },
    });
  });

  it('rejects a page whose fields are not the planned columns', async () => {
    const other = JSON.stringify({ ...page, fields: [page.fields[1], page.fields[0], page.fields[2]] });
    const error = await caught(() => reference(chunked(other), plan, where));
    expect(error).toBeInstanceOf(DecodeError);
    expect((error as Error).message).toContain('not the planned columns');
  });
});
