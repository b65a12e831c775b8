/**
 * The rows of a decoded page as the converters take them: wire rows (the reference decoders), decoded
 * columns (the fast decoders, for Arrow) or row objects already made (the table-JSON row decoder, for
 * `output: 'rows'`). Defined here, where they are consumed, so the decoders (which produce them) point
 * down to the converters and never the other way.
 */
import type { WireValue } from '../core/wire.js';
import type { DecodedColumns } from './column-data.js';

/**
 * Row objects a decoder made straight from a page's bytes, the same objects (keys, order, values) the
 * row converters make from that page's wire rows.
 */
export interface MadeRows {
  readonly length: number;
  readonly objects: Record<string, unknown>[];
}

/** The rows of one response: wire rows in field order, decoded columns, or row objects. */
export type PagePart = WireValue[][] | DecodedColumns | MadeRows;

/** Rows in a part. */
export function partLength(part: PagePart): number {
  return part.length;
}

/** Whether a part is decoded columns (whose buffers a fast decoder takes back once they are copied). */
export function isDecodedColumns(part: PagePart): part is DecodedColumns {
  return !Array.isArray(part) && 'columns' in part;
}

/** A page as the converters see it: its first row's position, its parts in order, their rows in all. */
export interface ConvertiblePage {
  readonly range: { readonly start: number; readonly limit: number };
  readonly parts: readonly PagePart[];
  readonly rowCount: number;
}
