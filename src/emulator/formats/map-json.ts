import { jsonPageWriter, type PageMeta, type PageWriter } from './page.js';

/**
 * Map JSON: the table page, but each row an object keyed by field id, in field order; nulls present as
 * `null` members.
 */
export function mapJson(page: PageMeta): PageWriter {
  const ids = page.fields.map((f) => f.id);
  return jsonPageWriter(page, (rows) =>
    JSON.stringify(
      rows.map((row) => {
        // Same keys in the same order every row: V8 gives all of them one shape, and JSON.stringify is native.
        const object: Record<string, unknown> = {};
        for (let j = 0; j < ids.length; j++) object[ids[j]!] = row[j] ?? null;
        return object;
      }),
    ),
  );
}
