/**
 * CSV lines written as bytes, column by column, for `toCsv()`. The text route (a JS string per cell,
 * joined, then encoded) decoded every UTF-8 string of the batch and encoded it again: for `job_listings`
 * (long descriptions, some non-ASCII, so two-byte JS strings) that was ~1.3 s of the 1.8 s a 37 MB CSV
 * took, the largest cost of a `dqs query --out x.csv` served from the cache. Here UTF-8 values are copied
 * as they are (quoted when needed), dictionary entries are encoded once per dictionary, and the rest are
 * short ASCII texts. The bytes are those of `csvField()` of each cell (see the property test).
 */
import { isUtf8 } from 'node:buffer';
import { type Data, DataType, DateUnit, type RecordBatch, TimeUnit, type Vector } from 'apache-arrow';
import { type CellReader, cellReaders, dictionaryCells, isoDate, isoTimestamp } from './cells.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const CR = 0x0d;
const LF = 0x0a;
/** Below this many bytes a JS loop copies faster than `subarray()` and `set()`. */
const SHORT_COPY = 32;

/**
 * A growing byte buffer. Plain `Uint8Array`s on both sides of a copy: `subarray()` of a `Buffer` goes
 * through its species constructor, which made copying the fields the writer's largest cost.
 */
class ByteSink {
  buf: Uint8Array;
  pos = 0;
  constructor(capacity: number) {
    this.buf = new Uint8Array(Math.max(1024, capacity));
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
  }

  byte(b: number): void {
    this.ensure(1);
    this.buf[this.pos++] = b;
  }

  /** A text of ASCII characters only (numbers, dates). */
  ascii(text: string): void {
    const n = text.length;
    this.ensure(n);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < n; i++) buf[pos++] = text.charCodeAt(i);
    this.pos = pos;
  }

  /** Any text, as UTF-8. */
  utf8(text: string): void {
    this.ensure(text.length * 3);
    this.pos += ENCODER.encodeInto(text, this.buf.subarray(this.pos)).written;
  }

  copy(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.ensure(n);
    const buf = this.buf;
    if (n < SHORT_COPY) {
      let pos = this.pos;
      for (let i = start; i < end; i++) buf[pos++] = src[i]!;
      this.pos = pos;
      return;
    }
    buf.set(src.subarray(start, end), this.pos);
    this.pos += n;
  }

  /** The bytes written, as a Buffer over the same memory. */
  bytes(): Buffer {
    return Buffer.from(this.buf.buffer, this.buf.byteOffset, this.pos);
  }
}

const ENCODER = new TextEncoder();
const TRUE = ENCODER.encode('true');
const FALSE = ENCODER.encode('false');

/** Appends the CSV field of row `row` (within the batch); a null cell appends nothing. */
type FieldWriter = (sink: ByteSink, row: number) => void;

/** The field of `bytes[start, end)` (valid UTF-8): `""` when empty, quoted with inner quotes doubled when needed. */
function writeUtf8Field(sink: ByteSink, bytes: Uint8Array, start: number, end: number): void {
  if (start === end) {
    sink.ensure(2);
    sink.buf[sink.pos++] = QUOTE;
    sink.buf[sink.pos++] = QUOTE;
    return;
  }
  let quotes = 0;
  let special = false;
  for (let i = start; i < end; i++) {
    const b = bytes[i]!;
    if (b === QUOTE) quotes++;
    else if (b === COMMA || b === LF || b === CR) special = true;
  }
  if (quotes === 0 && !special) {
    sink.copy(bytes, start, end);
    return;
  }
  sink.ensure(end - start + quotes + 2);
  sink.buf[sink.pos++] = QUOTE;
  if (quotes === 0) sink.copy(bytes, start, end);
  else {
    let from = start;
    for (let i = start; i < end; i++) {
      if (bytes[i] !== QUOTE) continue;
      sink.copy(bytes, from, i + 1);
      sink.buf[sink.pos++] = QUOTE; // room made by ensure() above
      from = i + 1;
    }
    sink.copy(bytes, from, end);
  }
  sink.byte(QUOTE);
}

/** A cell as text made by the shared readers (`cells.ts`), quoted as `csvField()` does. */
function viaText(read: CellReader, field: (cell: ReturnType<CellReader>) => string): FieldWriter {
  return (sink, row) => {
    const cell = read(row);
    if (cell !== null) sink.utf8(field(cell));
  };
}

