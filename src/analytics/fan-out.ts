/**
 * `queryEach()`: "these tickers, these datasets", one query per pair, a few at once through one client.
 * Every query's pages go through the client's one adaptive scheduler, so many small queries together keep
 * enough requests in flight without exceeding what the service accepts (and a small one costs two
 * requests: the POST and one GET).
 *
 * Tables are yielded as they complete (not in input order); a finished worker waits for the consumer to
 * take its table before starting another query, so at most `concurrency` tables are held at once. The
 * first failure stops every query in flight and is thrown from the loop; `break` stops them too.
 *
 * @example
 * for await (const { dataset, ticker, table } of queryEach(client, {
 *   datasets: ['web_traffic', 'app_reviews'], tickers: ['nasdaq:aapl', 'nasdaq:msft'],
 * })) console.log(dataset, ticker, table.numRows);
 */
import type { Table } from 'apache-arrow';
import PQueue from 'p-queue';
import type { DatasetClient } from '../client.js';
import { abortReason } from '../core/abortable.js';
import { AbortError } from '../core/errors.js';
import { checkOtherMembers, type RawQueryBody, withTickers } from '../core/raw-body.js';
import { checkKeys, checkNonEmptyArray, checkObject, optionalInteger, optionKeys } from '../core/validate.js';
import type { QueryResult } from '../query/query-result.js';
import { normalizeStreamOptions, STREAM_OPTIONS, type StreamOptions } from '../query/stream-options.js';
import { checkDatasetId, checkTicker } from '../transport/validate.js';

export interface QueryEachOptions {
  /** Dataset ids; every ticker is queried in each. */
  readonly datasets: readonly string[];
  /** Tickers; one query per (dataset, ticker). */
  readonly tickers: readonly string[];
  /**
   * Members of each query's body the spec does not show (`filters`, …), sent with its ticker:
   * `rawBody({ … })`, without `tickers`.
   */
  readonly body?: RawQueryBody;
  /** Queries at once (minimum 1). Their page requests share the client's adaptive limit. @default 8 */
  readonly concurrency?: number;
  /** Each table's stream options (`types`, `format`, …). */
  readonly stream?: Omit<StreamOptions, 'output' | 'signal'>;
  readonly signal?: AbortSignal;
}

export interface QueryEachItem {
  readonly dataset: string;
  readonly ticker: string;
  readonly result: QueryResult;
  readonly table: Table;
}

interface Pair {
  readonly dataset: string;
  readonly ticker: string;
}

const KEYS = optionKeys<QueryEachOptions>({
  datasets: true,
  tickers: true,
  body: true,
  concurrency: true,
  stream: true,
  signal: true,
});
const { output: _output, signal: _signal, ...EACH_STREAM_OPTIONS } = STREAM_OPTIONS;
const STREAM_KEYS = optionKeys<NonNullable<QueryEachOptions['stream']>>(EACH_STREAM_OPTIONS);

function normalize(options: QueryEachOptions): {
  pairs: Pair[];
  concurrency: number;
  body: RawQueryBody | undefined;
} {
  checkKeys(checkObject(options, 'options'), KEYS, 'options of `queryEach()`');
  for (const name of ['datasets', 'tickers'] as const) checkNonEmptyArray(options[name], name);
  const datasets = [...new Set(options.datasets.map((d) => checkDatasetId(d, 'datasets')))];
  const tickers = [...new Set(options.tickers.map((t) => checkTicker(t, 'tickers')))];
  const concurrency = optionalInteger(options.concurrency, 'concurrency', 1, 8);
  const body = checkOtherMembers(options.body);
  normalizeStreamOptions(options.stream ?? {}, STREAM_KEYS, '`queryEach()`', 'stream.');
  return {
    pairs: datasets.flatMap((dataset) => tickers.map((ticker) => ({ dataset, ticker }))),
    concurrency,
    body,
  };
}

export async function* queryEach(
  client: DatasetClient,
  options: QueryEachOptions,
): AsyncGenerator<QueryEachItem, void, undefined> {
  const { pairs, concurrency, body } = normalize(options);
  const controller = new AbortController();
  const user = options.signal;
  const onUserAbort = () => controller.abort(abortReason(user!, 'queryEach'));
  if (user?.aborted) onUserAbort();
  else user?.addEventListener('abort', onUserAbort, { once: true });
  const signal = controller.signal;

  // Finished items wait here with the function that frees their query's slot.
  const ready: { item: QueryEachItem; taken: () => void }[] = [];
  let wake: (() => void) | undefined;
  let failure: { error: unknown } | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  // One task per pair; a task holds its slot until the consumer has taken its table, so at most
  // `concurrency` queries run or wait to be taken at once.
  const queue = new PQueue({ concurrency });
  // Tasks started and not ended: p-queue starts a task synchronously when it dequeues it, so with the
  // queue's size this says exactly when every pair is done.
  let running = 0;
  const stop = (reason: unknown) => {
    controller.abort(reason);
    queue.clear();
  };
  for (const { dataset, ticker } of pairs) {
    void queue.add(async () => {
      if (failure || signal.aborted) return;
      running++;
      try {
        const result = await client.query(dataset, withTickers(body, [ticker]), { signal });
        const table = await result.toTable({ ...options.stream, signal });
        await new Promise<void>((taken) => {
          ready.push({ item: { dataset, ticker, result, table }, taken });
          notify();
        });
      } catch (error) {
        if (!failure) failure = { error };
        stop(error);
      } finally {
        running--;
        notify();
      }
    });
  }
  const finished = () => running === 0 && queue.size === 0;
  try {
    for (;;) {
      const entry = ready.shift();
      if (entry) {
        entry.taken();
        yield entry.item;
        continue;
      }
      if (failure) throw failure.error;
      if (finished()) {
        if (signal.aborted) throw abortReason(signal, 'queryEach');
        return;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  } finally {
    // `break`, a failure or the end: stop what still runs, let waiting workers go (they then stop).
    if (!finished()) stop(new AbortError('queryEach (stopped by its consumer)'));
    for (const entry of ready.splice(0)) entry.taken();
    user?.removeEventListener('abort', onUserAbort);
  }
}
