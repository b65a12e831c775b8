/**
 * `dqs export <dataset> --out-dir DIR (--ticker T ... | --tickers-file F | --all-tickers)`: one query per
 * ticker, a few at a time through one client, each into its own Parquet partition
 * (`DIR/dataset=<id>/ticker=<ticker>/part-0.parquet`), for engines that read the directory as one table.
 * Resumable: finished partitions are skipped. The work is `exportPartitioned()`'s; this is the command
 * line around it (tickers, progress, summary, exit codes).
 */
import { mkdir, stat } from 'node:fs/promises';
import type {
  PartitionedExportResult,
  PartitionReport,
  PartitionStreamOptions,
} from '../../analytics/partitioned-export.js';
import { kindOf } from '../../core/output-target.js';
import { unknownTickers, unknownTickersMessage } from '../../tickers/coverage.js';
import { checkDatasetId, checkTicker } from '../../transport/validate.js';
import { decoderFromEnv, flag, int, JSON_OPTION, positionals, str, type Values } from '../args.js';
import type { Command } from '../command.js';
import { CACHE_OPTIONS } from '../connection.js';
import { asLocalFault, LocalError, systemReason, UsageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { printJson } from '../print.js';
import { partitionProgress } from '../progress.js';
import { streamFlags } from '../stream-flags.js';
import { bytes, count, duration } from '../text.js';
import { checkTickerArgs, readTickers } from '../tickers.js';
import { cacheNote } from './cache.js';

export const exportCommand: Command = {
  name: 'export',
  summary: 'Export one Parquet file per ticker: a Hive-partitioned dataset for DuckDB, Spark, Polars, Trino.',
  usage: 'dqs export <dataset> --out-dir DIR (--ticker T ... | --tickers-file F | --all-tickers) [options]',
  description:
    'Runs one query per ticker, --concurrency at a time through one connection pool, and writes each result\n' +
    'to DIR/dataset=<dataset>/ticker=<ticker>/part-0.parquet (the ticker percent-encoded as DuckDB writes\n' +
    'partition values: nasdaq:aapl is ticker=nasdaq%3Aaapl), a layout DuckDB, Spark, Trino and Polars read\n' +
    'as one table with a ticker column. A ticker with no rows gets a 0-row file. Each file is written under a\n' +
    'hidden temporary name and renamed when complete, so running the command again skips the finished\n' +
    'partitions and queries only the rest (after Ctrl-C, a failure, or with more tickers).',
  options: {
    ticker: {
      type: 'string',
      multiple: true,
      arg: 'TICKER',
      help: 'A ticker to export, e.g. nasdaq:aapl: one partition each.',
    },
    'tickers-file': {
      type: 'string',
      arg: 'FILE',
      help: 'More tickers, one per line or comma-separated (# comments; - reads stdin).',
    },
    'all-tickers': { type: 'boolean', help: 'Every ticker the dataset lists (`dqs tickers <dataset> ""`).' },
    'out-dir': {
      type: 'string',
      short: 'o',
      arg: 'DIR',
      help: 'The output directory (created if missing); the dataset goes to DIR/dataset=<dataset>/.',
    },
    concurrency: { type: 'string', arg: 'N', help: 'Queries (partitions) at once, 1 to 64 (default 8).' },
    'page-concurrency': {
      type: 'string',
      arg: 'N',
      help: 'Page requests at once per query, 1 to 64. Default: adaptive, one limit shared by all queries.',
    },
    'page-size': { type: 'string', arg: 'N', help: 'Rows per page request (default 10000).' },
    format: {
      type: 'string',
      arg: 'WIRE',
      help: 'Format to read from the service: auto|json|csv|xlsx (auto: table JSON when offered). Same output.',
    },
    overwrite: { type: 'boolean', help: 'Write finished partitions again instead of skipping them.' },
    strict: {
      type: 'boolean',
      help: 'With --all-tickers: exit 6 if the service listed a malformed ticker (skipped, with a warning, without it).',
    },
    'strict-tickers': {
      type: 'boolean',
      help: 'Fail (exit 2) instead of warning when the dataset has no data for a ticker asked for.',
    },
    ...CACHE_OPTIONS,
    json: {
      ...JSON_OPTION.json!,
      help: 'Print a JSON summary on stdout: every partition with its status, rows, bytes, query id.',
    },
  },
  connects: true,
  examples: [
    'dqs export job_listings --ticker nasdaq:aapl --ticker nyse:ibm --out-dir lake',
    'dqs export web_traffic --tickers-file tickers.txt --out-dir lake --concurrency 4',
    'dqs export store_locations --all-tickers --out-dir lake --json > export.json',
    'duckdb -c "SELECT ticker, count(*) FROM read_parquet(\'lake/dataset=job_listings/*/*.parquet\', hive_partitioning = true) GROUP BY ticker"',
  ],
  async run(args, ctx) {
    const [dataset] = positionals('export', args, ['dataset']);
    // Before connecting: a malformed id fails before the embedded emulator starts (and says so).
    checkDatasetId(dataset);
    const v = args.values;
    const outDir = str(v, 'out-dir');
    if (outDir === undefined || outDir === '')
      throw new UsageError('missing --out-dir DIR (e.g. --out-dir lake)', 'export');
    const all = flag(v, 'all-tickers');
    const given = await readTickers(v, ctx.io, 'export');
    if (all && given.length > 0) {
      throw new UsageError(
        '--all-tickers exports every ticker: give it alone, or list the tickers',
        'export',
      );
    }
    if (!all && given.length === 0) {
      throw new UsageError(
        'missing tickers: --ticker T (repeatable), --tickers-file FILE or --all-tickers',
        'export',
      );
    }
    checkTickerArgs(given, 'export');
    const concurrency = int('export', v, 'concurrency', 1, 64);
    const stream = streamOptions(v);
    const overwrite = flag(v, 'overwrite');
    const json = flag(v, 'json');
    await makeOutDir(outDir);

    const started = performance.now();
    const { client } = await ctx.connect();
    const fromCache = cacheNote(client, ctx);
    let malformed = 0;
    let tickers = given;
    if (all) {
      const listed = await client.searchTickers(dataset!, '', { signal: ctx.signal });
      // One malformed id from the service is not worth failing (nor blaming the user for, with exit 2):
      // skipped, counted, and fatal only with --strict.
      tickers = listed.map((t) => t.id).filter((id) => isTicker(id));
      malformed = listed.length - tickers.length;
      if (malformed > 0) {
        const first = listed.find((t) => !isTicker(t.id))!.id;
        ctx.warn(
          `skipped ${count(malformed)} malformed ticker${malformed === 1 ? '' : 's'} the service listed (first: ${JSON.stringify(first)})`,
        );
      }
    }
    // As `dqs query`: a ticker the dataset lacks would be a 0-row partition that looks like success.
    if (!all) await checkGivenTickers(client, dataset!, tickers, flag(v, 'strict-tickers'), ctx);
    if (tickers.length === 0) {
      ctx.info(`${dataset} lists no tickers: nothing to export`);
      if (json) printJson(ctx.io.stdout, summaryJson(undefined, dataset!, 0));
      return ExitCode.ok;
    }
    const [{ exportPartitioned }, progress] = await Promise.all([
      import('../../analytics/partitioned-export.js'),
      partitionProgress(ctx.io.stderr, !ctx.quiet, tickers.length),
    ]);
    const finished: PartitionReport[] = [];
    let result: PartitionedExportResult;
    try {
      result = await exportPartitioned(client, {
        dataset: dataset!,
        tickers,
        outDir,
        ...(concurrency !== undefined ? { concurrency } : {}),
        ...decoderFromEnv(),
        stream,
        overwrite,
        signal: ctx.signal,
        onPartition: (report) => {
          finished.push(report);
          progress.finished(report);
        },
        onProgress: (event) => progress.update(event.ticker, event.rows, event.total),
      });
    } catch (err) {
      progress.stop();
      if (finished.length > 0) {
        ctx.info(
          `${count(finished.length)} of ${count(tickers.length)} partitions are finished in ${outDir}; ` +
            'run the same command again to export the rest',
        );
      }
      // A file system failure while writing (no space, no permission) is a local error, exit code 7.
      throw asLocalFault(err, outDir);
    }
    progress.stop();
    const ms = performance.now() - started;
    if (json) printJson(ctx.io.stdout, summaryJson(result, dataset!, ms));
    ctx.info(`${summaryLine(result, ms)}${fromCache()}`);
    if (malformed > 0 && flag(v, 'strict')) {
      ctx.warn(
        `--strict: ${count(malformed)} malformed ticker${malformed === 1 ? ' was' : 's were'} skipped`,
      );
      return ExitCode.protocol;
    }
    return ExitCode.ok;
  },
};

/**
 * `--out-dir`: a directory (or a symlink to one: files are only ever made inside it, so following it
 * replaces nothing), created when missing. Anything else there is refused with what it is.
 */
async function makeOutDir(outDir: string): Promise<void> {
  const what = await stat(outDir).catch(() => undefined);
  if (what !== undefined && !what.isDirectory()) {
    throw new LocalError(
      `cannot use --out-dir ${outDir}: it is a ${kindOf(what)}, not a directory; give a directory (created if missing)`,
    );
  }
  try {
    await mkdir(outDir, { recursive: true });
  } catch (err) {
    throw new LocalError(`cannot create --out-dir ${outDir}: ${systemReason(err)}`, { cause: err });
  }
}

/**
 * Warns about (or, with --strict-tickers, refuses) tickers the dataset has no data for: one small request
 * per distinct ticker (tickers/coverage.ts), before any partition is written.
 */
async function checkGivenTickers(
  client: Parameters<typeof unknownTickers>[0],
  dataset: string,
  tickers: readonly string[],
  strict: boolean,
  ctx: { info(text: string): void; readonly signal?: AbortSignal | undefined },
): Promise<void> {
  const unknown = await unknownTickers(client, dataset, tickers, { signal: ctx.signal });
  if (unknown.length === 0) return;
  const message = unknownTickersMessage(dataset, unknown, new Set(tickers).size);
  if (strict) throw new UsageError(`${message} (--strict-tickers)`);
  const them = unknown.length === 1 ? 'its partition' : 'their partitions';
  ctx.info(`warning: ${message}: ${them} will have no rows; --strict-tickers makes this an error`);
}

function isTicker(id: unknown): boolean {
  try {
    checkTicker(id);
    return true;
  } catch {
    return false;
  }
}

function streamOptions(v: Values): PartitionStreamOptions {
  return streamFlags('export', v, 'page-concurrency');
}

function summaryLine(result: PartitionedExportResult, ms: number): string {
  const written = result.partitions.filter((p) => p.status === 'written');
  const empty = written.filter((p) => p.rows === 0).length;
  const parts = [
    `${count(result.written)} partition${result.written === 1 ? '' : 's'} written ` +
      `(${count(result.rowsWritten)} rows, ${bytes(result.bytesWritten)}${empty ? `; ${count(empty)} with no rows` : ''})`,
  ];
  if (result.skipped > 0) parts.push(`${count(result.skipped)} skipped (finished by an earlier run)`);
  const truncated = written.filter((p) => p.truncated).map((p) => p.ticker);
  const state =
    truncated.length > 0
      ? `; TRUNCATED at the service's row cap: ${truncated.join(', ')} (narrow those queries to get every row)`
      : '';
  return `exported ${result.dataset} to ${result.root}: ${parts.join(', ')} in ${duration(ms)}${state}`;
}

function summaryJson(result: PartitionedExportResult | undefined, dataset: string, ms: number) {
  return {
    dataset,
    root: result?.root ?? null,
    partitions: result?.partitions.length ?? 0,
    written: result?.written ?? 0,
    skipped: result?.skipped ?? 0,
    rows: result?.rowsWritten ?? 0,
    bytes: result?.bytesWritten ?? 0,
    truncated: result?.partitions.filter((p) => p.truncated).map((p) => p.ticker) ?? [],
    seconds: Math.round(ms) / 1000,
    files: (result?.partitions ?? []).map((p) => ({
      ticker: p.ticker,
      path: p.path,
      status: p.status,
      rows: p.rows,
      bytes: p.bytes,
      truncated: p.truncated ?? null,
      queryId: p.queryId ?? null,
    })),
  };
}
