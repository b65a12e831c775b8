/**
 * `preview()`: the first rows of an Arrow table, a record batch or a query result, as an object that
 * shows itself well wherever it is printed:
 *
 * - Deno's Jupyter kernel calls `[Symbol.for('Jupyter.display')]()` on a cell's value: an HTML table (and
 *   a text fallback);
 * - Node's REPL and `console.log` call `[util.inspect.custom]()`: an aligned text table;
 * - tslab (which has no such hook) gets the HTML through `display(value)` or `tslab.display.html(p.toHtml())`.
 *
 * Cells are formatted as the text writers do (output/cells.ts): dates `YYYY-MM-DD`, timestamps ISO-8601
 * UTC, nulls `null`; strings are cut at `maxStringLength` and every value is HTML-escaped.
 *
 * @example
 * const table = await result.toTable();
 * preview(table, { rows: 5 }); // in a notebook cell, or console.log(preview(table))
 * await preview(result); // a QueryResult: fetches only the first rows
 */
import { inspect } from 'node:util';
import { type RecordBatch, Schema, type Table } from 'apache-arrow';
import { checkInteger, checkKeys, checkObject, invalid, optionKeys } from '../core/validate.js';
import type { FieldDescriptor } from '../core/wire.js';
import { type Cell, cellReaders } from '../output/cells.js';
import {
  type CellFormat,
  cellText,
  count,
  escapeHtml,
  isNumeric,
  shortId,
  shortTypeName,
  textTable,
} from '../output/render.js';
import {
  HTML_STYLE,
  htmlTitle,
  JUPYTER_DISPLAY,
  type MimeBundle,
  resultSchema,
  rowsText,
} from '../query/result-display.js';
import type { StreamOptions } from '../query/stream-options.js';

export interface PreviewOptions {
  /** Rows shown (minimum 0). @default 10 */
  readonly rows?: number;
  /** Longest string shown; longer ones end in `…` (minimum 1). @default 40 */
  readonly maxStringLength?: number;
}

/** For a `QueryResult`: how its first rows are read (a `types` override changes what is shown). */
export type PreviewReadOptions = Pick<
  StreamOptions,
  'types' | 'format' | 'onInvalid' | 'signal' | 'timeoutMs'
>;

/** What `preview()` needs from a query result (a `QueryResult`; structural, to keep modules acyclic). */
export interface PreviewableResult {
  readonly datasetId: string;
  readonly id: string;
  readonly total: number;
  readonly truncated: boolean;
  readonly fields: readonly FieldDescriptor[];
  stream(options: StreamOptions): AsyncIterable<unknown> & {
    readonly schema: Schema | undefined;
    destroy(): unknown;
  };
}

interface NormalizedPreviewOptions {
  readonly rows: number;
  readonly maxStringLength: number;
}

const SHOWN = { rows: true, maxStringLength: true } as const satisfies {
  readonly [K in keyof Required<PreviewOptions>]: true;
};
const READ = {
  types: true,
  format: true,
  onInvalid: true,
  signal: true,
  timeoutMs: true,
} as const satisfies {
  readonly [K in keyof Required<PreviewReadOptions>]: true;
};
const TABLE_KEYS = optionKeys<PreviewOptions>(SHOWN);
const RESULT_KEYS = optionKeys<PreviewOptions & PreviewReadOptions>({ ...SHOWN, ...READ });
const DISPLAY_KEYS = optionKeys<DisplayOptions>({ ...SHOWN, ...READ, tslab: true });

function normalizePreviewOptions(options: PreviewOptions): NormalizedPreviewOptions {
  const rows = checkInteger(options.rows ?? 10, 'rows', 0);
  const maxStringLength = checkInteger(options.maxStringLength ?? 40, 'maxStringLength', 1);
  return { rows, maxStringLength };
}

/** What a preview shows; built by `preview()`. */
export interface PreviewInit {
  /** `job_listings` for a result, `Arrow table` for a table. */
  readonly label: string;
  readonly queryId: string | undefined;
  readonly schema: Schema;
  readonly totalRows: number;
  /** Known for query results only. */
  readonly truncated: boolean | undefined;
  readonly rows: readonly (readonly Cell[])[];
  readonly maxStringLength: number;
}

export class Preview {
  readonly label: string;
  readonly queryId: string | undefined;
  readonly schema: Schema;
  /** Rows in the whole table or result (not only those shown). */
  readonly totalRows: number;
  /** Whether the service cut the result at its row cap; undefined for a table. */
  readonly truncated: boolean | undefined;
  /** The rows shown, as cells (dates `YYYY-MM-DD`, timestamps ISO-8601 UTC, null as null). */
  readonly rows: readonly (readonly Cell[])[];
  readonly #format: CellFormat;

