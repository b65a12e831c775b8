import type { PageData } from './page.js';
import { pageJson } from './page.js';

/** Table JSON: the spec's result page; `rows[i][j]` is the value of `fields[j]`. */
export function tableJson(page: PageData): Buffer {
  return Buffer.from(pageJson(page, JSON.stringify(page.rows)), 'utf8');
}
