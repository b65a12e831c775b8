import type { PageData } from './page.js';
import { pageJson } from './page.js';

/** Table JSON: the spec's result page; `rows[i][j]` is the value of `fields[j]`. */
export function tableJson(page: PageData): Buffer {
  const parts: string[] = [];
  for (const chunk of page.chunks()) {
    // One native stringify per chunk, brackets dropped so the chunks join into one array.
    if (chunk.length > 0) parts.push(JSON.stringify(chunk).slice(1, -1));
  }
  return Buffer.from(pageJson(page, `[${parts.join(',')}]`), 'utf8');
}
