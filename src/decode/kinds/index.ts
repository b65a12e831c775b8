/**
 * The column kinds of the byte decoders, one file each and one entry here. A kind without an entry is a
 * compile error; the decoders look a column's kind up once per page, never per value.
 */

import type { ColumnPlan } from '../../convert/plan.js';
import { usesDictionary } from '../../convert/schema.js';
import { BOOLEAN } from './boolean.js';
import type { Kind } from './column.js';
import { DATE } from './date.js';
import { DATETIME } from './datetime.js';
import { DICTIONARY } from './dictionary.js';
import { NUMBER } from './number.js';
import { UTF8 } from './utf8.js';

export type { Kind, PageColumn, RowCell, Sizing } from './column.js';
export { pageRowCapacity } from './column.js';

/** Per layout (schema.ts: strings are plain or, for ticker-format ones, dictionaries), its kind. */
const KINDS = {
  number: NUMBER,
  date: DATE,
  datetime: DATETIME,
  boolean: BOOLEAN,
  utf8: UTF8,
  dictionary: DICTIONARY,
};

/** The kind of a planned column. */
export function kindOf(column: ColumnPlan): Kind {
  if (column.kind !== 'string') return KINDS[column.kind];
  return usesDictionary(column.kind, column.descriptor) ? KINDS.dictionary : KINDS.utf8;
}
