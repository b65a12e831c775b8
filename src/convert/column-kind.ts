/**
 * How a column is typed on our side. The service declares a `type` per field descriptor (the spec only
 * shows `string`); we map the names a service may plausibly use onto five kinds, and anything we do not
 * know stays a string, so an unexpected declaration never loses data.
 */

export type ColumnKind = 'string' | 'number' | 'date' | 'datetime' | 'boolean';

/** Every kind, in a stable order (for messages and validation). */
export const COLUMN_KINDS: readonly ColumnKind[] = ['string', 'number', 'date', 'datetime', 'boolean'];

const KIND_OF_TYPE: ReadonlyMap<string, ColumnKind> = new Map<string, ColumnKind>([
  ['number', 'number'],
  ['integer', 'number'],
  ['int', 'number'],
  ['float', 'number'],
  ['double', 'number'],
  ['date', 'date'],
  ['datetime', 'datetime'],
  ['timestamp', 'datetime'],
  ['boolean', 'boolean'],
  ['bool', 'boolean'],
  ['string', 'string'],
]);

/**
 * The kind for a descriptor's `type`, case-insensitively. Unknown types map to `'string'`.
 *
 * @example columnKind('integer') // 'number'
 */
export function columnKind(descriptorType: string): ColumnKind {
  return KIND_OF_TYPE.get(String(descriptorType).trim().toLowerCase()) ?? 'string';
}

export function isColumnKind(value: unknown): value is ColumnKind {
  return typeof value === 'string' && (COLUMN_KINDS as readonly string[]).includes(value);
}
