/** Small text helpers for what the CLI prints: aligned tables and human-readable numbers. */
import { escapeControls } from '../core/control-chars.js';

export interface Column<T> {
  readonly header: string;
  /** The cell: any value from the server (null and undefined print empty). */
  readonly value: (row: T) => unknown;
  /** Right-align (numbers). */
  readonly right?: boolean;
}

/**
 * An aligned table, one line per row, columns two spaces apart. With `width` (a terminal's), the last
 * column is cut to fit with `…`, so long summaries do not wrap; pipes get whole values.
 */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[], width?: number): string {
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const lines = [columns.map((c) => c.header), ...cells].map((row) =>
    row
      .map((cell, i) => {
        if (i === row.length - 1 && !columns[i]!.right) return cell;
        return columns[i]!.right ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!);
      })
      .join('  ')
      .trimEnd(),
  );
  return lines
    .map((l) => (width && l.length > width ? `${l.slice(0, Math.max(1, width - 1))}…` : l))
    .join('\n');
}

/**
 * Any value from the server as one line that is safe on a terminal: null and undefined are empty (a
 * `sector: null` is not worth a crash), line breaks become spaces, other control and bidi characters
 * are escaped (`\x1b`, `\u202e`).
 */
export function cell(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : String(value);
  return escapeControls(text.replace(/\s*[\r\n]+\s*/g, ' '));
}

/** `12,345` (grouping independent of the machine's locale, so output and tests are stable). */
export function count(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** `1.2 MB`, `532 B`: decimal units, as file managers show sizes. */
export function bytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
}

/** `0.8 s`, `12 s`, `3 min 05 s`. */
export function duration(ms: number): string {
  const s = ms / 1000;
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.round(s - m * 60)).padStart(2, '0')} s`;
}
