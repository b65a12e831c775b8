/**
 * One dictionary per column across the parts of a split result. Each part is read by a builder of its own,
 * whose dictionary columns (ticker-like strings) start a dictionary of their own: handed on as they are, a
 * second part's batches would carry a replacement dictionary, which the Arrow IPC file format forbids (and
 * `rebatch` refuses to join). Here every dictionary batch is re-indexed into one dictionary that only
 * grows, one chunk per batch that brings new entries, as a single builder makes it (convert/columns/
 * dictionary.ts): the IPC writers see deltas only, and a split result's file reads like any other.
 */
import {
  type Data,
  DataType,
  type Dictionary,
  makeData,
  RecordBatch,
  type Schema,
  Utf8,
  Vector,
  vectorFromArray,
} from 'apache-arrow';

export class SharedDictionaries {
  readonly #schema: Schema;
  /** By column index, for the dictionary columns of the schema. */
  readonly #columns = new Map<number, SharedDictionary>();

  constructor(schema: Schema) {
    this.#schema = schema;
    schema.fields.forEach((field, i) => {
      if (DataType.isDictionary(field.type)) this.#columns.set(i, new SharedDictionary(field.type));
    });
  }

  /** `batch` with the stream's schema, its dictionary columns in the shared dictionaries. */
  relabel(batch: RecordBatch): RecordBatch {
    if (this.#columns.size === 0) return new RecordBatch(this.#schema, batch.data);
    const children = batch.data.children.map((child, i) => this.#columns.get(i)?.remap(child) ?? child);
    const data = makeData({ type: batch.data.type, length: batch.numRows, nullCount: 0, children });
    return new RecordBatch(this.#schema, data);
  }
}

class SharedDictionary {
  readonly #type: Dictionary;
  readonly #ids = new Map<string, number>();
  /** Entries not yet in a chunk. */
  #pending: string[] = [];
  readonly #chunks: Data<Utf8>[] = [];
  #vector: Vector<Utf8> | undefined;
  /** For each part's dictionary (known by its first chunk): its entry index -> shared id, as far as seen. */
  readonly #maps = new WeakMap<Data, number[]>();

  constructor(type: Dictionary) {
    this.#type = type;
  }

  remap(data: Data): Data {
    const source = data.dictionary as Vector<Utf8>;
    const lineage = source.data[0]!;
    let map = this.#maps.get(lineage);
    if (!map) {
      map = [];
      this.#maps.set(lineage, map);
    }
    // A part's dictionary grows as its pages come: map the entries it gained since.
    for (let k = map.length; k < source.length; k++) {
      const entry = source.get(k) as string;
      let id = this.#ids.get(entry);
      if (id === undefined) {
        id = this.#ids.size;
        this.#ids.set(entry, id);
        this.#pending.push(entry);
      }
      map.push(id);
    }
    // Fixed-width values start at the Data's first row; only the validity bits are at `offset`.
    const from = data.values as Int32Array;
    const indices = new Int32Array(data.length);
    for (let i = 0; i < data.length; i++) indices[i] = map[from[i]!] ?? 0;
    return makeData({
      type: this.#type,
      offset: data.offset,
      length: data.length,
      nullCount: data.nullCount,
      nullBitmap: data.nullBitmap,
      data: indices,
      dictionary: this.#dictionary(),
    });
  }

  /** The dictionary so far; the first batch always makes a chunk (the writers compare first chunks). */
  #dictionary(): Vector<Utf8> {
    if (this.#vector === undefined || this.#pending.length > 0) {
      this.#chunks.push(vectorFromArray(this.#pending, new Utf8()).data[0]!);
      this.#pending = [];
      this.#vector = new Vector(this.#chunks.slice());
    }
    return this.#vector;
  }
}
