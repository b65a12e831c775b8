import type { WireValue } from '../../core/wire.js';
import type { PageData } from './page.js';
import { pageJson } from './page.js';

function valueJson(value: WireValue): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/**
 * Map JSON: the table page, but each row an object keyed by field id, in field order; nulls present as
 * `null` members.
 */
export function mapJson(page: PageData): Buffer {
  const keys = page.fields.map((f, j) => `${j === 0 ? '{' : ','}${JSON.stringify(f.id)}:`);
  const parts: string[] = new Array(page.rows.length);
  for (let i = 0; i < page.rows.length; i++) {
    const row = page.rows[i]!;
    let text = '';
    for (let j = 0; j < keys.length; j++) text += keys[j]! + valueJson(row[j] ?? null);
    parts[i] = keys.length === 0 ? '{}' : `${text}}`;
  }
  return Buffer.from(pageJson(page, `[${parts.join(',')}]`), 'utf8');
}
