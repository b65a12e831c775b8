/**
 * The emulator's results without HTTP: what a query returns, for tests (ours and our users') to compare
 * decoded output against. Same inputs as the server, same rows, byte for byte once serialized.
 */
import { InvalidArgumentError } from '../core/errors.js';
import { checkKeys, optionKeys } from '../core/validate.js';
import { type FieldDescriptor, MediaType, type QueryBody, type WireValue } from '../core/wire.js';
import { DATASETS, type DatasetDefinition, datasetById } from './datasets/index.js';
import { DEFAULT_OPTIONS } from './options.js';
import { checkQueryBody, computeQueryId } from './query-body.js';
import { planResult, planRows, type ResultPlan } from './rows.js';

/** The data-shaping subset of `EmulatorOptions`; defaults as there (seed 1, rowCap 500000). */
export interface DataOptions {
  readonly seed?: number;
  readonly rowCap?: number;
}

const DATA_KEYS = optionKeys<DataOptions>({ seed: true, rowCap: true });

/** What a query will report, as the emulator computes it. */
export interface QueryInfo {
  /** The query id the POST answers. */
  readonly id: string;
  /** Rows served (`X-Total`): capped at `rowCap`. */
  readonly total: number;
  /** `X-Truncated`. */
  readonly truncated: boolean;
  /** Rows the query matches before the cap. */
  readonly rowsBeforeCap: number;
  /** Media types offered (`X-Formats`, in order). */
  readonly formats: readonly string[];
}

/** Ids of the emulator's datasets, in listing order. */
export const DATASET_IDS: readonly string[] = Object.freeze(DATASETS.map((d) => d.id));

function dataset(id: string): DatasetDefinition {
  const found = datasetById(id);
  if (!found)
    throw new InvalidArgumentError(
      'datasetId',
      `Expected one of ${DATASET_IDS.join(', ')}, got ${JSON.stringify(id)}`,
    );
  return found;
}

function integerOption(
  name: string,
  value: number | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(
      name,
      `Expected an integer between ${min} and ${max}, got ${String(value)}`,
    );
  }
  return value;
}

function plan(
  datasetId: string,
  body: QueryBody | object,
  options: DataOptions,
): { plan: ResultPlan; id: string } {
  const ds = dataset(datasetId);
  const checked = checkQueryBody(body);
  if (!checked.ok) throw new InvalidArgumentError('body', checked.message);
  checkKeys(options, DATA_KEYS, 'data options (`seed`, `rowCap`)');
  const seed = integerOption('seed', options.seed, DEFAULT_OPTIONS.seed, 0, 0xffffffff);
  const rowCap = integerOption('rowCap', options.rowCap, DEFAULT_OPTIONS.rowCap, 1, Number.MAX_SAFE_INTEGER);
  return {
    plan: planResult(ds, checked.tickers, seed, rowCap),
    id: computeQueryId(ds.id, checked.body, checked.tickers),
  };
}

/**
 * Rows `start` to `start + count - 1` (1-based, as the wire's `start`) of a query's result, exactly as
 * table JSON serves them; fewer (or none) past the end.
 *
 * @example
 * const rows = queryRows('job_listings', { tickers: ['nasdaq:aapl'] }, { seed: 1 }, 1, 100);
 */
export function queryRows(
  datasetId: string,
  body: QueryBody | object,
  options: DataOptions,
  start: number,
  count: number,
): WireValue[][] {
  const { plan: p } = plan(datasetId, body, options);
  integerOption('start', start, 1, 1, Number.MAX_SAFE_INTEGER);
  integerOption('count', count, 0, 0, Number.MAX_SAFE_INTEGER);
  return planRows(p, start - 1, count);
}

/** The number of rows a query serves (`total`, `X-Total`), after the row cap. */
export function queryTotal(
  datasetId: string,
  body: QueryBody | object = {},
  options: DataOptions = {},
): number {
  return plan(datasetId, body, options).plan.total;
}

/** Id, total, truncation and formats of a query, as the emulator will report them. */
export function queryInfo(
  datasetId: string,
  body: QueryBody | object = {},
  options: DataOptions = {},
): QueryInfo {
  const { plan: p, id } = plan(datasetId, body, options);
  return {
    id,
    total: p.total,
    truncated: p.truncated,
    rowsBeforeCap: p.rowsBeforeCap,
    formats: p.dataset.formats.map((f) => MediaType[f]),
  };
}

/** The field descriptors of a dataset (a copy), in column order. */
export function datasetFields(datasetId: string): FieldDescriptor[] {
  return dataset(datasetId).fields.map((f) => ({ ...f, options: [...f.options] }));
}
