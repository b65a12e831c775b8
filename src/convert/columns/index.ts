/**
 * The column kinds, one file each (as flechette's `build/builders/<type>.js`), and the one table from a
 * kind to its accumulator. Adding a column kind here = one file + one entry in `COLUMNS` (the table's
 * type makes a kind without an entry a compile error). The batch builder looks the table up once per
 * column, never per value: each kind's append loops stay monomorphic.
 */

import { DataType } from 'apache-arrow';
import type { ColumnKind } from '../column-kind.js';
import type { ColumnPlan } from '../plan.js';
import { BoolColumn } from './boolean.js';
import type { ColumnAccumulator } from './column.js';
import { DateDayColumn } from './date.js';
import { TimestampColumn } from './datetime.js';
import { DictionaryColumn } from './dictionary.js';
import { Int64Column, NumberTextColumn } from './exact-number.js';
import { Float64Column } from './number.js';
import { Utf8Column } from './utf8.js';

export type { ColumnAccumulator, WireRows } from './column.js';

/** Per kind, its accumulator for a column of that kind's Arrow type (see schema.ts's `arrowType`). */
const COLUMNS: { readonly [K in ColumnKind]: (type: DataType) => ColumnAccumulator } = {
  // Numbers have three layouts: `bigNumbers` makes them Int64 or text (schema.ts).
  number: (type) =>
    DataType.isInt(type)
      ? new Int64Column(type)
      : DataType.isUtf8(type)
        ? new NumberTextColumn(type)
        : new Float64Column(type),
  date: (type) => new DateDayColumn(type),
  datetime: (type) => new TimestampColumn(type),
  boolean: (type) => new BoolColumn(type),
  // Strings have two layouts: the schema makes ticker-like columns dictionaries.
  string: (type) => (DataType.isDictionary(type) ? new DictionaryColumn(type) : new Utf8Column(type)),
};

/** The accumulator for a planned column (its Arrow type decides the layout). */
export function accumulatorFor(column: ColumnPlan): ColumnAccumulator {
  return COLUMNS[column.kind](column.field.type as DataType);
}
