/**
 * How a `QueryResult` shows itself without fetching a row: `util.inspect` (a plain REPL, `console.log`)
 * prints a text summary, and notebook kernels that speak Deno's display protocol
 * (`[Symbol.for('Jupyter.display')]()`) get the same as HTML. Both list the columns with the Arrow types
 * the stream will produce, so users see what `toTable()` would give before asking for it.
 *
 * This module must not import `query/query-result.ts` (which imports it): it works on the result's plain
 * properties only.
 */
import type { Schema } from 'apache-arrow';
import { buildSchema, planColumns } from '../convert/index.js';
import type { FieldDescriptor } from '../core/wire.js';
import { count, escapeHtml, shortId, textTable } from '../output/render.js';
import type { ResultPart } from './split-info.js';

/** `Symbol.for('Jupyter.display')`: Deno's Jupyter kernel calls it on a cell's value for a MIME bundle. */
export const JUPYTER_DISPLAY: unique symbol = Symbol.for('Jupyter.display');

/** The MIME bundle of Deno's display protocol (also what `display()` hands other kernels). */
export interface MimeBundle {
  readonly 'text/html': string;
  readonly 'text/plain': string;
}

/** What the summary needs from a result. */
export interface ResultLike {
  readonly datasetId: string;
  readonly id: string;
  readonly total: number;
  readonly truncated: boolean;
  readonly fields: readonly FieldDescriptor[];
  /** A split result's parts (`split: true`), in the order their rows come. */
  readonly parts?: readonly ResultPart[] | undefined;
}

/** Tickers of a part as a phrase: all of a few, or the first and last of many. */
function tickersText(tickers: readonly string[]): string {
  if (tickers.length <= 3) return tickers.join(', ');
  return `${tickers[0]}, ${tickers[1]} … ${tickers.at(-1)} (${tickers.length} tickers)`;
}

/**
 * A split result's parts as a table: the part, its tickers, its rows, and (when one is) whether it is
 * still truncated (a single ticker over the cap).
 */
function partTable(parts: readonly ResultPart[]): { head: string[]; rows: string[][] } {
  const note = parts.some((p) => p.truncated);
  return {
    head: ['part', 'tickers', 'rows', ...(note ? [''] : [])],
    rows: parts.map((p, i) => [
      String(i + 1),
      tickersText(p.tickers),
      count(p.total),
      ...(note ? [p.truncated ? 'TRUNCATED (one ticker over the row cap)' : ''] : []),
    ]),
  };
}

/** The Arrow schema a stream of the result will have (default column types); undefined if unplannable. */
export function resultSchema(fields: readonly FieldDescriptor[]): Schema | undefined {
  try {
    return buildSchema(planColumns([...fields]));
  } catch {
    // Duplicate column ids: the stream would fail with a DecodeError; the summary just shows descriptors.
    return undefined;
  }
}

/** `18,946 rows · complete`, or the truncation warning. */
export function rowsText(total: number, truncated: boolean | undefined): string {
  const rows = `${count(total)} row${total === 1 ? '' : 's'}`;
  if (truncated === undefined) return rows;
  return `${rows} · ${truncated ? "TRUNCATED at the service's row cap" : 'complete'}`;
}

interface ColumnInfo {
  readonly name: string;
  readonly type: string;
  readonly label: string;
}

function columns(result: ResultLike): ColumnInfo[] {
  const schema = resultSchema(result.fields);
  return result.fields.map((f, i) => ({
    name: f.id,
    type: schema ? String(schema.fields[i]!.type) : `(${f.type})`,
    label: typeof f.display_name === 'string' ? f.display_name : '',
  }));
}

function title(result: ResultLike): string {
  return `${result.datasetId} · query ${shortId(result.id)} · ${rowsText(result.total, result.truncated)}`;
}

/** The text summary: a title line, then one line per column (id, Arrow type, display name). */
export function resultText(result: ResultLike): string {
  const cols = columns(result);
  const table = textTable(
    [['column', 'arrow type', 'name']],
    cols.map((c) => [c.name, c.type, c.label]),
    [false, false, false],
  );
  const indent = (text: string) =>
    text
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n');
  const parts = result.parts && partTable(result.parts);
  const split = parts
    ? `\n  read in ${parts.rows.length} parts (split: true), in this order:\n${indent(
        textTable([parts.head], parts.rows, [true, false, true, false]),
      )}`
    : '';
  return `QueryResult ${title(result)}\n${indent(table)}${split}`;
}

const STYLE = {
  box: 'font-family: system-ui, sans-serif; font-size: 13px',
  title: 'margin: 0 0 4px 0',
  warn: 'color: #b00020; font-weight: 600',
  muted: 'color: #666',
  th: 'text-align: left; padding: 2px 10px 2px 0; border-bottom: 1px solid #ccc',
  td: 'text-align: left; padding: 1px 10px 1px 0; font-family: ui-monospace, monospace',
} as const;

/** The HTML title line shared with `Preview`: dataset, query id, rows, and truncation in red. */
export function htmlTitle(
  label: string,
  total: number,
  truncated: boolean | undefined,
  queryId: string | undefined,
): string {
  const parts = [`<b>${escapeHtml(label)}</b>`];
  if (queryId !== undefined) parts.push(`query <code>${escapeHtml(shortId(queryId))}</code>`);
  parts.push(`<b>${count(total)}</b> row${total === 1 ? '' : 's'}`);
  if (truncated === true) parts.push(`<span style="${STYLE.warn}">TRUNCATED at the service's row cap</span>`);
  else if (truncated === false) parts.push('complete');
  return `<div style="${STYLE.title}">${parts.join(' · ')}</div>`;
}

/** The HTML summary: title line and a table of columns; no rows (nothing is fetched). */
export function resultHtml(result: ResultLike): string {
  const rows = columns(result)
    .map(
      (c) =>
        `<tr><td style="${STYLE.td}">${escapeHtml(c.name)}</td><td style="${STYLE.td}">${escapeHtml(c.type)}</td>` +
        `<td style="${STYLE.td}">${escapeHtml(c.label)}</td></tr>`,
    )
    .join('');
  const table = result.parts && partTable(result.parts);
  const parts = table
    ? `<div style="${STYLE.title}">read in <b>${table.rows.length}</b> parts (<code>split: true</code>), in this order:</div>` +
      `<table style="border-collapse: collapse; margin-bottom: 6px"><thead><tr>${table.head
        .map((h) => `<th style="${STYLE.th}">${h}</th>`)
        .join('')}</tr></thead><tbody>${table.rows
        .map(
          (cells) =>
            `<tr>${cells.map((c, i) => `<td style="${i === 3 ? STYLE.warn : STYLE.td}">${escapeHtml(c)}</td>`).join('')}</tr>`,
        )
        .join('')}</tbody></table>`
    : '';
  return (
    `<div class="dqs-result" style="${STYLE.box}">` +
    htmlTitle(result.datasetId, result.total, result.truncated, result.id) +
    parts +
    `<table style="border-collapse: collapse"><thead><tr><th style="${STYLE.th}">column</th>` +
    `<th style="${STYLE.th}">Arrow type</th><th style="${STYLE.th}">name</th></tr></thead><tbody>${rows}</tbody></table>` +
    `<div style="${STYLE.muted}">No rows fetched yet: <code>await preview(result)</code> shows the first ones.</div>` +
    '</div>'
  );
}

export function resultBundle(result: ResultLike): MimeBundle {
  return { 'text/html': resultHtml(result), 'text/plain': resultText(result) };
}

export { STYLE as HTML_STYLE };
