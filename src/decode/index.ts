/**
 * Pure decoders, one per result format, behind one small interface: a body (bytes as they arrive) and
 * the column plan in, chunks of wire rows out, in field order, the values table JSON would carry. The
 * converters (src/convert) type them; streaming and paging live above.
 */

import type { PageRange } from '../convert/batch-builder.js';
import type { ColumnPlan } from '../convert/plan.js';
import { DecodeError, safeRepr } from '../core/errors.js';
import type { WireValue } from '../core/wire.js';
import { decodeCsv } from './csv.js';
import { parseTablePage } from './table-json.js';
import { decodeXlsx } from './xlsx.js';

export { type CsvDecodeOptions, decodeCsv } from './csv.js';
export { parseTablePage } from './table-json.js';
export { decodeXlsx, type XlsxDecodeOptions } from './xlsx.js';

/** What every streaming decoder is: body chunks + plan + the page's request → chunks of wire rows. */
export type RowDecoder = (
  body: AsyncIterable<Uint8Array | string>,
  plan: readonly ColumnPlan[],
  where: PageRange,
) => AsyncGenerator<WireValue[][]>;

/**
 * Table JSON behind the same interface: reads the whole body (JSON cannot be parsed in pieces with
 * `JSON.parse`), checks the page's fields are the plan's columns, yields its rows.
 */
export async function* decodeTableJson(
  body: AsyncIterable<Uint8Array | string>,
  plan: readonly ColumnPlan[],
  where: PageRange,
): AsyncGenerator<WireValue[][]> {
  const parts: Buffer[] = [];
  for await (const chunk of body)
    parts.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk));
  const page = parseTablePage(Buffer.concat(parts).toString('utf8'), where);
  const ids = page.fields.map((f) => f.id);
  if (ids.length !== plan.length || plan.some((c) => ids[c.index] !== c.id)) {
    throw new DecodeError(
      `The page's fields are not the planned columns: expected ${safeRepr(plan.map((c) => c.id).join(','))}, got ${safeRepr(ids.join(','))}`,
      { page: where },
    );
  }
  if (page.rows.length > 0) yield page.rows;
}

/** The streaming decoder for a format name. */
export const rowDecoders: Readonly<Record<'table' | 'csv' | 'xlsx', RowDecoder>> = {
  table: decodeTableJson,
  csv: (body, plan, where) => decodeCsv(body, plan, where),
  xlsx: (body, plan, where) => decodeXlsx(body, plan, where),
};
