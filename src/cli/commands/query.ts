import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { descriptorOf, type OutputTarget, openOutputTarget } from '../../core/output-target.js';
import { RowCounter } from '../../output/row-counter.js';
import type { SplitWarning } from '../../query/split.js';
import type { SplitInfo } from '../../query/split-info.js';
import type { StreamOptions } from '../../query/stream-options.js';
import { unknownTickersMessage } from '../../tickers/coverage.js';
import { checkDatasetId } from '../../transport/validate.js';
import { choice, decoderFromEnv, flag, int, JSON_OPTION, positionals, str, type Values } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { CACHE_OPTIONS } from '../connection.js';
import { asLocalFault, LocalError, systemReason, UsageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { FILE_FORMATS, fileFormatOf, LABELS, writerFor } from '../file-formats.js';
import { printJson } from '../print.js';
import { createProgress } from '../progress.js';
import { streamFlags } from '../stream-flags.js';
import { bytes, count, duration } from '../text.js';
import { checkTickerArgs, readTickers } from '../tickers.js';
import { cacheNote } from './cache.js';

export const queryCommand: Command = {
  name: 'query',
  summary: 'Run a query and export the result: .arrow, .arrows, .parquet, .csv, .jsonl, or stdout.',
  usage: 'dqs query <dataset> --out FILE [--ticker TICKER ...] [options]',
  description:
    'Runs a query on a dataset (all of it, or only some tickers), waits for it, and writes every row to\n' +
    'FILE in the format its extension names: .arrow/.feather (Arrow IPC file), .arrows (Arrow IPC stream),\n' +
    '.parquet (zstd), .csv, .jsonl/.ndjson. `--out -` writes to stdout (Arrow IPC stream unless --as says\n' +
    'otherwise), for piping into another tool. The file appears under its name only once complete: it is\n' +
    'written to a hidden temporary file beside it, flushed and renamed. Progress on stderr when it is a\n' +
    'terminal; a summary at the end.',
  options: {
    ticker: {
      type: 'string',
      multiple: true,
      arg: 'TICKER',
      help: 'Only this ticker, e.g. nasdaq:aapl. Without any: the whole dataset.',
    },
    'tickers-file': {
      type: 'string',
      arg: 'FILE',
      help: 'More tickers, one per line or comma-separated (# comments; - reads stdin).',
    },
    out: { type: 'string', short: 'o', arg: 'FILE', help: 'The output file, or - for stdout.' },
    as: {
      type: 'string',
      arg: 'FORMAT',
      help: `Output format whatever the extension: ${FILE_FORMATS.join('|')}.`,
    },
    format: {
      type: 'string',
      arg: 'WIRE',
      help: 'Format to read from the service: auto|json|csv|xlsx (auto: table JSON when offered). Same output.',
    },
    'page-size': { type: 'string', arg: 'N', help: 'Rows per page request (default 10000).' },
    concurrency: {
      type: 'string',
      arg: 'N',
      help: 'Page requests at once, 1 to 64 (default: adaptive, measured as it reads).',
    },
    'batch-size': {
      type: 'string',
      arg: 'N',
      help: 'Arrow IPC output only: rows per record batch in the file (default 65536), whatever the page size.',
    },
    'null-text': {
      type: 'string',
      arg: 'TEXT',
      help: 'CSV only: write nulls as TEXT (e.g. NULL) for readers that cannot tell "" from an empty field.',
    },
    'split-truncated': {
      type: 'boolean',
      help: 'When the service truncates the result of the tickers at its row cap, split the list in halves until every part fits, and write every part (one file, parts in list order).',
    },
    'strict-tickers': {
      type: 'boolean',
      help: 'Fail (exit 2) instead of warning when the dataset has no data for a ticker asked for.',
    },
    ...CACHE_OPTIONS,
    json: {
      ...JSON_OPTION.json!,
      help: 'Print a JSON summary on stdout (query id, rows, file, bytes); not with --out -.',
    },
  },
  connects: true,
  examples: [
    'dqs query job_listings --ticker nasdaq:aapl --out aapl.parquet',
    'dqs query job_listings --ticker nasdaq:aapl --ticker nyse:wmt --out jobs.csv',
    'dqs query web_traffic --tickers-file tickers.txt --out - --as csv | duckdb -c "SELECT count(*) FROM read_csv(\'/dev/stdin\')"',
    'dqs query job_listings --ticker nasdaq:aapl --out - --as jsonl | jq .title',
    'dqs query job_listings --tickers-file sp500.txt --split-truncated --out jobs.parquet',
  ],
  async run(args, ctx) {
    const [dataset] = positionals('query', args, ['dataset']);
    // Before connecting: a malformed id fails before the embedded emulator starts (and says so).
    checkDatasetId(dataset);
    const v = args.values;
    const out = str(v, 'out');
    if (out === undefined || out === '') {
      throw new UsageError('missing --out FILE (e.g. --out aapl.parquet, or --out - for stdout)', 'query');
    }
    // `/dev/stdout` is stdout itself: the same checks and the same stream as `-`.
    const toStdout = out === '-' || descriptorOf(out) === 1;
    const format = fileFormatOf(toStdout ? '-' : out, choice('query', v, 'as', FILE_FORMATS));
    const nullText = str(v, 'null-text');
    if (nullText !== undefined && (format !== 'csv' || nullText === '')) {
      throw new UsageError(
        '--null-text TEXT is for CSV output (--as csv or a .csv file), with a non-empty TEXT',
        'query',
      );
    }
    const batchSize = int('query', v, 'batch-size', 1);
    if (batchSize !== undefined && format !== 'arrow' && format !== 'arrows') {
      throw new UsageError(
        '--batch-size N is for Arrow IPC output (.arrow, .arrows, --out -); Parquet row groups are 65536 rows',
        'query',
      );
    }
    const json = flag(v, 'json');
    if (json && toStdout) {
      throw new UsageError(
        '--json prints a summary on stdout, where --out - writes the data: use one',
        'query',
      );
    }
    if (toStdout && ctx.io.stdout.isTTY && format !== 'csv' && format !== 'jsonl') {
      throw new UsageError(
        'refusing to write binary Arrow/Parquet to a terminal: pipe it, or use --as jsonl',
        'query',
      );
    }
    const tickers = await readTickers(v, ctx.io, 'query');
    checkTickerArgs(tickers, 'query');
    const options = streamOptions(v);
    const split = flag(v, 'split-truncated');

    const started = performance.now();
    // Created before anything is requested: an unwritable path fails at once, not after the download.
    const target = toStdout ? undefined : await createTarget(out);
    try {
      const { client } = await ctx.connect();
      const fromCache = cacheNote(client, ctx);
      const [stages, progress] = await Promise.all([
        writerFor(format, {
          ...(nullText === undefined ? {} : { nullText }),
          ...(batchSize === undefined ? {} : { batchSize }),
        }),
        createProgress(ctx.io.stderr, !ctx.quiet),
      ]);
      const stream = client.stream(dataset!, tickers.length ? { tickers } : {}, {
        ...options,
        signal: ctx.signal,
        // Inside the query, so that a cache hit answers it from its entry instead of asking again.
        checkTickers: 'warn',
        onUnknownTickers: unknownTickersReport(dataset!, tickers, flag(v, 'strict-tickers'), ctx),
        ...(split ? { split, onSplitWarning: (w: SplitWarning) => ctx.info(splitWarningText(w)) } : {}),
      });
      let truncated = false;
      let pages = 0;
      stream.once('schema', () => {
        const source = stream.source;
        ctx.debug(`query ${source?.id} complete: ${source?.total} rows, truncated: ${source?.truncated}`);
        progress.start(source?.total ?? 0);
      });
      stream.on('progress', (e) => {
        pages = e.pages;
      });
      stream.once('truncated', () => {
        truncated = true;
      });
      let parts: SplitInfo['parts'] | undefined;
      stream.once('split', (info: SplitInfo) => {
        parts = info.parts;
        ctx.debug(`split into ${info.parts.length} parts: ${info.parts.map(partText).join('; ')}`);
      });
      // Rows are counted as they reach the writer: what the file holds, whatever the stream reports.
      const rowCounter = new RowCounter((rows) =>
        progress.update(rows, Math.max(pages, stream.pagesStarted)),
      );
      const counter = new ByteCounter();
      try {
        await pipeline([stream, rowCounter, ...stages, counter, target?.stream ?? ctx.io.stdout], {
          signal: ctx.signal,
        });
      } catch (err) {
        throw asLocalFault(err, target ? out : 'stdout');
      } finally {
        progress.stop();
      }
      const rows = rowCounter.rows;
      const size = target ? await commitTarget(target) : counter.bytes;
      const ms = performance.now() - started;
      const source = stream.source;
      if (json) {
        printJson(ctx.io.stdout, {
          dataset,
          queryId: source?.id ?? null,
          tickers,
          rows,
          total: source?.total ?? rows,
          truncated,
          ...(split ? { parts: parts ?? null } : {}),
          file: out,
          format,
          bytes: size,
          seconds: Math.round(ms) / 1000,
        });
      }
      const where = target ? out : 'stdout';
      const state = stateText(truncated, parts, source?.total ?? rows, tickers.length > 0);
      ctx.info(
        `wrote ${count(rows)} rows to ${where} (${LABELS[format]}, ${bytes(size)}) in ${duration(ms)}; ${state}${fromCache()}`,
      );
      return ExitCode.ok;
    } catch (err) {
      await target?.abort();
      throw err;
    }
  },
};

/**
 * The service answers a ticker the dataset lacks with no rows, so a typo (`nyse:ibm` in job_listings)
 * would look like success: say so on stderr, naming them, or refuse with --strict-tickers. The library
 * asks (one small request per distinct ticker, tickers/coverage.ts) before creating the query; on a
 * cache hit the entry's record of the first run's answer is reported instead (docs/cache.md).
 */
function unknownTickersReport(
  dataset: string,
  tickers: readonly string[],
  strict: boolean,
  ctx: CommandContext,
): (unknown: readonly string[]) => void {
  return (unknown) => {
    const message = unknownTickersMessage(dataset, unknown, new Set(tickers).size);
    if (strict) throw new UsageError(`${message} (--strict-tickers)`);
    const them = unknown.length === 1 ? 'it' : 'them';
    ctx.info(
      `warning: ${message}: the file will have no rows for ${them}; --strict-tickers makes this an error`,
    );
  };
}

/** How the file ends: complete, or truncated, and then what could still be done. */
function stateText(
  truncated: boolean,
  parts: SplitInfo['parts'] | undefined,
  total: number,
  hasTickers: boolean,
): string {
  const inParts = parts ? ` (read in ${parts.length} parts of ${count(total)} rows in all)` : '';
  if (!truncated) return `complete${inParts}`;
  if (parts) {
    const over = parts.filter((p) => p.truncated).flatMap((p) => p.tickers);
    return `TRUNCATED${inParts}: ${over.join(', ')} alone ${over.length === 1 ? 'passes' : 'each pass'} the service's row cap, every other part is complete`;
  }
  const hint = hasTickers
    ? '--split-truncated reads every row in parts that fit'
    : 'narrow the query with --ticker (then --split-truncated reads every row in parts)';
  return `TRUNCATED at the service's row cap (${count(total)} rows): ${hint}`;
}

function partText(part: SplitInfo['parts'][number]): string {
  return `${part.tickers.join(',')}: ${count(part.total)} rows${part.truncated ? ' (TRUNCATED)' : ''}`;
}

/** The library's split warnings, in the CLI's words (options, not `tickers`). */
function splitWarningText(warning: SplitWarning): string {
  if (warning.code === 'DQS_SPLIT_NO_TICKERS') {
    return `warning: the result of ${warning.datasetId} is truncated at ${count(warning.cap)} rows and --split-truncated cannot split it: the service filters a query by tickers only, and this query names none; pass --ticker or --tickers-file to read every row in parts that fit`;
  }
  return `warning: ${warning.message}`;
}

/** What --out names, opened by the rules of core/output-target (a file, a FIFO, a device...). */
async function createTarget(out: string): Promise<OutputTarget> {
  try {
    return await openOutputTarget(out);
  } catch (err) {
    throw new LocalError(`cannot create ${out}: ${systemReason(err)}`, { cause: err });
  }
}

async function commitTarget(target: OutputTarget): Promise<number> {
  try {
    return await target.commit();
  } catch (err) {
    throw new LocalError(`cannot write ${target.path}: ${systemReason(err)}`, { cause: err });
  }
}

function streamOptions(v: Values): StreamOptions {
  return { ...streamFlags('query', v, 'concurrency'), ...decoderFromEnv() };
}

/** Passes bytes through and counts them: the size of what went to stdout. */
class ByteCounter extends Transform {
  bytes = 0;
  override _transform(
    chunk: Buffer,
    _encoding: BufferEncoding,
    callback: (e?: Error | null, d?: Buffer) => void,
  ) {
    this.bytes += chunk.length;
    callback(null, chunk);
  }
}
