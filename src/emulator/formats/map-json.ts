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
  const parts: string[] = [];
  for (const chunk of page.chunks()) {
    for (const row of chunk) {
      let text = '';
      for (let j = 0; j < keys.length; j++) text += keys[j]! + valueJson(row[j] ?? null);
      parts.push(keys.length === 0 ? '{}' : `${text}}`);
    }
  }
  return Buffer.from(pageJson(page, `[${parts.join(',')}]`), 'utf8');
}
