/**
 * The rows of a decoded page as the converters take them: wire rows (the reference decoders) or decoded
 * columns (the fast decoders). Defined here, where they are consumed, so the decoders (which produce them)
 * point down to the converters and never the other way.
 */
import type { WireValue } from '../core/wire.js';
import type { DecodedColumns } from './column-data.js';

/** The rows of one response: wire rows in field order, or decoded columns. */
export type PagePart = WireValue[][] | DecodedColumns;

/** Rows in a part. */
export function partLength(part: PagePart): number {
  return part.length;
}

/** A page as the converters see it: its first row's position, its parts in order, their rows in all. */
export interface ConvertiblePage {
  readonly range: { readonly start: number; readonly limit: number };
  readonly parts: readonly PagePart[];
  readonly rowCount: number;
}