  /** @internal Use `preview()`. */
  constructor(init: PreviewInit) {
    this.label = init.label;
    this.queryId = init.queryId;
    this.schema = init.schema;
    this.totalRows = init.totalRows;
    this.truncated = init.truncated;
    this.rows = init.rows;
    this.#format = { maxStringLength: init.maxStringLength };
  }

  #footer(): string | undefined {
    const more = this.totalRows - this.rows.length;
    if (more <= 0) return undefined;
    return `showing ${count(this.rows.length)} of ${count(this.totalRows)} rows`;
  }

  #title(): string {
    const id = this.queryId === undefined ? '' : ` · query ${shortId(this.queryId)}`;
    const cols = this.schema.fields.length;
    return `${this.label}${id} · ${rowsText(this.totalRows, this.truncated)} · ${cols} column${cols === 1 ? '' : 's'}`;
  }

  /** An aligned text table: title, column names, short Arrow types, the rows, and how many are shown. */
  toString(): string {
    const fields = this.schema.fields;
    const lines = [this.#title()];
    if (fields.length > 0) {
      lines.push(
        textTable(
          [fields.map((f) => f.name), fields.map((f) => shortTypeName(f.type))],
          this.rows.map((row) => row.map((cell) => cellText(cell, this.#format))),
          fields.map(isNumeric),
        ),
      );
    }
    const footer = this.#footer();
    if (footer) lines.push(footer);
    return lines.join('\n');
  }

  /** A self-contained HTML fragment (inline styles, every value escaped), for notebooks. */
  toHtml(): string {
    const fields = this.schema.fields;
    const right = fields.map(isNumeric);
    const align = (c: number) => (right[c] ? 'text-align: right' : 'text-align: left');
    const head = fields
      .map(
        (f, c) =>
          `<th style="${HTML_STYLE.th}; ${align(c)}">${escapeHtml(f.name)}<br>` +
          `<span style="${HTML_STYLE.muted}; font-weight: normal">${escapeHtml(shortTypeName(f.type))}</span></th>`,
      )
      .join('');
    const body = this.rows
      .map(
        (row) =>
          `<tr>${row
            .map((cell, c) => {
              const text =
                cell === null
                  ? `<span style="${HTML_STYLE.muted}; font-style: italic">null</span>`
                  : escapeHtml(cellText(cell, this.#format));
              return `<td style="${HTML_STYLE.td}; ${align(c)}">${text}</td>`;
            })
            .join('')}</tr>`,
      )
      .join('');
    const footer = this.#footer();
    const cols = fields.length;
    return (
      `<div class="dqs-preview" style="${HTML_STYLE.box}">` +
      htmlTitle(this.label, this.totalRows, this.truncated, this.queryId) +
      `<table style="border-collapse: collapse"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>` +
      `<div style="${HTML_STYLE.muted}">${footer ? `${escapeHtml(footer)} · ` : ''}${cols} column${cols === 1 ? '' : 's'}</div>` +
      '</div>'
    );
  }

  /** Deno's Jupyter kernel protocol: the MIME bundle shown for a cell's value. */
  [JUPYTER_DISPLAY](): MimeBundle {
    return { 'text/html': this.toHtml(), 'text/plain': this.toString() };
  }

  /** `console.log(p)` and the Node REPL print the text table. */
  [inspect.custom](): string {
    return this.toString();
  }
}

function isResult(value: unknown): value is PreviewableResult {
  const v = value as Partial<PreviewableResult> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.stream === 'function' &&
    typeof v.datasetId === 'string' &&
    Array.isArray(v.fields)
  );
}

/** The first `n` rows of `batches` as cells. */
function firstRows(batches: Iterable<RecordBatch>, n: number): Cell[][] {
  const rows: Cell[][] = [];
  for (const batch of batches) {
    if (rows.length >= n) break;
    const readers = cellReaders(batch);
    const take = Math.min(batch.numRows, n - rows.length);
    for (let r = 0; r < take; r++) rows.push(readers.map((read) => read(r)));
  }
  return rows;
}

function tablePreview(source: Table | RecordBatch, options: NormalizedPreviewOptions): Preview {
  const table = isTable(source);
  const batches = table ? source.batches : [source];
  return new Preview({
    label: table ? 'Arrow table' : 'Arrow record batch',
    queryId: undefined,
    schema: source.schema,
    totalRows: source.numRows,
    truncated: undefined,
    rows: firstRows(batches, options.rows),
    maxStringLength: options.maxStringLength,
  });
}

async function resultPreview(
  result: PreviewableResult,
  options: NormalizedPreviewOptions,
  read: PreviewReadOptions,
): Promise<Preview> {
  const batches: RecordBatch[] = [];
  let schema: Schema | undefined;
  if (options.rows > 0 && result.total > 0) {
    // One small page, one request at a time: a preview of a million-row result reads a few rows.
    const stream = result.stream({
      ...read,
      output: 'arrow',
      pageSize: Math.min(options.rows, 100_000),
      concurrency: 1,
      window: 1,
    });
    let rows = 0;
    try {
      for await (const batch of stream) {
        batches.push(batch as RecordBatch);
        rows += (batch as RecordBatch).numRows;
        if (rows >= options.rows) break;
      }
    } finally {
      stream.destroy();
    }
    schema = stream.schema;
  }
  schema ??= resultSchema(result.fields) ?? new Schema([]);
  return new Preview({
    label: result.datasetId,
    queryId: result.id,
    schema,
    totalRows: result.total,
    truncated: result.truncated,
    rows: firstRows(batches, options.rows),
    maxStringLength: options.maxStringLength,
  });
}

/**
 * A preview of the first rows. Synchronous for an Arrow `Table` or `RecordBatch`; for a `QueryResult`
 * a promise (it reads one page of `rows` rows, nothing more).
 */
export function preview(
  source: PreviewableResult,
  options?: PreviewOptions & PreviewReadOptions,
): Promise<Preview>;
export function preview(source: Table | RecordBatch, options?: PreviewOptions): Preview;
export function preview(
  source: Table | RecordBatch | PreviewableResult,
  options: PreviewOptions & PreviewReadOptions = {},
): Preview | Promise<Preview> {
  const result = isResult(source);
  checkKeys(
    checkObject(options, 'options'),
    result ? RESULT_KEYS : TABLE_KEYS,
    result ? 'options of `preview()` of a query result' : 'options of `preview()` of a table',
  );
  const normalized = normalizePreviewOptions(options);
  if (result) {
    const { rows: _rows, maxStringLength: _max, ...read } = options;
    return resultPreview(source, normalized, read);
  }
  if (isTable(source) || isRecordBatch(source)) return tablePreview(source, normalized);
  throw invalid('source', 'an apache-arrow Table or RecordBatch, or a QueryResult', source);
}

// Duck-typed rather than `instanceof`: a notebook may hold tables of another copy of apache-arrow.
function isTable(value: unknown): value is Table {
  const v = value as Table | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.batches) && v.schema instanceof Object;
}

function isRecordBatch(value: unknown): value is RecordBatch {
  const v = value as RecordBatch | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.numRows === 'number' &&
    v.schema instanceof Object &&
    'data' in v
  );
}

