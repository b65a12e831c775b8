/**
 * Notebook and REPL display: `preview()` of tables and results (HTML escaped, text aligned, dates and
 * timestamps as the text writers spell them, nulls as null), `display()` in Deno's kernel, tslab and a
 * plain process, and `QueryResult`'s own display hooks, which must fetch nothing.
 */
import { inspect } from 'node:util';
import { type RecordBatch, Table } from 'apache-arrow';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planColumns, RecordBatchBuilder } from '../src/convert/index.js';
import type { FieldDescriptor, WireValue } from '../src/core/wire.js';
import { queryInfo } from '../src/emulator/index.js';
import { display, InvalidArgumentError, type MimeBundle, preview } from '../src/index.js';
import { expectRejects, pageGets, setup } from './helpers.js';

function field(id: string, type: string, format: string | null = null): FieldDescriptor {
  return { id, display_name: `${id} name`, summary: '', type, format, metric: false, length: 0, options: [] };
}

const FIELDS = [
  field('ticker', 'string', 'ticker'),
  field('title', 'string'),
  field('posted', 'date'),
  field('seen', 'datetime'),
  field('salary', 'number'),
  field('remote', 'boolean'),
];

const LONG = `Senior ${'very '.repeat(30)}long title`;
const ROWS: WireValue[][] = [
  ['nasdaq:aapl', '<script>alert("x")</script> & co', '20240229', '20240229T123456Z', 120000, true],
  ['nyse:ibm', null, null, null, null, null],
  ['nyse:ibm', 'two\nlines\tand tab', '19991231', '20000101T000000Z', 55000.5, false],
  ['nasdaq:aapl', LONG, '20240101', '20240101T000000Z', 7, true],
];

function batch(rows: WireValue[][] = ROWS): RecordBatch {
  const builder = new RecordBatchBuilder(planColumns(FIELDS));
  builder.appendRows(rows, 1);
  return builder.flush();
}

/** Two batches of one builder, as a stream makes them (one growing ticker dictionary). */
function twoBatches(): Table {
  const builder = new RecordBatchBuilder(planColumns(FIELDS));
  builder.appendRows(ROWS.slice(0, 2), 1);
  const first = builder.flush();
  builder.appendRows(ROWS.slice(2), 3);
  return new Table([first, builder.flush()]);
}

/** What Deno's kernel does with a cell's value. */
function jupyter(value: object): MimeBundle {
  const hook = (value as Record<symbol, unknown>)[Symbol.for('Jupyter.display')];
  if (typeof hook !== 'function') throw new Error('no Jupyter.display hook');
  return hook.call(value) as MimeBundle;
}

const table = twoBatches();

describe('preview(table)', () => {
  it('is a text table: aligned columns, short Arrow types, dates YYYY-MM-DD, timestamps ISO, null', () => {
    const text = preview(table).toString();
    const lines = text.split('\n');
    expect(lines[0]).toBe('Arrow table · 4 rows · 6 columns');
    expect(lines[1]).toMatch(/^ticker\s+title\s+posted\s+seen\s+salary\s+remote$/);
    expect(lines[2]).toMatch(/^dict<utf8>\s+utf8\s+date\s+timestamp\[ms, UTC\]\s+f64\s+bool$/);
    expect(lines[3]).toMatch(/^─+( +─+){5}$/);
    // Every column starts at the same offset on every line (alignment), numbers right-aligned.
    const start = (line: string, n: number) => [...line.matchAll(/(?<=^|\s\s)\S/g)].map((m) => m.index)[n];
    expect(lines[4]).toContain('2024-02-29  2024-02-29T12:34:56.000Z');
    expect(lines[4]).toMatch(/ 120000 {2}true$/);
    expect(lines[5]).toMatch(/^nyse:ibm\s+null\s+null\s+null\s+null\s+null$/);
    expect(lines[6]).toContain('two\\nlines\\tand tab');
    expect(lines[6]).toContain('1999-12-31');
    expect(start(lines[1]!, 1)).toBe(start(lines[4]!, 1));
    // Left-aligned columns start together; salary is right-aligned, so the column after it starts together.
    for (const c of [0, 1, 2, 3, 5]) expect(start(lines[6]!, c), `column ${c}`).toBe(start(lines[1]!, c));
    expect(lines[4]!.indexOf('120000') + 6).toBe(lines[6]!.indexOf('55000.5') + 7);
    // Long strings are cut at 40 characters by default.
    expect(lines[7]).toContain(`${LONG.slice(0, 39)}…`);
    expect(lines[7]).not.toContain(LONG);
    expect(lines).toHaveLength(8);
  });

  it('escapes every value in HTML: a <script> in a value is shown, never run', () => {
    const html = preview(table).toHtml();
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co');
    expect(html).toContain('<b>4</b> rows');
    expect(html.match(/<tr>/g)).toHaveLength(5); // header + 4 rows
    expect(html).toMatch(/font-style: italic">null<\/span>/);
    expect(html).toContain('timestamp[ms, UTC]');
    expect(html).toContain('2024-02-29T12:34:56.000Z');
  });

  it('escapes column names and caps strings in HTML too', () => {
    const builder = new RecordBatchBuilder(planColumns([field('<img src=x onerror=alert(1)>', 'string')]));
    builder.appendRows([['fine']], 1);
    const html = preview(builder.flush()).toHtml();
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).not.toMatch(/<img/);
    const capped = preview(table, { maxStringLength: 8 }).toHtml();
    expect(capped).toContain('&lt;script…');
    expect(capped).not.toContain('alert');
  });

  it('rows: limits the rows shown and says how many there are; Jupyter and inspect hooks', () => {
    const p = preview(table, { rows: 2 });
    expect(p.rows).toHaveLength(2);
    expect(p.totalRows).toBe(4);
    expect(p.toString()).toMatch(/showing 2 of 4 rows$/);
    const mime = jupyter(p);
    expect(Object.keys(mime).sort()).toEqual(['text/html', 'text/plain']);
    expect(mime['text/plain']).toBe(p.toString());
    expect(mime['text/html']).toBe(p.toHtml());
    expect(inspect(p)).toBe(p.toString());
    expect(preview(table, { rows: 0 }).rows).toHaveLength(0);
  });

  it('takes a RecordBatch, and validates its options', () => {
    expect(preview(batch()).toString()).toMatch(/^Arrow record batch · 4 rows · 6 columns/);
    expect(() => preview(table, { rows: -1 })).toThrow(InvalidArgumentError);
    expect(() => preview(table, { maxStringLength: 0 })).toThrow(/to be an integer >= 1, got 0/);
    expect(() => preview({} as Table)).toThrow(/to be an apache-arrow Table or RecordBatch/);
  });
});

