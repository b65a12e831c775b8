/**
 * `decodeDictionaries()`: an object-mode Transform that turns Dictionary<Utf8> columns into plain Utf8,
 * batch by batch (other columns pass through untouched, zero-copy).
 *
 * Why: the result stream's ticker column keeps one dictionary that grows as new tickers appear, so the IPC
 * writers emit *delta* dictionary batches. That is valid Arrow, but Polars (and other Rust readers) refuse
 * files with deltas ("delta dictionary batches not supported"). Plain strings cost a few bytes per row
 * (a ticker is ~12 bytes) and every Arrow reader accepts them, so exports default to this.
 */
import { Transform } from 'node:stream';
import {
  type Data,
  DataType,
  Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Utf8,
  type Vector,
} from 'apache-arrow';
import { ownBatch } from './own-arrow.js';

function isDictionaryOfStrings(type: DataType): boolean {
  return DataType.isDictionary(type) && DataType.isUtf8(type.dictionary);
}

/** Each dictionary entry's UTF-8 bytes (null for a null entry), over all of the dictionary's chunks. */
function entryBytes(dictionary: Vector): (Uint8Array | null)[] {
  const entries: (Uint8Array | null)[] = [];
  for (const chunk of dictionary.data) {
    const offsets = chunk.valueOffsets as Int32Array;
    const values = chunk.values as Uint8Array;
    for (let i = 0; i < chunk.length; i++) {
      entries.push(chunk.getValid(i) ? values.subarray(offsets[i], offsets[i + 1]) : null);
    }
  }
  return entries;
}

/** The dictionary column `data` as a Utf8 column with the same values and nulls. */
export function decodeDictionaryData(data: Data): Data<Utf8> {
  const entries = entryBytes(data.dictionary!);
  const keys = data.values as ArrayLike<number>;
  const n = data.length;
  const rows: (Uint8Array | null)[] = new Array(n);
  const offsets = new Int32Array(n + 1);
  let total = 0;
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    const entry = data.getValid(i) ? (entries[keys[i]!] ?? null) : null;
    rows[i] = entry;
    if (entry === null) nulls++;
    else total += entry.length;
    offsets[i + 1] = total;
  }
  const values = new Uint8Array(total);
  // A fresh validity bitmap: the source may be a slice whose bitmap starts mid-byte.
  const bitmap = nulls > 0 ? new Uint8Array(Math.ceil(n / 8)) : undefined;
  for (let i = 0; i < n; i++) {
    const entry = rows[i];
    if (entry === null || entry === undefined) continue;
    values.set(entry, offsets[i]!);
    if (bitmap) bitmap[i >> 3]! |= 1 << (i & 7);
  }
  return makeData({
    type: new Utf8(),
    length: n,
    nullCount: nulls,
    ...(bitmap ? { nullBitmap: bitmap } : {}),
    valueOffsets: offsets,
    data: values,
  });
}

// One output schema per input schema (and choice of columns): the IPC writers compare each batch's
// schema with the first one.
const plainSchemas = new WeakMap<Schema, Map<string, Schema>>();

function plainSchema(schema: Schema, decoded: (f: Field) => boolean): Schema {
  const which = schema.fields.map((f) => (decoded(f) ? '1' : '0')).join('');
  let byChoice = plainSchemas.get(schema);
  if (!byChoice) {
    byChoice = new Map();
    plainSchemas.set(schema, byChoice);
  }
  let plain = byChoice.get(which);
  if (!plain) {
    plain = new Schema(
      schema.fields.map((f) => (decoded(f) ? new Field(f.name, new Utf8(), f.nullable, f.metadata) : f)),
      schema.metadata,
    );
    byChoice.set(which, plain);
  }
  return plain;
}

/**
 * `batch` with its Dictionary<Utf8> columns as Utf8 (only those named in `only`, when given); the same
 * batch when it has none.
 */
export function withoutDictionaries(batch: RecordBatch, only?: ReadonlySet<string>): RecordBatch {
  const fields = batch.schema.fields;
  const decoded = (f: Field) => isDictionaryOfStrings(f.type) && (only === undefined || only.has(f.name));
  if (!fields.some(decoded)) return batch;
  const children = batch.data.children.map((child, i) =>
    decoded(fields[i]!) ? decodeDictionaryData(child) : child,
  );
  const schema = plainSchema(batch.schema, decoded);
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: batch.numRows, nullCount: 0, children }),
  );
}

export function decodeDictionaries(): Transform {
  return plainStringColumns();
}

/** @internal `decodeDictionaries()` of the columns named in `only` (all, when not given). */
export function plainStringColumns(only?: ReadonlySet<string>): Transform {
  return new Transform({
    objectMode: true,
    transform(batch: RecordBatch, _encoding, callback) {
      try {
        callback(null, withoutDictionaries(ownBatch(batch) ?? batch, only));
      } catch (err) {
        callback(err as Error);
      }
    },
  });
}
