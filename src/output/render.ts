/**
 * Rendering for notebooks and terminals: Arrow types as short names, cells as text, HTML escaping, and
 * aligned text tables. Pure functions over strings, shared by `preview()` and `QueryResult`'s display hooks.
 *
 * Invariants: every piece of data that reaches HTML goes through `escapeHtml()` (a `<script>` in a value
 * is shown, never run); a cell is one line (CR, LF and tabs shown as `\r`, `\n`, `\t`) and at most
 * `maxStringLength` characters, cut with `…`.
 */
import { DataType, DateUnit, type Field, TimeUnit } from 'apache-arrow';
import type { Cell } from './cells.js';

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Text made safe for HTML element content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

const UNITS: Readonly<Record<number, string>> = {
  [TimeUnit.SECOND]: 's',
  [TimeUnit.MILLISECOND]: 'ms',
  [TimeUnit.MICROSECOND]: 'us',
  [TimeUnit.NANOSECOND]: 'ns',
};

/** A compact name of an Arrow type for table headers: `utf8`, `dict<utf8>`, `f64`, `date`, `timestamp[ms, UTC]`. */
export function shortTypeName(type: DataType): string {
  if (DataType.isDictionary(type)) return `dict<${shortTypeName(type.dictionary)}>`;
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type)) return 'utf8';
  if (DataType.isBool(type)) return 'bool';
  if (DataType.isFloat(type)) return `f${16 << type.precision}`; // Precision: HALF 0, SINGLE 1, DOUBLE 2
  if (DataType.isInt(type)) return `${type.isSigned ? 'i' : 'u'}${type.bitWidth}`;
  if (DataType.isDate(type)) return type.unit === DateUnit.DAY ? 'date' : 'date64';
  if (DataType.isTimestamp(type)) {
    const unit = UNITS[type.unit] ?? String(type.unit);
    return `timestamp[${unit}${type.timezone ? `, ${type.timezone}` : ''}]`;
  }
  return String(type).toLowerCase();
}

export interface CellFormat {
  readonly maxStringLength: number;
}

const CONTROL = /[\r\n\t]/g;
const CONTROL_TEXT: Readonly<Record<string, string>> = { '\r': '\\r', '\n': '\\n', '\t': '\\t' };

/** Cuts `text` to `max` characters (code points, so no surrogate pair is split), ending in `…`. */
export function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  const points = Array.from(text);
  if (points.length <= max) return text;
  return `${points.slice(0, Math.max(0, max - 1)).join('')}…`;
}

/**
 * A cell as one line of text: null as `null`; dates and timestamps arrive already as `YYYY-MM-DD` and
 * ISO-8601 (see output/cells.ts); numbers as JavaScript prints them.
 */
export function cellText(cell: Cell, format: CellFormat): string {
  if (cell === null) return 'null';
  if (typeof cell !== 'string') return String(cell);
  return cap(
    cell.replace(CONTROL, (c) => CONTROL_TEXT[c]!),
    format.maxStringLength,
  );
}

/** Right-aligned in tables: numbers (as in spreadsheets and data-frame printers). */
export function isNumeric(field: Field): boolean {
  return DataType.isFloat(field.type) || DataType.isInt(field.type) || DataType.isDecimal(field.type);
}

/** `12,345`, whatever the machine's locale. */
export function count(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `3f2a9c1b2d4e…`: enough of a query id to recognise it. */
export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 12)}…` : id;
}

/**
 * An aligned text table: a header line, an optional second header line (types), a rule, then the rows.
 * Columns are two spaces apart; `right[i]` right-aligns column i.
 */
export function textTable(
  headers: readonly (readonly string[])[],
  rows: readonly (readonly string[])[],
  right: readonly boolean[],
): string {
  const all = [...headers, ...rows];
  const columns = headers[0]?.length ?? 0;
  const widths = Array.from({ length: columns }, (_, c) =>
    Math.max(1, ...all.map((r) => Array.from(r[c] ?? '').length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, c) => {
        const pad = widths[c]! - Array.from(cell).length;
        return right[c] ? ' '.repeat(pad) + cell : cell + ' '.repeat(pad);
      })
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '─'.repeat(w)).join('  ');
  return [...headers.map(line), rule, ...rows.map(line)].join('\n');
}
