import type { WireValue } from '../../core/wire.js';
import { bigIntegerDigits } from '../big-integers.js';
import type { PageMeta, PageWriter } from './page.js';

const NEEDS_QUOTES = /[",\r\n]/;

/**
 * One CSV field. The empty string is always quoted (`""`) and null is an empty unquoted field: the only
 * way CSV can keep the two apart, and the decoder reads the quoting.
 */
function csvField(value: WireValue): string {
  if (value === null) return '';
  if (typeof value !== 'string') return String(value);
  const digits = bigIntegerDigits(value);
  if (digits !== undefined) return digits;
  if (value === '') return '""';
  return NEEDS_QUOTES.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** RFC 4180 with CRLF line ends; every page a complete document with its own header line; no BOM. */
export function csv(page: PageMeta): PageWriter {
  const width = page.fields.length;
  const parts: Buffer[] = [Buffer.from(`${page.fields.map((f) => csvField(f.id)).join(',')}\r\n`, 'utf8')];
  return {
    add(rows) {
      let text = '';
      for (const row of rows) {
        let line = '';
        for (let j = 0; j < width; j++) line += (j === 0 ? '' : ',') + csvField(row[j] ?? null);
        text += `${line}\r\n`;
      }
      parts.push(Buffer.from(text, 'utf8'));
    },
    finish: () => Buffer.concat(parts),
  };
}
