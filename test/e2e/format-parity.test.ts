import { buffer } from 'node:stream/consumers';
import type { Table } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { COMPANIES } from '../../src/emulator/index.js';
import { DecodeError, FormatNotOfferedError, type InvalidArgumentError, MediaType } from '../../src/index.js';
import { expectRejects, pageGets, setup } from '../helpers.js';

function rowsOf(table: Table): unknown[] {
  return table.toArray().map((r) => r.toJSON());
}

function schemaOf(table: Table): string[] {
  return table.schema.fields.map(
    (f) => `${f.name}:${f.type}:${f.nullable}:${JSON.stringify([...f.metadata])}`,
  );
}

describe('format parity: json, csv and xlsx give identical Arrow tables', () => {
  for (const dataset of ['job_listings', 'store_locations', 'web_traffic', 'app_reviews']) {
    it(`on ${dataset}`, async () => {
      // The cap keeps XLSX (the slowest decoder) to a few thousand rows per dataset.
      const { client } = await setup({ seed: 7, rowCap: 6000 });
      // Two public and one private company where the dataset has them: commas, quotes, newlines, non-ASCII,
      // nulls vs "", large integers and dates all occur within a few thousand rows.
      const meta = await client.getDataset(dataset);
      const tickers = (await client.searchTickers(dataset, '')).map((t) => t.id);
      const pick = [
        ...tickers.filter((t) => !t.startsWith('private:')).slice(0, 2),
        ...tickers.filter((t) => t.startsWith('private:')).slice(0, 1),
      ];
      const result = await client.query(dataset, { tickers: pick });
      expect(result.total).toBeGreaterThan(0);
      const json = await result.toTable({ format: 'json', pageSize: 1500 });
      expect(json.numRows).toBe(result.total);
      const offered = result.formats;
      const others = (['csv', 'xlsx'] as const).filter((f) => offered.includes(MediaType[f]));
      expect(others.length).toBeGreaterThan(0);
      for (const format of others) {
        const t = await result.toTable({ format, pageSize: 1500 });
        expect(schemaOf(t), `${format} schema`).toEqual(schemaOf(json));
        expect(rowsOf(t), `${format} values`).toEqual(rowsOf(json));
      }
      expect(meta.fields.map((f) => f.id)).toEqual(result.fields.map((f) => f.id));
      if (dataset === 'job_listings' || dataset === 'app_reviews') {
        // The sample must hold the values that break naive decoders, or parity would prove little.
        const texts = rowsOf(json).flatMap((r) => Object.values(r as object));
        const has = (p: (v: unknown) => boolean) => texts.some(p);
        const str = (p: (v: string) => boolean) => (v: unknown) => typeof v === 'string' && p(v);
        expect(has(str((v) => v.includes(dataset === 'job_listings' ? '\r\n' : '\n'))), 'line breaks').toBe(
          true,
        );
        expect(has(str((v) => v === '')), 'empty string').toBe(true);
        expect(
          has((v) => v === null),
          'null',
        ).toBe(true);
        expect(has(str((v) => v.includes('"') && v.includes(','))), 'quote and comma').toBe(true);
        expect(has(str((v) => /[^\x00-\x7f]/.test(v))), 'non-ASCII').toBe(true);
      }
    });
  }

  it('auto picks table JSON when offered, and a format not offered is an error listing what is', async () => {
    const { client, emu } = await setup();
    // A small result: query() reads it whole (table JSON, for its descriptors), toTable() uses that page.
    const result = await client.query('store_locations', { tickers: ['nyse:wmt'] });
    await result.toTable();
    expect(emu.requests.filter((r) => r.method === 'GET').every((r) => r.accept === MediaType.table)).toBe(
      true,
    );
    await expectRejects<FormatNotOfferedError>(result.toTable({ format: 'xlsx' }), (e) => {
      expect(e).toBeInstanceOf(FormatNotOfferedError);
      expect(e.code).toBe('DQS_FORMAT_NOT_OFFERED');
      expect(e.message).toContain(MediaType.csv);
      expect(e.offered).toEqual(result.formats);
    });
    expect(pageGets(emu)).toBeGreaterThan(0);
  });

  it('downloads raw bodies in any offered format, XLS and map JSON included', async () => {
    const { client } = await setup();
    const result = await client.query('job_listings', { tickers: [COMPANIES[0]!.id] });
    const xls = (await buffer(await result.download({ format: 'xls', start: 1, limit: 5 }))).toString('utf8');
    expect(xls).toContain('<Workbook');
    const map = JSON.parse(
      (await buffer(await result.download({ format: 'map', limit: 3 }))).toString('utf8'),
    );
    expect(map.rows).toHaveLength(3);
    expect(Object.keys(map.rows[0])).toEqual(result.fields.map((f) => f.id));
    const csv = (await buffer(await result.download({ format: 'csv', limit: 2 }))).toString('utf8');
    expect(csv.split('\r\n')[0]).toBe(result.fields.map((f) => f.id).join(','));
    const xlsx = await buffer(await result.download({ format: MediaType.xlsx, limit: 2 }));
    expect(xlsx.subarray(0, 2).toString()).toBe('PK');
    const store = await client.query('store_locations', { tickers: ['nyse:wmt'] });
    await expectRejects<InvalidArgumentError>(store.download({ format: 'xlsx' }), (e) =>
      expect(e.argument).toBe('format'),
    );
  });

  it('a malformed CSV page ends the stream with a DecodeError naming the page and row', async () => {
    const { client } = await setup({
      rowCap: 20,
      fault: (req) => {
        if (req.method === 'GET' && req.headers.accept === MediaType.csv && req.query.start === '11') {
          return {
            kind: 'status',
            status: 200,
            headers: {
              'content-type': 'text/csv',
              'x-state': 'complete',
              'x-total': '20',
              'x-truncated': 'true',
            },
            body: 'broken,header\r\na,b\r\n',
          };
        }
        return undefined;
      },
    });
    const result = await client.query('job_listings', {});
    await expectRejects<DecodeError>(result.toTable({ format: 'csv', pageSize: 10 }), (e) => {
      expect(e).toBeInstanceOf(DecodeError);
      expect(e.page).toEqual({ start: 11, limit: 10 });
    });
  });
});
