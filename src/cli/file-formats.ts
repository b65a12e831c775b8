/**
 * Output file formats of `dqs query`, chosen by the file's extension (or `--as`): each maps to a writer
 * from src/output, a Duplex from RecordBatches to bytes.
 */
import { extname } from 'node:path';
import type { Duplex } from 'node:stream';
import { UsageError } from './errors.js';

export type FileFormat = 'arrow' | 'arrows' | 'parquet' | 'csv' | 'jsonl';

export const FILE_FORMATS: readonly FileFormat[] = ['arrow', 'arrows', 'parquet', 'csv', 'jsonl'];

const BY_EXTENSION: Readonly<Record<string, FileFormat>> = {
  '.arrow': 'arrow',
  '.feather': 'arrow', // Feather v2 is the Arrow IPC file format
  '.arrows': 'arrows',
  '.parquet': 'parquet',
  '.csv': 'csv',
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
};

export const LABELS: Readonly<Record<FileFormat, string>> = {
  arrow: 'Arrow IPC file',
  arrows: 'Arrow IPC stream',
  parquet: 'Parquet/zstd',
  csv: 'CSV',
  jsonl: 'JSON Lines',
};

/** `--as` if given, else the extension of `out`; stdout (`-`) defaults to the Arrow IPC stream. */
export function fileFormatOf(out: string, as: FileFormat | undefined): FileFormat {
  if (as) return as;
  if (out === '-') return 'arrows';
  const format = BY_EXTENSION[extname(out).toLowerCase()];
  if (!format) {
    throw new UsageError(
      `cannot tell the output format of ${JSON.stringify(out)} from its extension; use one of ` +
        `${Object.keys(BY_EXTENSION).join(', ')}, or --as ${FILE_FORMATS.join('|')}`,
      'query',
    );
  }
  return format;
}

/**
 * The stages from RecordBatches to the file's bytes, loaded on demand (apache-arrow and the Parquet
 * WebAssembly take a noticeable part of a second to load; `--help` and the listing commands skip that).
 * Arrow IPC gets plain strings instead of the ticker dictionary: the result's dictionary grows, which makes
 * delta dictionaries, and Polars cannot read those. Every writer cuts its own batches (row groups), so
 * the bytes depend on the rows alone, not on how they were read.
 */
export async function writerFor(
  format: FileFormat,
  options: { readonly nullText?: string; readonly batchSize?: number } = {},
): Promise<Duplex[]> {
  const { nullText, batchSize } = options;
  switch (format) {
    case 'arrow':
    case 'arrows': {
      const [{ decodeDictionaries }, { toArrowIpc }] = await Promise.all([
        import('../output/dictionaries.js'),
        import('../output/arrow-ipc.js'),
      ]);
      return [
        decodeDictionaries(),
        toArrowIpc({
          format: format === 'arrow' ? 'file' : 'stream',
          ...(batchSize === undefined ? {} : { batchSize }),
        }),
      ];
    }
    case 'parquet':
      return [(await import('../output/parquet.js')).toParquet()];
    case 'csv':
      return [(await import('../output/csv.js')).toCsv(nullText === undefined ? {} : { nullText })];
    case 'jsonl':
      return [(await import('../output/jsonl.js')).toJsonl()];
  }
}
