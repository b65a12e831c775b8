import type { WireValue } from '../../core/wire.js';
import type { PageData } from './page.js';

const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One CSV field. The empty string is always quoted (`""`) and null is an empty unquoted field: the only
 * way CSV can keep the two apart, and the decoder reads the quoting.
 */
function csvField(value: WireValue): string {
  if (value === null) return '';
  if (typeof value !== 'string') return String(value);
  if (value === '') return '""';
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** RFC 4180 with CRLF line ends; every page a complete document with its own header line; no BOM. */
export function csv(page: PageData): Buffer {
  const lines: string[] = [page.fields.map((f) => csvField(f.id)).join(',')];
  for (const chunk of page.chunks()) {
    for (const row of chunk) {
      let line = '';
      for (let j = 0; j < page.fields.length; j++) line += (j === 0 ? '' : ',') + csvField(row[j] ?? null);
      lines.push(line);
    }
  }
  return Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8');
}