// Encoded fields of each dictionary's entries, by dictionary vector (a dictionary is shared by batches).
const encodedDictionaries = new WeakMap<Vector, readonly (Uint8Array | null)[]>();

function fieldWriter(
  data: Data,
  read: CellReader,
  field: (cell: ReturnType<CellReader>) => string,
): FieldWriter {
  const type = data.type as DataType;
  if (DataType.isDictionary(type) && data.dictionary) {
    const dictionary = data.dictionary;
    let encoded = encodedDictionaries.get(dictionary);
    if (!encoded) {
      encoded = dictionaryCells(dictionary).map((c) => (c === null ? null : ENCODER.encode(field(c))));
      encodedDictionaries.set(dictionary, encoded);
    }
    const entries = encoded;
    const keys = data.values as ArrayLike<number | bigint>;
    return (sink, row) => {
      const bytes = entries[Number(keys[row])];
      if (bytes) sink.copy(bytes, 0, bytes.length);
    };
  }
  if (DataType.isUtf8(type)) {
    const values = data.values as Uint8Array;
    const offsets = data.valueOffsets as Int32Array;
    // Invalid UTF-8 (a batch from elsewhere) goes the text route, which writes U+FFFD for it.
    if (!isUtf8(values.subarray(offsets[0], offsets[data.length]))) return viaText(read, field);
    return (sink, row) => writeUtf8Field(sink, values, offsets[row]!, offsets[row + 1]!);
  }
  if (DataType.isBool(type)) {
    const bits = data.values as Uint8Array;
    const offset = data.offset;
    return (sink, row) => {
      const bit = offset + row;
      const value = (bits[bit >> 3]! >> (bit & 7)) & 1 ? TRUE : FALSE;
      sink.copy(value, 0, value.length);
    };
  }
  if (DataType.isFloat(type) && data.values instanceof Float64Array) {
    const values = data.values;
    return (sink, row) => sink.ascii(String(values[row]));
  }
  if (DataType.isDate(type) && type.unit === DateUnit.DAY) {
    const days = data.values as Int32Array;
    return (sink, row) => sink.ascii(isoDate(days[row]!));
  }
  if (DataType.isTimestamp(type) && type.unit === TimeUnit.MILLISECOND) {
    // Each 64-bit value as two 32-bit halves: no BigInt per value. Beyond 2^53 ms, `Vector.get()`.
    const words = data.values as unknown as BigInt64Array;
    const halves = new Int32Array(words.buffer, words.byteOffset, data.length * 2);
    return (sink, row) => {
      const high = halves[2 * row + 1]!;
      if (high >= 0x200000 || high < -0x200000) return sink.utf8(field(read(row)));
      sink.ascii(isoTimestamp(high * 4294967296 + (halves[2 * row]! >>> 0)));
    };
  }
  return viaText(read, field);
}

/** `head` (the header line, or '') and the CSV lines (CRLF-terminated) of every row of `batch`, as bytes. */
export function csvLineBytes(
  batch: RecordBatch,
  field: (cell: ReturnType<CellReader>) => string,
  head: string,
  nullField = '',
): Buffer {
  const readers = cellReaders(batch);
  const writers: FieldWriter[] = [];
  let estimate = 0;
  for (let c = 0; c < batch.numCols; c++) {
    const data = batch.data.children[c]!;
    const write = fieldWriter(data, readers[c]!, field);
    if (data.nullCount === 0) writers.push(write);
    else if (nullField === '')
      writers.push((sink, row) => (data.getValid(row) ? write(sink, row) : undefined));
    else writers.push((sink, row) => (data.getValid(row) ? write(sink, row) : sink.utf8(nullField)));
    if (DataType.isUtf8(data.type)) {
      const offsets = data.valueOffsets as Int32Array;
      estimate += offsets[data.length]! - offsets[0]!;
    }
  }
  const rows = batch.numRows;
  const sink = new ByteSink(head.length * 3 + Math.ceil(estimate * 1.05) + rows * (writers.length * 12 + 2));
  sink.utf8(head);
  const last = writers.length - 1;
  for (let row = 0; row < rows; row++) {
    for (let c = 0; c <= last; c++) {
      writers[c]!(sink, row);
      if (c < last) sink.byte(COMMA);
    }
    sink.ensure(2);
    sink.buf[sink.pos++] = CR;
    sink.buf[sink.pos++] = LF;
  }
  return sink.bytes();
}
