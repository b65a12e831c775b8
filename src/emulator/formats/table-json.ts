import { jsonPageWriter, type PageMeta, type PageWriter } from './page.js';

/** Table JSON: the spec's result page; `rows[i][j]` is the value of `fields[j]`. */
export function tableJson(page: PageMeta): PageWriter {
  return jsonPageWriter(page, (rows) => JSON.stringify(rows));
}
