/**
 * `toCsv()`: a Transform from `RecordBatch`es to RFC 4180 CSV bytes (UTF-8, no BOM, CRLF line ends).
 *
 * - Header: the column ids (Arrow field names), written with the first batch.
 * - A field is quoted when it holds a comma, a quote, CR or LF (inner quotes doubled). The empty string
 *   is always written `""` and null as an empty unquoted field, as the service's own CSV does
 *   (docs/wire-formats.md): that is the only way CSV keeps the two apart.
 * - Dates `YYYY-MM-DD`, timestamps ISO-8601 UTC, numbers as JavaScript prints them, booleans `true`/`false`.
 *
 * @example await pipeline(client.stream('job_listings'), toCsv(), createWriteStream('jobs.csv'));
 */
import { Transform } from 'node:stream';
import type { RecordBatch } from 'apache-arrow';
import { invalid } from '../core/validate.js';
import { type Cell, cellReaders } from './cells.js';

export interface CsvOptions {
  /** Write the header line of column ids. @default true */
  readonly header?: boolean;
}

const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV field. */
export function csvField(cell: Cell): string {
  if (cell === null) return '';
  const text = String(cell);
  if (text === '' || NEEDS_QUOTES.test(text)) return `"${text.replaceAll('"', '""')}"`;
  return text;
}

function csvLines(batch: RecordBatch): string {
  const readers = cellReaders(batch);
  const lines: string[] = new Array(batch.numRows);
  const fields: string[] = new Array(readers.length);
  for (let row = 0; row < batch.numRows; row++) {
    for (let c = 0; c < readers.length; c++) fields[c] = csvField(readers[c]!(row));
    lines[row] = fields.join(',');
  }
  return lines.length ? `${lines.join('\r\n')}\r\n` : '';
}

export function toCsv(options: CsvOptions = {}): Transform {
  const header = options.header ?? true;
  if (typeof header !== 'boolean') {
    throw invalid('header', 'a boolean', header);
  }
  let first = true;
  return new Transform({
    writableObjectMode: true,
    readableObjectMode: false,
    transform(batch: RecordBatch, _encoding, callback) {
      try {
        let text = '';
        if (first && header) text = `${batch.schema.fields.map((f) => csvField(f.name)).join(',')}\r\n`;
        first = false;
        text += csvLines(batch);
        callback(null, text ? Buffer.from(text, 'utf8') : undefined);
      } catch (err) {
        callback(err as Error);
      }
    },
  });
}
