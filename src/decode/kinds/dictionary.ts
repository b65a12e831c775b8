/**
 * The `string` kind, dictionary layout (ticker-format strings): each value's bytes keyed into the page's
 * dictionary, no JS string per value; the page's distinct strings are made once.
 */

import type { DecodedColumn } from '../../convert/column-data.js';
import type { ColumnPlan } from '../../convert/plan.js';
import { type DatesAs, rowValueOf } from '../../convert/row-factory.js';
import { toText } from '../../convert/values.js';
import type { WireValue } from '../../core/wire.js';
import { ByteDictionary } from '../byte-dictionary.js';
import { BAIL, QUOTE, type Scan } from '../json-scan.js';
import { ensure, type Kind, otherValue, type PageColumn, type RowCell, reuse } from './column.js';

class DictionaryColumn implements PageColumn {
  readonly dict = new ByteDictionary();

  constructor(public ids: Int32Array) {}

  cell(s: Scan, r: number): void {
    if (s.b[s.i] !== QUOTE) {
      this.#put(r, s.wire(s.value()));
      return;
    }
    s.string();
    // Two lone surrogates both encode as U+FFFD but are different strings (different entries on the
    // reference path): bytes cannot key them.
    if (s.lone) throw BAIL;
    this.ids[r] = this.dict.id(s.text, s.start, s.end);
  }

  field(field: Buffer, len: number, quoted: boolean, r: number): void {
    // A string's field is its value: its bytes key the dictionary as they are. Empty and unquoted is null.
    this.ids[r] = len === 0 && !quoted ? -1 : this.dict.id(field, 0, len);
  }

  #put(r: number, v: WireValue): void {
    if (v === null) {
      this.ids[r] = -1;
      return;
    }
    const text = toText(v);
    if (text === undefined) throw BAIL;
    const bytes = Buffer.from(text);
    this.ids[r] = this.dict.id(bytes, 0, bytes.length);
  }

  grow(rows: number, used: number): void {
    this.ids = ensure(this.ids, rows, used);
  }

  rollBack(): void {}

  decoded(): DecodedColumn {
    return { kind: 'dictionary', ids: this.ids, entries: this.dict.entries() };
  }
}

/** A page's distinct strings of a column, keyed by their bytes: a repeated value is one string. */
export class StringCache {
  dict = new ByteDictionary();
  strings: string[] = [];
  /** Values looked up that were in the cache already, and that were not. */
  hits = 0;
  misses = 0;

  /** The string the scanner just read (no lone surrogate), made the first time it is met on the page. */
  string(s: Scan): string {
    const id = this.dict.id(s.text, s.start, s.end);
    if (id < this.strings.length) {
      this.hits++;
      return this.strings[id]!;
    }
    this.misses++;
    const text = s.str();
    this.strings.push(text);
    return text;
  }

  reset(): void {
    this.hits = 0;
    this.misses = 0;
    if (this.dict.count > 0) {
      this.dict = new ByteDictionary();
      this.strings = [];
    }
  }
}

/**
 * The row cell of a string column: a string literal made once from its bytes, taken from the page's cache
 * when `shared` says so; any other value the reference's row value.
 */
export function stringRow(
  column: ColumnPlan,
  dates: DatesAs,
  shared: (s: Scan, cache: StringCache) => boolean,
): RowCell {
  const read = rowValueOf(column, dates);
  const cache = new StringCache();
  return {
    cell(s) {
      if (s.b[s.i] !== QUOTE) return otherValue(s, read);
      s.string();
      return !s.lone && shared(s, cache) ? cache.string(s) : s.str();
    },
    reset: () => cache.reset(),
  };
}

export const DICTIONARY: Kind = {
  column: (sizing, spare) =>
    new DictionaryColumn(
      reuse(spare?.kind === 'dictionary' ? spare.ids : undefined, sizing.rows, Int32Array),
    ),
  row: (column, dates) => stringRow(column, dates, () => true),
};
