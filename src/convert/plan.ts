/**
 * A column plan: for each field descriptor, the column's kind (from its declared type or the caller's
 * override), its position in wire rows, and its Arrow field. Everything downstream (builder, row factory,
 * CSV/XLSX decoders) works from the plan, so a type override applies the same way to every format.
 */

import type { Field } from 'apache-arrow';
import { DecodeError, InvalidArgumentError, safeRepr } from '../core/errors.js';
import { invalid } from '../core/validate.js';
import type { FieldDescriptor } from '../core/wire.js';
import { COLUMN_KINDS, type ColumnKind, columnKind, isColumnKind } from './column-kind.js';
import { arrowField } from './schema.js';
import type { BigNumbers } from './values.js';

export interface ColumnPlan {
  /** The descriptor `id`: Arrow column name and row-object key. */
  readonly id: string;
  /** Position of the column in wire rows (`rows[i][index]`). */
  readonly index: number;
  readonly kind: ColumnKind;
  readonly descriptor: FieldDescriptor;
  readonly field: Field;
  /** How a `number` column carries its values (the `bigNumbers` option); `'error'`: Float64. */
  readonly bigNumbers: BigNumbers;
}

/**
 * Plans the columns of `fields`; `overrides` maps column ids to kinds and wins over the declared types.
 *
 * @throws InvalidArgumentError (`types`) for an override naming no column or an unknown kind.
 * @throws DecodeError when two descriptors share an id (columns could not be told apart by name).
 * @example planColumns(page.fields, { posted_date: 'date' })
 */
export function planColumns(
  fields: readonly FieldDescriptor[],
  overrides?: Readonly<Record<string, ColumnKind>>,
  bigNumbers: BigNumbers = 'error',
): ColumnPlan[] {
  const seen = new Set<string>();
  for (const f of fields) {
    if (seen.has(f.id))
      throw new DecodeError(`Duplicate column id ${safeRepr(f.id)} in the field descriptors`);
    seen.add(f.id);
  }
  if (overrides !== undefined) checkOverrides(overrides, seen);
  return fields.map((descriptor, index) => {
    const override =
      overrides !== undefined && Object.hasOwn(overrides, descriptor.id)
        ? overrides[descriptor.id]
        : undefined;
    const kind = override ?? columnKind(descriptor.type);
    const field = arrowField(descriptor, kind, index, bigNumbers);
    return { id: descriptor.id, index, kind, descriptor, field, bigNumbers };
  });
}

function checkOverrides(overrides: Readonly<Record<string, unknown>>, ids: ReadonlySet<string>): void {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw invalid('types', 'an object mapping column ids to kinds', overrides);
  }
  for (const [id, kind] of Object.entries(overrides)) {
    if (!ids.has(id)) {
      throw new InvalidArgumentError(
        'types',
        `no column ${safeRepr(id)} in this result; columns are: ${[...ids].map((c) => safeRepr(c)).join(', ')}`,
      );
    }
    if (!isColumnKind(kind)) {
      throw new InvalidArgumentError(
        'types',
        `column ${safeRepr(id)}: expected one of ${COLUMN_KINDS.join(', ')}, got ${safeRepr(kind)}`,
      );
    }
  }
}