describe('QueryResult display and preview(result)', () => {
  const BODY = { tickers: ['nasdaq:aapl', 'lse:tsco'] };
  const total = queryInfo('store_locations', BODY).total;

  it('util.inspect and the Jupyter hook summarise the result without a request', async () => {
    const { emu, client } = await setup();
    const result = await client.query('store_locations', BODY);
    const before = emu.requests.length;
    const text = inspect(result);
    expect(text.split('\n')[0]).toBe(
      `QueryResult store_locations · query ${result.id.slice(0, 12)}… · ${total} rows · complete`,
    );
    expect(text).toMatch(/ticker\s+Dictionary<Int32, Utf8>\s+Ticker\n/);
    expect(text).toMatch(/opened_date\s+Date32<DAY>/);
    expect(text).toMatch(/updated_at\s+Timestamp<MILLISECOND, UTC>/);
    expect(text).not.toContain(emu.apiKey);
    const mime = jupyter(result);
    expect(mime['text/plain']).toBe(text);
    expect(mime['text/html']).toContain('<b>store_locations</b>');
    expect(mime['text/html']).toContain('complete');
    expect(mime['text/html']).toContain('Timestamp&lt;MILLISECOND, UTC&gt;');
    expect(inspect({ result }, { depth: 0 })).toContain('[QueryResult store_locations');
    expect(emu.requests.length).toBe(before);
  });

  it('a truncated result says so, in red in HTML', async () => {
    const { client } = await setup({ rowCap: 100 });
    const result = await client.query('store_locations', BODY);
    expect(inspect(result).split('\n')[0]).toMatch(/100 rows · TRUNCATED at the service's row cap$/);
    const html = (await preview(result, { rows: 3 })).toHtml();
    expect(html).toMatch(/color: #b00020[^>]*>TRUNCATED/);
  });

  it('preview(result) reads one small page, not the result', async () => {
    const { emu, client } = await setup();
    const result = await client.query('store_locations', BODY);
    const before = pageGets(emu);
    const p = await preview(result, { rows: 5 });
    expect(p.rows).toHaveLength(5);
    expect(p.totalRows).toBe(total);
    expect(p.truncated).toBe(false);
    expect(p.toString()).toMatch(new RegExp(`showing 5 of ${total} rows$`));
    // The first page, and at most one more requested before the stream was destroyed.
    expect(pageGets(emu) - before).toBeLessThanOrEqual(2);
    const requested = emu.requests.filter((r) => r.query.limit === '5');
    expect(requested.length).toBeGreaterThanOrEqual(1);
    const none = await preview(result, { rows: 0 });
    expect(none.schema.fields.map((f) => f.name)).toEqual(result.fields.map((f) => f.id));
  });
});

describe('display()', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
    vi.restoreAllMocks();
  });

  it("Deno's kernel: hands Deno.jupyter.display the MIME bundle, raw", async () => {
    const shown: unknown[] = [];
    vi.stubGlobal('Deno', {
      jupyter: { display: (value: unknown, options: unknown) => shown.push(value, options) },
    });
    await display(table, { rows: 1 });
    const [bundle, options] = shown as [Record<string, string>, unknown];
    expect(options).toEqual({ raw: true });
    expect(bundle['text/html']).toContain('class="dqs-preview"');
    expect(bundle['text/plain']).toMatch(/showing 1 of 4 rows/);
  });

  it('tslab: display.html with the preview HTML; a plain process: the text table on stdout', async () => {
    const html: string[] = [];
    await display(preview(table), { tslab: { display: { html: (h) => html.push(h) } } });
    expect(html).toEqual([preview(table).toHtml()]);
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    await display(table);
    expect(write).toHaveBeenCalledWith(`${preview(table).toString()}\n`);
  });

  it('previews a QueryResult (reads its first rows)', async () => {
    const { client } = await setup();
    const result = await client.query('store_locations', { tickers: ['nasdaq:aapl'] });
    const html: string[] = [];
    await display(result, { rows: 2, tslab: { display: { html: (h) => html.push(h) } } });
    expect(html[0]).toContain('nasdaq:aapl');
    expect(html[0]?.match(/<tr>/g)).toHaveLength(3);
    await expectRejects(preview(result, { rows: 2, format: 'xls' as 'csv' }), (err: Error) =>
      expect(err).toBeInstanceOf(InvalidArgumentError),
    );
  });
});
