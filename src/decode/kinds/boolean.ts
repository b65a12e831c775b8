/** The `boolean` kind (0 false, 1 true, 2 null): the JSON literals, anything else by `toBooleanBit`. */

import type { DecodedColumn } from '../../convert/column-data.js';
import { rowValueOf } from '../../convert/row-factory.js';
import { toBooleanBit } from '../../convert/values.js';
import type { WireValue } from '../../core/wire.js';
import { fieldValue } from '../csv.js';
import { BAIL, FALSE, NULL, type Scan, TRUE, utf8 } from '../json-scan.js';
import { ensure, type Kind, otherValue, type PageColumn, reuse } from './column.js';

class BooleanColumn implements PageColumn {
  constructor(public values: Uint8Array) {}

  cell(s: Scan, r: number): void {
    const t = s.value();
    this.values[r] = t === TRUE ? 1 : t === FALSE ? 0 : t === NULL ? 2 : bit(s.wire(t));
  }

  field(field: Buffer, len: number, quoted: boolean, r: number): void {
    this.values[r] = len === 0 && !quoted ? 2 : bit(fieldValue(utf8(field, 0, len), quoted, 'boolean'));
  }

  grow(rows: number, used: number): void {
    this.values = ensure(this.values, rows, used);
  }

  rollBack(): void {}

  decoded(): DecodedColumn {
    return { kind: 'boolean', values: this.values };
  }
}

function bit(v: WireValue): number {
  const b = toBooleanBit(v);
  if (b < 0) throw BAIL;
  return b;
}

export const BOOLEAN: Kind = {
  column: (sizing, spare) =>
    new BooleanColumn(reuse(spare?.kind === 'boolean' ? spare.values : undefined, sizing.rows, Uint8Array)),
  row(column, dates) {
    const read = rowValueOf(column, dates);
    return {
      cell(s) {
        const c = s.b[s.i];
        // `t`, `f` and `n` start nothing else a cell may hold.
        if (c === 0x74 || c === 0x66 || c === 0x6e) {
          const t = s.keyword();
          return t === NULL ? null : t === TRUE;
        }
        return otherValue(s, read);
      },
    };
  },
};
