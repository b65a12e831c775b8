/**
 * `toJsonl()`: a Transform from `RecordBatch`es to JSON Lines (one object per row, `\n` after each, UTF-8).
 *
 * Keys are the column ids in schema order; null stays `null` (the key is always present); dates are
 * `"YYYY-MM-DD"`, timestamps ISO-8601 UTC strings; non-finite numbers, which JSON cannot carry, are `null`.
 *
 * @example await pipeline(client.stream('job_listings'), toJsonl(), process.stdout);
 */
import { Transform } from 'node:stream';
import type { RecordBatch } from 'apache-arrow';
import { type Cell, cellReaders } from './cells.js';
import { ownBatch } from './own-arrow.js';

/** One JSON value. */
export function jsonValue(cell: Cell): string {
  if (cell === null) return 'null';
  if (typeof cell === 'number') return Number.isFinite(cell) ? String(cell) : 'null';
  if (typeof cell === 'boolean') return cell ? 'true' : 'false';
  return JSON.stringify(cell);
}

function jsonLines(batch: RecordBatch): string {
  const readers = cellReaders(batch);
  // `{"id":` prefixes once per batch; each line is then concatenation, no object per row.
  const prefixes = batch.schema.fields.map((f, c) => `${c === 0 ? '{' : ','}${JSON.stringify(f.name)}:`);
  const lines: string[] = new Array(batch.numRows);
  for (let row = 0; row < batch.numRows; row++) {
    let line = '';
    for (let c = 0; c < readers.length; c++) line += prefixes[c]! + jsonValue(readers[c]!(row));
    lines[row] = readers.length ? `${line}}\n` : '{}\n';
  }
  return lines.join('');
}

export function toJsonl(): Transform {
  return new Transform({
    writableObjectMode: true,
    readableObjectMode: false,
    transform(batch: RecordBatch, _encoding, callback) {
      try {
        const text = jsonLines(ownBatch(batch) ?? batch);
        callback(null, text ? Buffer.from(text, 'utf8') : undefined);
      } catch (err) {
        callback(err as Error);
      }
    },
  });
}
