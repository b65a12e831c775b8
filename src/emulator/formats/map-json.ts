import type { PageData } from './page.js';
import { pageJson } from './page.js';

/**
 * Map JSON: the table page, but each row an object keyed by field id, in field order; nulls present as
 * `null` members.
 */
export function mapJson(page: PageData): Buffer {
  const ids = page.fields.map((f) => f.id);
  const parts: string[] = [];
  for (const chunk of page.chunks()) {
    if (chunk.length === 0) continue;
    const objects = chunk.map((row) => {
      // Same keys in the same order every row: V8 gives all of them one shape, and JSON.stringify is native.
      const object: Record<string, unknown> = {};
      for (let j = 0; j < ids.length; j++) object[ids[j]!] = row[j] ?? null;
      return object;
    });
    parts.push(JSON.stringify(objects).slice(1, -1));
  }
  return Buffer.from(pageJson(page, `[${parts.join(',')}]`), 'utf8');
}
