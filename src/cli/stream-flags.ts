/**
 * The stream flags `dqs query` and `dqs export` share: `--format`, `--page-size` and the page concurrency
 * (`--concurrency` for a query, `--page-concurrency` for an export, whose `--concurrency` is queries at
 * once), read once here so both commands accept and refuse the same values.
 */
import type { StreamOptions } from '../query/stream-options.js';
import { choice, int, type Values } from './args.js';

/** The wire formats a stream can decode, and `auto`. */
export const WIRE_FORMATS = ['auto', 'json', 'csv', 'xlsx'] as const;

export function streamFlags(
  command: string,
  v: Values,
  concurrencyFlag: 'concurrency' | 'page-concurrency',
): Pick<StreamOptions, 'format' | 'pageSize' | 'concurrency'> {
  const format = choice(command, v, 'format', WIRE_FORMATS);
  const pageSize = int(command, v, 'page-size', 1);
  const concurrency = int(command, v, concurrencyFlag, 1, 64);
  return {
    ...(format !== undefined ? { format } : {}),
    ...(pageSize !== undefined ? { pageSize } : {}),
    ...(concurrency !== undefined ? { concurrency } : {}),
  };
}
