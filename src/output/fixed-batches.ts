/**
 * `FixedBatches`: what makes a writer's bytes depend on the rows alone. The batches a result stream
 * emits follow its pages, whose sizes the stream learns as it goes (and the cache, a split read and
 * `startRow` cut them elsewhere again), and its ticker dictionary grows in the order pages were
 * converted, which concurrency decides. A writer that wrote them as they came made a new file every run;
 * lakes deduplicated, cached or versioned by content hash saw every re-run as new data.
 *
 * So the writers put their input through this first:
 * - **Batches of exactly `batchSize` rows** (the last one shorter), whatever the input's cut
 *   (`convert/rebatch.ts`'s `Pending`: slices, and one copy where pieces of several batches meet).
 * - **Dictionaries of the writer's own**, for every Dictionary<Utf8> column: entries numbered in the order
 *   their first row comes, and each output batch carries exactly the entries its rows and the rows before
 *   them use, the new ones as one more chunk (the IPC writers write it as a delta; Parquet gets the same
 *   values). Indices of the input are mapped by the entry's bytes, so batches of unrelated dictionaries
 *   (parts of a split read, a cache entry, another builder) mix freely.
 *
 * Columns of types the re-cut does not know (lists, structs, other dictionaries: never in a result
 * stream, possible in a user's batches) make the whole input pass through as it comes.
 */
import {
  Data,
  DataType,
  type Dictionary,
  makeData,
  RecordBatch,
  type Schema,
  Struct,
  Utf8,
  Vector,
} from 'apache-arrow';
import { Pending } from '../convert/rebatch.js';
import { checkInteger } from '../core/validate.js';
import { ownBatch } from './own-arrow.js';

/**
 * The default rows per batch of the Arrow IPC writers, and the Parquet writer's slice: 64 Ki rows, what
 * Parquet row groups default to here, and near pyarrow's and Polars' own chunk sizes.
 */
export const DEFAULT_BATCH_SIZE = 65_536;

/** Dictionary<Utf8, Int32>: what the result stream's ticker columns are (the keys are rewritten as Int32). */
function isUtf8Dictionary(type: DataType): boolean {
  return (
    DataType.isDictionary(type) &&
    DataType.isUtf8(type.dictionary) &&
    type.indices.bitWidth === 32 &&
    type.indices.isSigned
  );
}

/** Whether every column has a type `Pending` can concatenate. */
function canRecut(schema: Schema): boolean {
  return schema.fields.every(({ type }) => {
    if (DataType.isDictionary(type)) return isUtf8Dictionary(type);
    return (
      DataType.isUtf8(type) ||
      DataType.isBool(type) ||
      DataType.isFloat(type) ||
      DataType.isInt(type) ||
      DataType.isDate(type) ||
      DataType.isTimestamp(type)
    );
  });
}

/** One Dictionary<Utf8> column's entries as the writer numbers them, and the chunks written so far. */
class WriterDictionary {
  /** Entry bytes as latin1 text (one char per byte: exact, whatever the bytes) → its number. */
  readonly #ids = new Map<string, number>();
  readonly #entries: Uint8Array[] = [];
  #chunks: Data<Utf8>[] = [];
  #vector: Vector<Utf8> | undefined;
  /** Entries the chunks hold. */
  #written = 0;
  /** Every output batch carries the same placeholder until `resolve`: pieces must share a dictionary. */
  readonly placeholder = new Vector([makeData({ type: new Utf8(), length: 0 })]);

