/** The conversion layer: descriptor-driven typing of wire rows into Arrow batches or row objects. */

export { type ConvertOptions, RecordBatchBuilder } from './batch-builder.js';
export type { DecodedColumn, DecodedColumns } from './column-data.js';
export { COLUMN_KINDS, type ColumnKind, columnKind, isColumnKind } from './column-kind.js';
export {
  arrowConverter,
  type Chunk,
  type ConverterOptions,
  type PageConverter,
  rowConverter,
} from './page-converters.js';
export { type ConvertiblePage, type PagePart, partLength } from './page-parts.js';
export { type ColumnPlan, planColumns } from './plan.js';
export { concatBatches, rebatch, rebatchAsync } from './rebatch.js';
export {
  type ColumnRowFactory,
  makeColumnRowFactory,
  makeRowFactory,
  type RowFactory,
} from './row-factory.js';
export { arrowType, buildSchema } from './schema.js';
export { EXPECTED, parseDecimal } from './values.js';
