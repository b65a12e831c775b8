/**
 * Which of a query's tickers the dataset does not carry. The service answers a query on a ticker it has
 * no data for with 0 rows (or silently leaves that ticker out of a list): a typo looks like success. The
 * spec's only way to tell is `GET /datasets/?ticker=T`, the datasets that carry T, so a check costs one
 * request per distinct ticker. That is why it is opt-in in the library (`checkTickers`) and done by the
 * CLI, which talks to a person: a few requests, run a few at a time, against a silent wrong answer.
 */
import PQueue from 'p-queue';
import { InvalidArgumentError } from '../core/errors.js';
import { checkKeys, checkObject, invalid } from '../core/validate.js';
import { CALL_KEYS, type CallOptions, type EndpointClient } from '../transport/endpoints.js';

/** `'warn'`: a process warning (code `DQS_UNKNOWN_TICKERS`) and the query goes on; `'error'`: it is refused. */
export type CheckTickersMode = 'warn' | 'error';

/** Requests at once while checking; the list endpoint is small and cheap. */
const CONCURRENCY = 8;

/**
 * The tickers of `tickers` (deduplicated, in their order) that `GET /datasets/?ticker=` does not list
 * `datasetId` for. When that is all of them, the dataset is asked for too: an unknown dataset fails with
 * its own `NotFoundError` (404) instead.
 */
export async function unknownTickers(
  client: EndpointClient,
  datasetId: string,
  tickers: readonly string[],
  options: CallOptions = {},
): Promise<string[]> {
  checkKeys(checkObject(options, 'options'), CALL_KEYS, 'options of `unknownTickers()`');
  const distinct = [...new Set(tickers)];
  const queue = new PQueue({ concurrency: CONCURRENCY });
  const carried = await Promise.all(
    distinct.map((ticker) =>
      queue.add(async (): Promise<boolean> => {
        try {
          const datasets = await client.listDatasets({ ...options, ticker });
          return datasets.some((d) => d.id === datasetId);
        } catch (err) {
          // A malformed ticker is not asked about: the query's own validation refuses it, naming it as
          // `body.tickers[i]`, which says more than this check could.
          if (err instanceof InvalidArgumentError) return true;
          // The first failure is the answer: the tickers not yet asked about are not asked.
          queue.clear();
          throw err;
        }
      }),
    ),
  );
  const unknown = distinct.filter((_, i) => !carried[i]);
  // A dataset id that does not exist is listed for no ticker either: when no ticker lists it, ask for the
  // dataset itself, so that its 404 is the answer, not a warning that blames every ticker. One request,
  // only then: a dataset listed for any ticker exists.
  if (unknown.length > 0 && unknown.length === distinct.length) await client.getDataset(datasetId, options);
  return unknown;
}

/** Names the `unknown` tickers (of `of` distinct ones asked for) of a query on `datasetId`. */
export function unknownTickersMessage(datasetId: string, unknown: readonly string[], of: number): string {
  const shown =
    unknown.slice(0, 20).join(', ') + (unknown.length > 20 ? `, … (${unknown.length} in all)` : '');
  const which =
    unknown.length === 1 ? 'the ticker' : unknown.length === of ? 'any of the tickers' : 'the tickers';
  return `dataset ${datasetId} has no data for ${which} ${shown} (GET /datasets/?ticker= does not list ${datasetId} for ${unknown.length === 1 ? 'it' : 'them'})`;
}

export function normalizeCheckTickers(value: unknown): CheckTickersMode | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return 'warn';
  if (value === 'warn' || value === 'error') return value;
  throw invalid('checkTickers', "true, false, 'warn' or 'error'", value);
}

/**
 * A query's ticker check as the client runs it: `run()` asks the service (one request per distinct
 * ticker), `report()` acts on the answer. They are apart so that a cached result can `report()` the
 * answer its entry recorded when it was filled, without asking again (cache/result-cache.ts).
 */
export interface TickerCheck {
  readonly run: () => Promise<string[]>;
  /** Warns about, or refuses, the `unknown` tickers; does nothing when there are none. */
  readonly report: (unknown: readonly string[]) => void;
}

/**
 * The library's `checkTickers` for one query, or `undefined` when there is nothing to check: `'warn'`
 * emits a process warning naming the unknown tickers, `'error'` throws an `InvalidArgumentError`
 * (`tickers`); `onUnknown` (the CLI's wording) replaces both.
 */
export function tickerCheck(
  client: EndpointClient,
  datasetId: string,
  tickers: readonly string[] | undefined,
  mode: CheckTickersMode | undefined,
  onUnknown: ((unknown: readonly string[]) => void) | undefined,
  options: CallOptions = {},
): TickerCheck | undefined {
  if (mode === undefined || !tickers?.length) return undefined;
  return {
    run: () => unknownTickers(client, datasetId, tickers, options),
    report(unknown) {
      if (unknown.length === 0) return;
      if (onUnknown) return onUnknown(unknown);
      const message = unknownTickersMessage(datasetId, unknown, new Set(tickers).size);
      if (mode === 'error') throw new InvalidArgumentError('tickers', message);
      process.emitWarning(`${message}: the result has no rows for ${unknown.length === 1 ? 'it' : 'them'}`, {
        code: 'DQS_UNKNOWN_TICKERS',
        detail: `unknown: ${unknown.join(', ')}`,
      });
    },
  };
}
