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
import { checkKeys, checkObject, invalid, optionKeys } from '../core/validate.js';
import type { Cell } from './cells.js';
import { csvLineBytes } from './csv-line-bytes.js';
import { ownBatch } from './own-arrow.js';

export interface CsvOptions {
  /** Write the header line of column ids. @default true */
  readonly header?: boolean;
  /**
   * Nulls as this text instead of an empty unquoted field, for readers that cannot tell `""` from an
   * empty field (it is quoted when it needs to be). Pick a text the data never holds: a value equal to
   * it reads back as null too.
   * @default undefined (an empty unquoted field)
   */
  readonly nullText?: string;
}

const NEEDS_QUOTES = /[",\r\n]/;

/** One CSV field. */
export function csvField(cell: Cell): string {
  if (cell === null) return '';
  const text = String(cell);
  if (text === '' || NEEDS_QUOTES.test(text)) return `"${text.replaceAll('"', '""')}"`;
  return text;
}

const KEYS = optionKeys<CsvOptions>({ header: true, nullText: true });

export function toCsv(options: CsvOptions = {}): Transform {
  checkKeys(checkObject(options, 'options'), KEYS, 'options of `toCsv()`');
  const header = options.header ?? true;
  if (typeof header !== 'boolean') {
    throw invalid('header', 'a boolean', header);
  }
  const nullText = options.nullText;
  if (nullText !== undefined && (typeof nullText !== 'string' || nullText === '')) {
    throw invalid('nullText', 'a non-empty string', nullText);
  }
  const nullField = nullText === undefined ? '' : csvField(nullText);
  let first = true;
  return new Transform({
    writableObjectMode: true,
    readableObjectMode: false,
    transform(input: RecordBatch, _encoding, callback) {
      try {
        const batch = ownBatch(input) ?? input;
        const head =
          first && header ? `${batch.schema.fields.map((f) => csvField(f.name)).join(',')}\r\n` : '';
        first = false;
        const bytes = csvLineBytes(batch, csvField, head, nullField);
        callback(null, bytes.length > 0 ? bytes : undefined);
      } catch (err) {
        callback(err as Error);
      }
    },
  });
}