/** tslab's module, as `import * as tslab from 'tslab'` gives it. */
export interface TslabLike {
  readonly display: { html(html: string): void };
}

export interface DisplayOptions extends PreviewOptions, PreviewReadOptions {
  /** tslab's module; when absent, `import('tslab')` is tried (it resolves inside tslab's kernel). */
  readonly tslab?: TslabLike;
}

interface DenoJupyter {
  display(value: unknown, options?: { raw?: boolean }): unknown;
}

/** `import(name)`, or undefined when the module cannot be loaded. The name is a variable: optional module. */
async function optionalImport<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch {
    return undefined;
  }
}

/**
 * Shows a preview in whatever runs the code: Deno's Jupyter kernel (`Deno.jupyter.display`), tslab
 * (`tslab.display.html`), or else the text table on stdout. A `QueryResult` is previewed (its first
 * rows are read); a `Preview` is shown as is.
 *
 * @example await display(table, { rows: 20 });
 */
export async function display(
  value: Table | RecordBatch | PreviewableResult | Preview,
  options: DisplayOptions = {},
): Promise<void> {
  checkKeys(checkObject(options, 'options'), DISPLAY_KEYS, 'options of `display()`');
  const { tslab: given, ...previewOptions } = options;
  const p =
    value instanceof Preview
      ? value
      : isResult(value)
        ? await preview(value, previewOptions)
        : preview(value, previewOptions);
  const bundle = p[JUPYTER_DISPLAY]();
  const deno = (globalThis as { Deno?: { jupyter?: DenoJupyter } }).Deno?.jupyter;
  if (typeof deno?.display === 'function') {
    await deno.display(bundle, { raw: true });
    return;
  }
  const tslab = given ?? (await optionalImport<TslabLike>('tslab'));
  if (typeof tslab?.display?.html === 'function') {
    tslab.display.html(bundle['text/html']);
    return;
  }
  process.stdout.write(`${bundle['text/plain']}\n`);
}
