/**
 * Tables and batches of another copy of apache-arrow (a notebook that imported its own, a bundler that
 * duplicated it) are rebuilt on this copy's classes: apache-arrow dispatches on `instanceof` (its IPC
 * writer, its visitors, `new Table(batches)`), so a foreign batch would be rejected or misread. The
 * rebuild shares the foreign buffers (no copy of the values): only the small objects around them (types,
 * fields, schema, `Data` nodes) are made anew. Types are matched by `typeId`, which is the Arrow format's
 * own numbering and the same in every copy.
 */

import {
  Binary,
  BinaryView,
  Bool,
  Data,
  DataType,
  Date_,
  Decimal,
  Dictionary,
  Duration,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float,
  Int,
  Interval,
  LargeBinary,
  LargeUtf8,
  List,
  Map_,
  Null,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Time,
  Timestamp,
  Type,
  Union,
  Utf8,
  Utf8View,
  Vector,
} from 'apache-arrow';

/** This copy's type class of each type id (`typeId` is an own property of every type instance). */
const TYPE_CLASSES: ReadonlyMap<number, { prototype: object }> = new Map<number, { prototype: object }>([
  [Type.Null, Null],
  [Type.Int, Int],
  [Type.Float, Float],
  [Type.Binary, Binary],
  [Type.LargeBinary, LargeBinary],
  [Type.BinaryView, BinaryView],
  [Type.Utf8, Utf8],
  [Type.LargeUtf8, LargeUtf8],
  [Type.Utf8View, Utf8View],
  [Type.Bool, Bool],
  [Type.Decimal, Decimal],
  [Type.Date, Date_],
  [Type.Time, Time],
  [Type.Timestamp, Timestamp],
  [Type.Interval, Interval],
  [Type.Duration, Duration],
  [Type.List, List],
  [Type.Struct, Struct],
  [Type.Union, Union],
  [Type.FixedSizeBinary, FixedSizeBinary],
  [Type.FixedSizeList, FixedSizeList],
  [Type.Map, Map_],
  [Type.Dictionary, Dictionary],
]);

interface ForeignData {
  type: object;
  offset: number;
  length: number;
  nullCount: number;
  values?: unknown;
  valueOffsets?: unknown;
  nullBitmap?: unknown;
  typeIds?: unknown;
  children: ForeignData[];
  dictionary?: { data: ForeignData[] } | undefined;
  variadicBuffers?: readonly Uint8Array[];
}

interface ForeignField {
  name: string;
  type: object;
  nullable: boolean;
  metadata: Map<string, string>;
}

/**
 * Whether `v` was made by this copy's `cls`. Not `instanceof`: apache-arrow 21 makes `instanceof Table`
 * (RecordBatch, Schema, Data, Vector) true for other copies' objects too, whose types still fail the
 * `instanceof DataType` checks its visitors make.
 */
function isOwn(cls: abstract new (...args: never[]) => unknown, v: unknown): boolean {
  return Function.prototype[Symbol.hasInstance].call(cls, v);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null;
}

/** A table of any apache-arrow copy: batches and a schema with fields. */
export function isTableLike(v: unknown): boolean {
  return isObject(v) && Array.isArray(v.batches) && isObject(v.schema) && Array.isArray(v.schema.fields);
}

/** A record batch of any apache-arrow copy. */
export function isRecordBatchLike(v: unknown): boolean {
  return (
    isObject(v) &&
    typeof v.numRows === 'number' &&
    isObject(v.schema) &&
    Array.isArray(v.schema.fields) &&
    isObject(v.data)
  );
}

/** `value` as this copy's Table: itself when it is one, rebuilt when it comes from another copy. */
export function ownTable(value: unknown): Table | undefined {
  if (isOwn(Table, value)) return value as Table;
  if (!isTableLike(value)) return undefined;
  const foreign = value as { schema: unknown; batches: unknown[] };
  const schema = ownSchema(foreign.schema);
  return new Table(
    schema,
    foreign.batches.map((b) => ownBatch(b, schema)!),
  );
}

/** `value` as this copy's RecordBatch (see `ownTable`); `schema`: the one already rebuilt for it. */
export function ownBatch(value: unknown, schema?: Schema): RecordBatch | undefined {
  if (isOwn(RecordBatch, value)) return value as RecordBatch;
  if (!isRecordBatchLike(value)) return undefined;
  const foreign = value as { schema: unknown; data: ForeignData };
  return new RecordBatch(schema ?? ownSchema(foreign.schema), ownData(foreign.data) as Data<Struct>);
}

function ownSchema(schema: unknown): Schema {
  if (isOwn(Schema, schema)) return schema as Schema;
  const s = schema as { fields: ForeignField[]; metadata?: Map<string, string> };
  return new Schema(s.fields.map(ownField), new Map(s.metadata ?? []));
}

function ownField(field: ForeignField): Field {
  if (isOwn(Field, field)) return field as Field;
  return new Field(field.name, ownType(field.type), field.nullable, new Map(field.metadata ?? []));
}

/** A type of another copy as this copy's: its own properties on this copy's class, nested ones rebuilt. */
function ownType(type: object): DataType {
  if (isOwn(DataType, type)) return type as DataType;
  const t = type as Record<string, unknown>;
  const cls = TYPE_CLASSES.get(t.typeId as number);
  if (cls === undefined) throw new TypeError(`an Arrow type of unknown id ${String(t.typeId)}`);
  const own = Object.create(cls.prototype) as Record<string, unknown>;
  for (const [key, value] of Object.entries(t)) {
    if (key === 'children' && Array.isArray(value)) own[key] = value.map(ownField);
    else if ((key === 'indices' || key === 'dictionary') && isObject(value)) own[key] = ownType(value);
    else own[key] = value;
  }
  return own as unknown as DataType;
}

/**
 * Rebuilt nodes by the foreign node they stand for: batches that share a dictionary keep sharing it (the
 * IPC writers tell a delta from a replacement by the dictionary they were given before).
 */
const rebuilt = new WeakMap<object, Data | Vector>();

function ownVector(vector: { data: ForeignData[] }): Vector {
  let own = rebuilt.get(vector) as Vector | undefined;
  if (own === undefined) {
    own = new Vector(vector.data.map(ownData));
    rebuilt.set(vector, own);
  }
  return own;
}

function ownData(data: ForeignData): Data {
  if (isOwn(Data, data)) return data as unknown as Data;
  let own = rebuilt.get(data) as Data | undefined;
  if (own === undefined) {
    own = newData(data);
    rebuilt.set(data, own);
  }
  return own;
}

function newData(data: ForeignData): Data {
  const dictionary = data.dictionary ? ownVector(data.dictionary) : undefined;
  return new Data(
    ownType(data.type),
    data.offset,
    data.length,
    data.nullCount,
    {
      0: data.valueOffsets,
      1: data.values,
      2: data.nullBitmap,
      3: data.typeIds,
    } as never,
    data.children.map(ownData),
    dictionary,
    data.variadicBuffers,
  );
}
