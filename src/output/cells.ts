/**
 * Reading Arrow cells as text-ready values, shared by the CSV and JSONL writers.
 *
 * Dates become `YYYY-MM-DD` and timestamps ISO-8601 UTC (`2024-02-29T12:00:00.000Z`) here, once, so both
 * text formats agree. The column types `RecordBatchBuilder` produces (Utf8, Dictionary<Utf8>, Float64,
 * DateDay, Timestamp, Bool) read their buffers directly: `Vector.get()` decodes every string and every
 * dictionary entry again, which costs more than the rest of the writer. Any other type goes through
 * `Vector.get()`, so batches from elsewhere (a Parquet reader, `tableFromArrays`) still write correctly.
 */
import { type Data, DataType, DateUnit, type RecordBatch, type Vector } from 'apache-arrow';

/** A cell ready for text output. Numbers may be non-finite; each writer decides how to spell those. */
export type Cell = string | number | boolean | null;

/** Reads row `index` (0-based, within the batch) of one column. */
export type CellReader = (index: number) => Cell;

const MS_PER_DAY = 86_400_000;

/** Days since 1970-01-01 of 0000-01-01 and of 9999-12-31: the years `toISOString` writes with 4 digits. */
const FIRST_DAY = -719_528;
const LAST_DAY = 2_932_896;
const PAD2 = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const PAD3 = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

// The last day formatted: a column's dates and timestamps come in runs of the same day.
let lastDay = Number.NaN;
let lastDayText = '';

/**
 * `YYYY-MM-DD` of a day of years 0 to 9999 (H. Hinnant's civil_from_days), as `toISOString` writes it:
 * ~5x faster than a `Date` per value, which was most of a CSV's dates and timestamps.
 */
function civilDate(days: number): string {
  if (days === lastDay) return lastDayText;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  lastDay = days;
  lastDayText = `${String(year).padStart(4, '0')}-${PAD2[month]}-${PAD2[day]}`;
  return lastDayText;
}

/** `YYYY-MM-DD` of a day count since 1970-01-01 (UTC, proleptic Gregorian). */
export function isoDate(days: number): string {
  if (Number.isInteger(days) && days >= FIRST_DAY && days <= LAST_DAY) return civilDate(days);
  return isoTimestamp(days * MS_PER_DAY).slice(0, 10);
}

/** ISO-8601 UTC with milliseconds, as `Date#toJSON` writes it; out-of-range values keep their number. */
export function isoTimestamp(ms: number): string {
  if (Number.isInteger(ms) && ms >= FIRST_DAY * MS_PER_DAY && ms < (LAST_DAY + 1) * MS_PER_DAY) {
    const days = Math.floor(ms / MS_PER_DAY);
    let rest = ms - days * MS_PER_DAY;
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    return `${civilDate(days)}T${PAD2[hours]}:${PAD2[minutes]}:${PAD2[seconds]}.${PAD3[rest - seconds * 1000]}Z`;
  }
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toISOString();
}

/** One reader per column of `batch`, in schema order. */
export function cellReaders(batch: RecordBatch): CellReader[] {
  const readers: CellReader[] = [];
  for (let c = 0; c < batch.numCols; c++) {
    const vector = batch.getChildAt(c);
    const data = batch.data.children[c];
    if (!vector || !data) throw new Error(`batch column ${c} has no data`);
    readers.push(withNulls(data, readerFor(data, vector)));
  }
  return readers;
}

function withNulls(data: Data, read: CellReader): CellReader {
  if (data.nullCount === 0) return read;
  return (i) => (data.getValid(i) ? read(i) : null);
}

// Decoded dictionaries, by dictionary vector: a few hundred tickers are decoded once per batch, not per row.
const decodedDictionaries = new WeakMap<Vector, readonly Cell[]>();

export function dictionaryCells(dictionary: Vector): readonly Cell[] {
  let cells = decodedDictionaries.get(dictionary);
  if (!cells) {
    const type = dictionary.type as DataType;
    cells = Array.from({ length: dictionary.length }, (_, i) => toCell(dictionary.get(i), type));
    decodedDictionaries.set(dictionary, cells);
  }
  return cells;
}

function readerFor(data: Data, vector: Vector): CellReader {
  const type = data.type as DataType;
  if (DataType.isDictionary(type) && data.dictionary) {
    const keys = data.values as ArrayLike<number | bigint>;
    const cells = dictionaryCells(data.dictionary);
    return (i) => cells[Number(keys[i])] ?? null;
  }
  if (DataType.isUtf8(type)) {
    const values = data.values as Uint8Array;
    const offsets = data.valueOffsets as Int32Array;
    const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
    return (i) => bytes.toString('utf8', offsets[i], offsets[i + 1]);
  }
  if (
    DataType.isFloat(type) &&
    (data.values instanceof Float64Array || data.values instanceof Float32Array)
  ) {
    const values = data.values;
    return (i) => values[i] ?? null;
  }
  if (DataType.isDate(type)) {
    const days = type.unit === DateUnit.DAY ? (data.values as Int32Array) : undefined;
    if (days) return (i) => isoDate(days[i] ?? 0);
    // Date64 is milliseconds at midnight: `get()` gives the milliseconds.
    return (i) => isoDate(Math.floor(Number(vector.get(i)) / MS_PER_DAY));
  }
  if (DataType.isTimestamp(type)) {
    // `get()` gives epoch milliseconds for every unit; Arrow's `timezone` says what the instant means,
    // and the value is an instant either way, so it is written in UTC.
    return (i) => isoTimestamp(Number(vector.get(i)));
  }
  return (i) => toCell(vector.get(i), type);
}

/** Any value `Vector.get()` returns, as a cell. */
export function toCell(value: unknown, type?: DataType): Cell {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (type && DataType.isDate(type)) return isoDate(Math.floor(value / MS_PER_DAY));
      if (type && DataType.isTimestamp(type)) return isoTimestamp(value);
      return value;
    case 'bigint':
      // Beyond 2^53 a JS number would silently round: keep the exact digits as text.
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : value.toString();
    default:
      break;
  }
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  // Nested types (struct, list, map) keep their structure as JSON text.
  const json = (value as { toJSON?: () => unknown }).toJSON?.() ?? value;
  return JSON.stringify(json, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}
