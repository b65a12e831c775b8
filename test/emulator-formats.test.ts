import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FieldDescriptor, WireValue } from '../src/core/wire.js';
import { datasetFields, type Emulator, queryRows, startEmulator } from '../src/emulator/index.js';
import { ensureBuilt, ROOT } from './cli-helpers.js';
import { CSV, createQuery, MAP, page, TABLE, XLS, XLSX } from './emulator-helpers.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator();
});
afterAll(() => emu.close());

interface Case {
  dataset: string;
  body: { tickers: string[] };
  start: number;
  limit: number;
  /** What makes the page worth encoding: checked so the test cannot silently lose its point. */
  awkward: (values: WireValue[]) => boolean;
}

const hasTextAndNulls = (values: WireValue[]) =>
  values.includes(null) &&
  values.includes('') &&
  values.some((v) => typeof v === 'string' && /[^\x00-\x7f]/.test(v)) &&
  values.some((v) => typeof v === 'string' && /[",\n]/.test(v));

/** Pages chosen to hold the awkward values: "" and null, CRLF, quotes, commas, non-ASCII, 2^53 - 1. */
const CASES: Case[] = [
  {
    dataset: 'job_listings',
    body: { tickers: ['nasdaq:aapl'] },
    start: 1,
    limit: 400,
    awkward: (v) => hasTextAndNulls(v) && v.some((s) => typeof s === 'string' && s.includes('\r\n')),
  },
  {
    dataset: 'app_reviews',
    body: { tickers: ['nyse:wmt', 'tyo:9983'] },
    start: 3900,
    limit: 400,
    awkward: hasTextAndNulls,
  },
  {
    dataset: 'web_traffic',
    body: { tickers: ['nasdaq:msft'] },
    start: 1,
    limit: 400,
    awkward: (v) => v.includes(Number.MAX_SAFE_INTEGER) && v.includes(true) && v.includes(false),
  },
];

async function tablePage(c: Case): Promise<{ id: string; page: Record<string, unknown> }> {
  const h = await createQuery(emu, c.dataset, c.body);
  const res = await page(emu, c.dataset, h.id, `?start=${c.start}&limit=${c.limit}`, TABLE);
  return { id: h.id, page: (await res.json()) as Record<string, unknown> };
}

/** A CSV cell back to its wire value, by the column's type and the field's quoting. */
function fromCsv(text: string, quoted: boolean, field: FieldDescriptor): WireValue {
  if (text === '' && !quoted) return null;
  if (field.type === 'number') return Number(text);
  if (field.type === 'boolean') return text === 'true';
  return text;
}

describe('CSV', () => {
  it('parses with csv-parse to the table JSON values, null and "" apart by quoting', async () => {
    for (const c of CASES) {
      const { id, page: table } = await tablePage(c);
      const rows = table.rows as WireValue[][];
      expect(c.awkward(rows.flat()), c.dataset).toBe(true);
      const res = await page(emu, c.dataset, id, `?start=${c.start}&limit=${c.limit}`, CSV);
      expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
      expect(res.headers.get('x-total')).toBe(String(table.total));
      const text = await res.text();
      expect(text.charCodeAt(0)).not.toBe(0xfeff);
      expect(text.endsWith('\r\n')).toBe(true);
      const fields = datasetFields(c.dataset);
      expect(text.slice(0, text.indexOf('\r\n'))).toBe(fields.map((f) => f.id).join(','));
      const records = parse(text, {
        from_line: 2,
        relax_column_count: false,
        cast: (value, context) => fromCsv(value, context.quoting, fields[context.index]!),
      }) as WireValue[][];
      expect(records).toEqual(rows);
    }
  });

  it('writes "" quoted and null as an empty unquoted field, CRLF line ends', async () => {
    const body = { tickers: ['nasdaq:aapl'] };
    const rows = queryRows('job_listings', body, {}, 1, 400);
    const urlColumn = 10;
    const emptyAt = rows.findIndex((r) => r[urlColumn] === '');
    const nullAt = rows.findIndex((r) => r[urlColumn] === null);
    expect(emptyAt).toBeGreaterThanOrEqual(0);
    expect(nullAt).toBeGreaterThanOrEqual(0);
    const h = await createQuery(emu, 'job_listings', body);
    const one = async (at: number) =>
      (await (await page(emu, 'job_listings', h.id, `?start=${at + 1}&limit=1`, CSV)).text()).split(
        '\r\n',
      )[1]!;
    expect(await one(emptyAt)).toMatch(/,"",/);
    expect(await one(nullAt)).toMatch(/,,/);
    const crlfAt = rows.findIndex((r) => String(r[11]).includes('\r\n'));
    expect(crlfAt).toBeGreaterThanOrEqual(0);
    const crlf = await (await page(emu, 'job_listings', h.id, `?start=${crlfAt + 1}&limit=1`, CSV)).text();
    expect(crlf).toContain('"About the role\r\n');
  });
});

/** Reads every worksheet row with exceljs's streaming reader, as the client's decoder does. */
async function readXlsx(buffer: Buffer, width: number): Promise<{ name: string; rows: WireValue[][] }> {
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(Readable.from([buffer]), {
    sharedStrings: 'cache',
    styles: 'ignore',
    hyperlinks: 'ignore',
    worksheets: 'emit',
  });
  const rows: WireValue[][] = [];
  let name = '';
  for await (const sheet of reader) {
    name = (sheet as unknown as { name: string }).name;
    for await (const row of sheet) {
      const values: WireValue[] = [];
      for (let c = 1; c <= width; c++) values.push(row.getCell(c).value as WireValue);
      rows.push(values);
    }
  }
  return { name, rows };
}

describe('XLSX', () => {
  it("reads back with exceljs's streaming reader to the table JSON values", async () => {
    for (const c of CASES) {
      const { id, page: table } = await tablePage(c);
      const res = await page(emu, c.dataset, id, `?start=${c.start}&limit=${c.limit}`, XLSX);
      expect(res.headers.get('content-type')).toBe(XLSX);
      const fields = datasetFields(c.dataset);
      const { name, rows } = await readXlsx(Buffer.from(await res.arrayBuffer()), fields.length);
      expect(name).toBe('results');
      expect(rows[0]).toEqual(fields.map((f) => f.id));
      // CR travels as Excel's `_x000D_` escape (XML would turn a raw CR into LF). exceljs's streaming
      // reader leaves inline-string escapes as they are; undone here, the text, CRLF included, is exact.
      const raw = rows.slice(1);
      const undoEscapes = (v: WireValue) =>
        typeof v === 'string'
          ? v.replace(/_x([0-9A-Fa-f]{4})_/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)))
          : v;
      expect(raw.map((r) => r.map(undoEscapes))).toEqual(table.rows);
    }
  });

  it('loads exceljs at the first workbook, not with the emulator or the client', () => {
    const entry = join(ROOT, 'dist', 'emulator', 'index.js');
    ensureBuilt(entry);
    // exceljs is CommonJS: once imported it sits in the shared require cache.
    const script = [
      "import { createRequire } from 'node:module';",
      `await import(${JSON.stringify(pathToFileURL(entry).href)});`,
      `await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'index.js')).href)});`,
      'const cache = createRequire(import.meta.url).cache;',
      "console.log(Object.keys(cache).some((k) => k.includes('exceljs')));",
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
    expect(out.toString().trim()).toBe('false');
  });

  it('is not offered by store_locations', async () => {
    const h = await createQuery(emu, 'store_locations', {});
    expect(h.formats).not.toContain(XLSX);
  });
});

describe('map JSON', () => {
  it('is the table page with rows as objects keyed by field id, nulls present', async () => {
    for (const c of CASES) {
      const { id, page: table } = await tablePage(c);
      const res = await page(emu, c.dataset, id, `?start=${c.start}&limit=${c.limit}`, MAP);
      expect(res.headers.get('content-type')).toBe(MAP);
      const map = (await res.json()) as Record<string, unknown>;
      const { rows: mapRows, ...mapRest } = map;
      const { rows: tableRows, ...tableRest } = table;
      expect(mapRest).toEqual(tableRest);
      const ids = datasetFields(c.dataset).map((f) => f.id);
      for (const row of mapRows as Record<string, unknown>[]) expect(Object.keys(row)).toEqual(ids);
      expect((mapRows as Record<string, WireValue>[]).map((r) => ids.map((k) => r[k]))).toEqual(tableRows);
    }
  });
});

function xmlUnescape(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#13|#10);/g, (_, e: string) =>
    e === 'amp' ? '&' : e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : e === '#13' ? '\r' : '\n',
  );
}