  /** `data`'s keys as the writer's numbers; rows whose entry is null become null rows. */
  remap(data: Data<Dictionary>): Data<Dictionary> {
    const source = data.dictionary!;
    const starts = chunkStarts(source);
    const mapped = new Int32Array(source.length).fill(-1);
    const keys = data.values as ArrayLike<number>;
    const out = new Int32Array(data.length);
    let bitmap: Uint8Array | undefined;
    let nullCount = 0;
    const validity = data.nullCount > 0 ? data.nullBitmap : undefined;
    for (let i = 0; i < data.length; i++) {
      let id = -1;
      const at = data.offset + i;
      if (validity === undefined || validity[at >> 3]! & (1 << (at & 7))) {
        const key = keys[i]!;
        id = mapped[key]!;
        if (id === -1) mapped[key] = id = this.#idOf(entryAt(source, starts, key));
      }
      if (id >= 0) out[i] = id;
      else {
        nullCount++;
        bitmap ??= allValid(data.length, i);
      }
      if (bitmap && id >= 0) bitmap[i >> 3]! |= 1 << (i & 7);
    }
    return makeData({
      type: data.type,
      length: data.length,
      nullCount,
      ...(bitmap ? { nullBitmap: bitmap } : {}),
      data: out,
      dictionary: this.placeholder,
    });
  }

  /** `data` (keys numbered by `remap`) with the dictionary of every entry up to its last row. */
  resolve(data: Data<Dictionary>): Data<Dictionary> {
    const keys = data.values as Int32Array;
    let used = this.#written;
    for (let i = 0; i < data.length; i++) if (keys[i]! >= used && data.getValid(i)) used = keys[i]! + 1;
    // The first chunk always exists, even empty: a batch whose first chunk differs from the last one's
    // is a replacement to the IPC writers, which the file format forbids.
    if (used > this.#written || this.#vector === undefined) {
      this.#chunks = [...this.#chunks, utf8Chunk(this.#entries.slice(this.#written, used))];
      this.#vector = new Vector(this.#chunks);
      this.#written = used;
    }
    return new Data(data.type, data.offset, data.length, data.nullCount, data, [], this.#vector);
  }

  #idOf(entry: Uint8Array | null): number {
    if (entry === null) return -1;
    const text = Buffer.from(entry.buffer, entry.byteOffset, entry.byteLength).toString('latin1');
    let id = this.#ids.get(text);
    if (id === undefined) {
      id = this.#entries.length;
      this.#ids.set(text, id);
      this.#entries.push(entry.slice());
    }
    return id;
  }
}

/** A validity bitmap with rows before `upTo` valid (the rows after are set as they come). */
function allValid(length: number, upTo: number): Uint8Array {
  const bitmap = new Uint8Array((length + 7) >> 3);
  for (let i = 0; i < upTo; i++) bitmap[i >> 3]! |= 1 << (i & 7);
  return bitmap;
}

function chunkStarts(vector: Vector): number[] {
  const starts = [0];
  for (const chunk of vector.data) starts.push(starts.at(-1)! + chunk.length);
  return starts;
}

/** The bytes of entry `key` of a (possibly chunked) Utf8 vector; null for a null entry. */
function entryAt(vector: Vector, starts: readonly number[], key: number): Uint8Array | null {
  let c = 0;
  while (starts[c + 1]! <= key) c++;
  const chunk = vector.data[c] as Data<Utf8> | undefined;
  if (chunk === undefined) throw new RangeError(`dictionary index ${key} past its ${vector.length} entries`);
  const i = key - starts[c]!;
  if (!chunk.getValid(i)) return null;
  return chunk.values.subarray(chunk.valueOffsets[i]!, chunk.valueOffsets[i + 1]!);
}

function utf8Chunk(entries: readonly Uint8Array[]): Data<Utf8> {
  const valueOffsets = new Int32Array(entries.length + 1);
  let bytes = 0;
  entries.forEach((e, i) => {
    bytes += e.length;
    valueOffsets[i + 1] = bytes;
  });
  const data = new Uint8Array(bytes);
  entries.forEach((e, i) => data.set(e, valueOffsets[i]!));
  return makeData({ type: new Utf8(), length: entries.length, nullCount: 0, valueOffsets, data });
}

/**
 * Zeroes the value of every null slot of a fixed-width or boolean column: what a null slot holds is the
 * decoder's or the cache's business, and the IPC and Parquet bytes must not depend on it.
 */