/** Just enough SpreadsheetML reading to check what the emulator writes. */
function readSpreadsheetMl(xml: string, width: number): WireValue[][] {
  const rows: WireValue[][] = [];
  for (const [, inner] of xml.matchAll(/<Row>(.*?)<\/Row>/gs)) {
    const values: WireValue[] = new Array(width).fill(null);
    let col = 0;
    for (const m of inner!.matchAll(
      /<Cell(?: ss:Index="(\d+)")?><Data ss:Type="(\w+)">(.*?)<\/Data><\/Cell>/gs,
    )) {
      col = m[1] ? Number(m[1]) - 1 : col;
      const text = xmlUnescape(m[3]!);
      values[col] = m[2] === 'Number' ? Number(text) : m[2] === 'Boolean' ? text === '1' : text;
      col++;
    }
    rows.push(values);
  }
  return rows;
}

describe('XLS (SpreadsheetML 2003)', () => {
  it('holds the table JSON values, a null as a skipped cell', async () => {
    for (const c of CASES) {
      const { id, page: table } = await tablePage(c);
      const res = await page(emu, c.dataset, id, `?start=${c.start}&limit=${c.limit}`, XLS);
      expect(res.headers.get('content-type')).toBe(XLS);
      const xml = await res.text();
      expect(xml).toMatch(
        /^<\?xml version="1.0" encoding="UTF-8"\?>\n<\?mso-application progid="Excel.Sheet"\?>/,
      );
      expect(xml).toContain('<Worksheet ss:Name="results">');
      const width = datasetFields(c.dataset).length;
      const rows = readSpreadsheetMl(xml, width);
      expect(rows[0]).toEqual(datasetFields(c.dataset).map((f) => f.id));
      expect(rows.slice(1)).toEqual(table.rows);
    }
  });
});

describe('page cache', () => {
  it('serves identical bytes for a repeated page, per format', async () => {
    const c = CASES[0]!;
    const { id } = await tablePage(c);
    for (const accept of [TABLE, CSV, XLSX]) {
      const a = Buffer.from(
        await (await page(emu, c.dataset, id, '?start=5&limit=50', accept)).arrayBuffer(),
      );
      const b = Buffer.from(
        await (await page(emu, c.dataset, id, '?start=5&limit=50', accept)).arrayBuffer(),
      );
      expect(a.equals(b)).toBe(true);
    }
  });
});