function clearUnderNulls(data: Data): void {
  const bitmap = data.nullBitmap;
  if (data.nullCount <= 0 || bitmap === undefined || data.valueOffsets !== undefined) return;
  const values = data.values as Uint8Array | Int32Array | Float64Array | BigInt64Array | undefined;
  if (values === undefined) return;
  const bool = DataType.isBool(data.type);
  const zero = values instanceof BigInt64Array ? 0n : 0;
  // A fresh copy (offset 0): a byte of the bitmap at a time, and only its null bits looked at.
  for (let byte = 0; byte < bitmap.length; byte++) {
    if (bitmap[byte] === 0xff) continue;
    for (let i = byte * 8; i < Math.min(byte * 8 + 8, data.length); i++) {
      if (bitmap[byte]! & (1 << (i & 7))) continue;
      if (bool) (values as Uint8Array)[i >> 3]! &= ~(1 << (i & 7));
      else (values as unknown as (number | bigint)[])[i] = zero;
    }
  }
}

/** `batch` with some of its columns replaced. */
function withColumns(batch: RecordBatch, columns: ReadonlyMap<number, Data>): RecordBatch {
  const children = batch.data.children.map((child, i) => columns.get(i) ?? child);
  return new RecordBatch(
    batch.schema,
    makeData({ type: new Struct(batch.schema.fields), length: batch.numRows, nullCount: 0, children }),
  );
}

/** Batches in as they come, batches out of `batchSize` rows with the writer's dictionaries. */
export class FixedBatches {
  readonly #batchSize: number;
  #pending: Pending;
  /** Per Dictionary<Utf8> column index; undefined until the first batch, null: pass through. */
  #dictionaries: Map<number, WriterDictionary> | null | undefined;
  /** A 0-row batch of the input's schema, for a result without rows. */
  #empty: RecordBatch | undefined;
  #emitted = 0;

  constructor(batchSize: number = DEFAULT_BATCH_SIZE, argument = 'batchSize') {
    this.#batchSize = checkInteger(batchSize, argument, 1);
    this.#pending = new Pending(this.#batchSize, true);
  }

  /** The output batches `input` completes (none, one or several). */
  *push(input: RecordBatch): Generator<RecordBatch> {
    const batch = ownBatch(input) ?? input;
    if (this.#dictionaries === undefined) {
      this.#dictionaries = canRecut(batch.schema) ? new Map() : null;
      batch.schema.fields.forEach((f, i) => {
        if (this.#dictionaries && DataType.isDictionary(f.type)) {
          this.#dictionaries.set(i, new WriterDictionary());
        }
      });
    }
    if (this.#dictionaries === null) {
      this.#emitted++;
      yield batch;
      return;
    }
    const remapped = new Map<number, Data>();
    for (const [i, dictionary] of this.#dictionaries) {
      remapped.set(i, dictionary.remap(batch.data.children[i] as Data<Dictionary>));
    }
    const own = withColumns(batch, remapped);
    this.#empty ??= own.slice(0, 0);
    if (own.numRows > 0) for (const out of this.#pending.add(own)) yield this.#resolve(out);
  }

  /**
   * The last, shorter batch; a result without rows still gets one empty batch (its schema: IPC readers
   * and the Parquet writer need it).
   */
  *end(): Generator<RecordBatch> {
    const rest = this.#pending.rest();
    if (rest) yield this.#resolve(rest);
    else if (this.#emitted === 0 && this.#empty) yield this.#resolve(this.#empty);
  }

  /** `batch` (a fresh copy: its buffers are ours) with values under nulls zeroed and the dictionaries. */
  #resolve(batch: RecordBatch): RecordBatch {
    this.#emitted++;
    for (const child of batch.data.children) clearUnderNulls(child);
    if (!this.#dictionaries?.size) return batch;
    const columns = new Map<number, Data>();
    for (const [i, dictionary] of this.#dictionaries) {
      columns.set(i, dictionary.resolve(batch.data.children[i] as Data<Dictionary>));
    }
    return withColumns(batch, columns);
  }
}

/** `FixedBatches` over an async source (the Parquet writer's input). */
export async function* fixedBatches(
  source: AsyncIterable<RecordBatch>,
  batchSize: number,
): AsyncGenerator<RecordBatch> {
  const fixed = new FixedBatches(batchSize);
  for await (const batch of source) yield* fixed.push(batch);
  yield* fixed.end();
}
